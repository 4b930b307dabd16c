"""Key specifications and per-key flags (COMMAND INFO's key specs, COMMAND
GETKEYSANDFLAGS) compared with a redis-server started beside the server under
test, for every command both have."""

import contextlib
import shutil
import socket
import subprocess
import time

import pytest
import redis

from conftest import free_port


@contextlib.contextmanager
def reference_redis():
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.time() > deadline:
                    raise RuntimeError("redis-server did not start")
                time.sleep(0.02)
        cl = redis.Redis(host="127.0.0.1", port=port, decode_responses=True, protocol=3)
        cl.response_callbacks.pop("COMMAND", None)
        yield cl
        cl.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def ref():
    with reference_redis() as cl:
        yield cl


@pytest.fixture
def k3(server):
    cl = server.client(protocol=3)
    cl.response_callbacks.pop("COMMAND", None)
    yield cl
    cl.close()


def command_names(cl):
    return cl.execute_command("COMMAND", "LIST")


def test_key_specs_match_redis_for_every_shared_command(k3, ref):
    ours = set(command_names(k3))
    theirs = set(command_names(ref))
    shared = sorted(ours & theirs)
    assert "set" in shared and "lmove" in shared
    mismatched = []
    for name in shared:
        (mine,) = k3.execute_command("COMMAND", "INFO", name)
        (want,) = ref.execute_command("COMMAND", "INFO", name)
        if mine[8] != want[8]:
            mismatched.append(name)
    assert mismatched == []


def test_getkeysandflags_examples(server):
    r = server.client()
    r.response_callbacks.pop("COMMAND", None)
    assert r.execute_command("COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v") == [["k", ["OW", "update"]]]
    assert r.execute_command("COMMAND", "GETKEYSANDFLAGS", "SET", "k", "v", "GET") == [
        ["k", ["RW", "access", "update"]]
    ]
    assert r.execute_command("COMMAND", "GETKEYSANDFLAGS", "LMOVE", "a", "b", "LEFT", "RIGHT") == [
        ["a", ["RW", "access", "delete"]],
        ["b", ["RW", "insert"]],
    ]
    r.close()


INVOCATIONS = [
    "get k", "set k v", "set k v get", "set k v ex 10 get", "append k v", "getdel k", "getex k persist",
    "mset a 1 b 2", "msetnx a 1 b 2", "mget a b c", "incr k", "decrby k 2", "incrbyfloat k 1.5",
    "setrange k 0 v", "getrange k 0 1", "strlen k", "lcs a b", "setnx k v", "setex k 1 v", "psetex k 1 v",
    "bitcount k", "bitpos k 1", "bitop and d a b", "bitfield k get u8 0", "bitfield k set u8 0 1",
    "bitfield k incrby u8 0 1", "bitfield_ro k get u8 0", "getbit k 0", "setbit k 0 1",
    "del a b", "unlink a b", "exists a b", "touch a b", "type k", "ttl k", "pttl k", "expire k 1",
    "pexpire k 1", "expireat k 1", "persist k", "expiretime k", "rename a b", "renamenx a b",
    "copy a b", "move k 1", "dump k", "restore k 0 x", "object encoding k", "memory usage k",
    "lpush k a", "rpush k a", "lpushx k a", "lpop k", "rpop k", "llen k", "lrange k 0 1", "lindex k 0",
    "lset k 0 v", "linsert k before a b", "lrem k 0 a", "ltrim k 0 1", "lpos k a", "rpoplpush a b",
    "lmove a b left right", "lmpop 2 a b left", "blpop a b 0", "brpop a b 0", "blmove a b left right 0",
    "brpoplpush a b 0", "blmpop 0 2 a b left", "hset h f v", "hget h f", "hmget h f g", "hdel h f",
    "hgetall h", "hincrby h f 1", "hlen h", "hexists h f", "hrandfield h", "hscan h 0", "hsetnx h f v",
    "sadd s a", "srem s a", "smembers s", "sismember s a", "smismember s a b", "scard s", "spop s",
    "srandmember s", "smove a b m", "sinter a b", "sintercard 2 a b", "sinterstore d a b",
    "sunion a b", "sunionstore d a b", "sdiff a b", "sdiffstore d a b", "sscan s 0",
    "zadd z 1 a", "zincrby z 1 a", "zrem z a", "zscore z a", "zmscore z a", "zrank z a", "zcard z",
    "zcount z 0 1", "zrange z 0 1", "zrangestore d z 0 1", "zrangebyscore z 0 1", "zpopmin z",
    "zmpop 2 a b min", "bzpopmin a b 0", "bzmpop 0 2 a b min", "zunionstore d 2 a b",
    "zinterstore d 2 a b", "zdiffstore d 2 a b", "zunion 2 a b", "zinter 2 a b", "zdiff 2 a b",
    "zintercard 2 a b", "zrandmember z", "zscan z 0", "zremrangebyrank z 0 1", "zlexcount z - +",
    "watch a b", "pfadd k a", "sort k", "sort_ro k",
]


def test_getkeysandflags_match_redis(k3, ref):
    ours = set(command_names(k3))
    differ = []
    checked = 0
    for line in INVOCATIONS:
        argv = line.split()
        if argv[0] not in ours:
            continue
        checked += 1
        want = ref.execute_command("COMMAND", "GETKEYSANDFLAGS", *argv)
        got = k3.execute_command("COMMAND", "GETKEYSANDFLAGS", *argv)
        if got != want:
            differ.append((line, got, want))
    assert checked > 50
    assert differ == []

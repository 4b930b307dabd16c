"""Persistence end to end: RDB snapshots (SAVE, BGSAVE, SHUTDOWN SAVE, DEBUG
RELOAD), the append-only file under each fsync policy, BGREWRITEAOF and its
multi-part directory, loading at start-up, damaged files, and the reference
files written by Redis 7.0.15. Every test runs the same way against Debian's
redis-server (KEEL_TEST_AGAINST=redis)."""

import json
import os
import shutil
import signal
import threading
import time

import pytest
import redis

from conftest import AGAINST_REDIS, ROOT, Server

SHARED = os.environ.get("KEEL_SHARED_DIR", os.path.join(ROOT, "..", "shared"))
FILES = os.path.join(SHARED, "reference", "files")


def need(path):
    if not os.path.exists(path):
        if os.environ.get("CI"):
            pytest.fail(f"reference file missing under CI: {path}")
        pytest.skip(f"reference file missing: {path}")
    return path


def info(r, field):
    return r.info("persistence")[field]


def wait_for(pred, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached in time")


def fill(r):
    """One key of each type and encoding, some with a TTL."""
    r.set("s", "hello")
    r.set("n", 12345)
    r.set("big", "x" * 5000)
    r.set("ttl", "v", ex=1000)
    r.hset("h", mapping={"f1": "v1", "f2": "v2"})
    r.hset("hbig", mapping={f"f{i}": f"v{i}" for i in range(600)})
    r.sadd("si", 1, 2, 3)
    r.sadd("ss", "a", "b", "c")
    r.rpush("l", *[f"e{i}" for i in range(300)])
    r.zadd("z", {"m1": 1.5, "m2": -2})
    r.zadd("zbig", {f"m{i}": i for i in range(200)})
    r.select(3)
    r.set("db3", "three")
    r.select(0)


def snapshot(r):
    """Every key of db 0 and db 3 with its type and content."""
    out = {}
    for db in (0, 3):
        r.select(db)
        for k in r.keys("*"):
            t = r.type(k)
            if t == "string":
                v = r.get(k)
            elif t == "hash":
                v = sorted(r.hgetall(k).items())
            elif t == "set":
                v = sorted(r.smembers(k))
            elif t == "list":
                v = r.lrange(k, 0, -1)
            elif t == "zset":
                v = r.zrange(k, 0, -1, withscores=True)
            else:
                v = None
            out[(db, k)] = (t, v, r.ttl(k) > 0)
    r.select(0)
    return out


def raw(s, *args):
    """A reply as the server sent it (redis-py's callbacks turn some into bools)."""
    c = redis.Connection(host="127.0.0.1", port=s.port, decode_responses=True)
    try:
        c.send_command(*args)
        return c.read_response()
    finally:
        c.disconnect()


def fails_to_start(*args):
    """Start a server expected to refuse its files: its exit status and output.
    (Servers listen before loading, so a connection alone proves nothing.)"""
    import conftest
    import subprocess
    port = conftest.free_port()
    if AGAINST_REDIS:
        argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", *args]
    else:
        argv = [conftest.BINARY, "--port", str(port), "--bind", "127.0.0.1", "--save", "", *args]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def restart(s, *args):
    s.stop()
    return Server(*args)


def test_save_then_restart_loads_every_type(tmp_path):
    args = ("--dir", str(tmp_path), "--dbfilename", "snap.rdb")
    s = Server(*args)
    try:
        r = s.client()
        fill(r)
        before = snapshot(r)
        last = r.lastsave()
        time.sleep(1.1)
        assert r.save() is True
        assert r.lastsave() > last
        assert info(r, "rdb_changes_since_last_save") == 0
        assert os.path.exists(tmp_path / "snap.rdb")
        s = restart(s, *args)
        r = s.client()
        assert snapshot(r) == before
        assert 990 < r.ttl("ttl") <= 1000
        assert r.object("encoding", "h") == "listpack"
        assert r.object("encoding", "hbig") == "hashtable"
        assert r.object("encoding", "si") == "intset"
    finally:
        s.stop()


def test_bgsave_reports_in_info_and_restarts(tmp_path):
    args = ("--dir", str(tmp_path))
    s = Server(*args)
    try:
        r = s.client()
        fill(r)
        before = snapshot(r)
        assert info(r, "rdb_changes_since_last_save") > 0
        assert raw(s, "BGSAVE") == "Background saving started"
        wait_for(lambda: info(r, "rdb_bgsave_in_progress") == 0)
        assert info(r, "rdb_last_bgsave_status") == "ok"
        assert info(r, "rdb_changes_since_last_save") == 0
        with pytest.raises(redis.ResponseError, match="syntax error"):
            raw(s, "BGSAVE", "NOW")
        s = restart(s, *args)
        assert snapshot(s.client()) == before
    finally:
        s.stop()


def test_shutdown_save_and_debug_reload(tmp_path):
    args = ("--dir", str(tmp_path))
    s = Server(*args)
    try:
        r = s.client()
        fill(r)
        before = snapshot(r)
        assert r.execute_command("DEBUG", "RELOAD") == "OK"
        assert snapshot(r) == before
        os.remove(tmp_path / "dump.rdb")
        with pytest.raises(redis.ConnectionError):
            r.execute_command("SHUTDOWN", "SAVE")
        s.proc.wait(timeout=10)
        assert os.path.exists(tmp_path / "dump.rdb")
        s = restart(s, *args)
        assert snapshot(s.client()) == before
    finally:
        s.stop()


def test_sigterm_saves_when_save_points_are_set(tmp_path):
    args = ("--dir", str(tmp_path), "--save", "3600 1")
    s = Server(*args)
    try:
        r = s.client()
        r.set("k", "v")
        s.proc.send_signal(signal.SIGTERM)
        s.proc.wait(timeout=10)
        assert os.path.exists(tmp_path / "dump.rdb")
        s = Server(*args)
        assert s.client().get("k") == "v"
    finally:
        s.stop()


@pytest.mark.parametrize("policy", ["always", "everysec", "no"])
def test_aof_survives_kill(tmp_path, policy):
    args = ("--dir", str(tmp_path), "--appendonly", "yes", "--appendfsync", policy)
    s = Server(*args)
    try:
        r = s.client()
        fill(r)
        r.incrbyfloat("f", 1.5)
        r.expire("s", 5000)
        with r.pipeline(transaction=True) as p:
            p.set("tx1", "a").set("tx2", "b").execute()
        before = snapshot(r)
        assert info(r, "aof_enabled") == 1
        # No pause: every policy writes the log before it replies, so killing
        # the process (not the machine) loses no acknowledged write.
        s.proc.kill()
        s.proc.wait()
        s = Server(*args)
        r = s.client()
        assert snapshot(r) == before
        assert 4900 < r.ttl("s") <= 5000
    finally:
        s.stop()


@pytest.mark.parametrize("policy", ["everysec", "no"])
def test_acknowledged_writes_from_many_clients_survive_kill(tmp_path, policy):
    """Each reply leaves only after its write is in the file, whichever
    connection wrote it; a read's reply only after the writes it saw."""
    args = ("--dir", str(tmp_path), "--appendonly", "yes", "--appendfsync", policy)
    s = Server(*args)
    acked = {}
    try:
        clients = [s.client() for _ in range(4)]

        def writer(i):
            c = clients[i]
            for n in range(300):
                c.set(f"w{i}", n)
                acked[i] = n

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seen = clients[0].get("w3")
        s.proc.kill()
        s.proc.wait()
        s = Server(*args)
        r = s.client()
        for i in range(4):
            assert r.get(f"w{i}") == str(acked[i])
        assert r.get("w3") == seen
    finally:
        s.stop()


def manifest(tmp_path):
    text = (tmp_path / "appendonlydir" / "appendonly.aof.manifest").read_text()
    return [line.split() for line in text.splitlines() if line.strip()]


def test_bgrewriteaof_keeps_everything(tmp_path):
    args = ("--dir", str(tmp_path), "--appendonly", "yes", "--appendfsync", "always")
    s = Server(*args)
    try:
        r = s.client()
        fill(r)
        for i in range(500):
            r.incr("counter")
        assert raw(s, "BGREWRITEAOF") == "Background append only file rewriting started"
        r.set("during", "rewrite")
        wait_for(lambda: info(r, "aof_rewrite_in_progress") == 0)
        assert info(r, "aof_last_bgrewrite_status") == "ok"
        r.set("after", "rewrite")
        before = snapshot(r)
        kinds = [line[5] for line in manifest(tmp_path)]
        assert kinds == ["b", "i"]
        base = manifest(tmp_path)[0][1]
        assert base.endswith(".base.rdb")
        s.proc.kill()
        s.proc.wait()
        s = Server(*args)
        assert snapshot(s.client()) == before
        assert s.client().get("counter") == "500"
    finally:
        s.stop()


def test_config_set_appendonly_writes_a_base_first(tmp_path):
    args = ("--dir", str(tmp_path))
    s = Server(*args)
    try:
        r = s.client()
        fill(r)
        assert r.config_set("appendonly", "yes")
        wait_for(lambda: info(r, "aof_rewrite_in_progress") == 0
                 and info(r, "aof_rewrite_scheduled") == 0
                 and os.path.exists(tmp_path / "appendonlydir" / "appendonly.aof.manifest")
                 and any(line[5] == "b" for line in manifest(tmp_path)))
        r.set("later", "1")
        before = snapshot(r)
        time.sleep(1.2)
        s.proc.kill()
        s.proc.wait()
        s = Server(*args, "--appendonly", "yes")
        assert snapshot(s.client()) == before
    finally:
        s.stop()


def test_truncated_aof_tail(tmp_path):
    args = ("--dir", str(tmp_path), "--appendonly", "yes", "--appendfsync", "always")
    s = Server(*args)
    try:
        r = s.client()
        r.set("a", "1")
        r.set("b", "2")
        s.proc.kill()
        s.proc.wait()
        incr = [line[1] for line in manifest(tmp_path) if line[5] == "i"][-1]
        with open(tmp_path / "appendonlydir" / incr, "ab") as f:
            f.write(b"*3\r\n$3\r\nSET\r\n$1\r\nc\r\n$1")
        fails_to_start(*args, "--aof-load-truncated", "no")
        s = Server(*args)
        r = s.client()
        assert r.mget("a", "b", "c") == ["1", "2", None]
        r.set("c", "3")
        s.proc.kill()
        s.proc.wait()
        s = Server(*args)
        assert s.client().mget("a", "b", "c") == ["1", "2", "3"]
    finally:
        s.stop()


def test_corrupt_aof_stops_start_up(tmp_path):
    args = ("--dir", str(tmp_path), "--appendonly", "yes")
    s = Server(*args)
    try:
        s.client().set("a", "1")
        s.client().set("b", "2")
        time.sleep(1.2)
        s.proc.kill()
        s.proc.wait()
        incr = [line[1] for line in manifest(tmp_path) if line[5] == "i"][-1]
        path = tmp_path / "appendonlydir" / incr
        data = path.read_bytes()
        cut = data.index(b"$1\r\na")
        path.write_bytes(data[:cut] + b"!!garbage" + data[cut:])
        out = fails_to_start(*args)
        assert "Bad file format reading the append only file" in out, out
    finally:
        s.stop()


def test_reference_multipart_aof_loads(tmp_path):
    src = need(os.path.join(FILES, "redis-7.0.15-multipart-aof"))
    shutil.copytree(src, tmp_path / "appendonlydir")
    for f in (tmp_path / "appendonlydir").iterdir():
        os.chmod(f, 0o644)
    s = Server("--dir", str(tmp_path), "--appendonly", "yes")
    try:
        r = s.client()
        a_expires_ms = 1795697382551  # 2026-11-26 09:03 UTC: the file's TTL on "a"
        if time.time() * 1000 < a_expires_ms - 60_000:
            assert r.get("a") == "2"
            assert r.pexpiretime("a") == a_expires_ms
        elif time.time() * 1000 > a_expires_ms + 60_000:
            assert r.get("a") is None
        assert r.hgetall("h") == {"f": "v", "g": "w"}
        assert r.exists("l") == 0
        assert r.smembers("s") == {"1", "2", "3"}
        assert r.zrange("z", 0, -1, withscores=True) == [("m", 1.0), ("n", 2.0)]
        e_expires = 1795597382  # 2026-11-25 09:03 UTC, approximately
        if time.time() < e_expires - 60:
            assert r.get("e") == "v"
        elif time.time() > e_expires + 60:
            assert r.get("e") is None
        assert r.get("f") == "1.5"
        assert r.get("after") == "rewrite"
        assert r.mget("tx1", "tx2") == ["a", "b"]
        assert r.get("db2key") == "v"
    finally:
        s.stop()


def test_reference_core_rdb_loads(tmp_path):
    src = need(os.path.join(FILES, "redis-7.0.15-core.rdb"))
    expected = json.load(open(need(os.path.join(FILES, "redis-7.0.15-core.json"))))
    shutil.copy(src, tmp_path / "dump.rdb")
    os.chmod(tmp_path / "dump.rdb", 0o644)
    s = Server("--dir", str(tmp_path))
    try:
        r = s.client(decode_responses=False)
        now_ms = time.time() * 1000
        keys = expected["keys"] if "keys" in expected else expected
        live = 0
        for name, doc in keys.items():
            db, key = name.split("/", 1)
            r.select(int(db))
            exp = doc["expire_at_ms"]
            if exp is not None and exp < now_ms:
                assert r.exists(key) == 0, name
                continue
            live += 1
            assert r.type(key).decode() == doc["type"], name
            if doc["type"] == "string":
                assert r.get(key).hex() == doc["value_hex"], name
        assert live > 400
    finally:
        s.stop()


def test_rdb_of_keel_loads_in_the_other_server(tmp_path):
    """Keel's dump loads into Redis and Redis's into Keel (needs both)."""
    if AGAINST_REDIS:
        pytest.skip("checks Keel's file against redis-server; meaningless against Redis itself")
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed")
    s = Server("--dir", str(tmp_path))
    try:
        r = s.client()
        fill(r)
        before = snapshot(r)
        assert r.save()
    finally:
        s.stop()
    import subprocess
    chk = subprocess.run(["redis-check-rdb", str(tmp_path / "dump.rdb")], capture_output=True, text=True)
    assert chk.returncode == 0, chk.stdout + chk.stderr
    import conftest
    conftest.AGAINST_REDIS = True
    try:
        rs = Server("--dir", str(tmp_path), "--save", "")
    finally:
        conftest.AGAINST_REDIS = False
    try:
        assert snapshot(rs.client()) == before
        rs.client().set("fromredis", "yes")
        assert rs.client().save()
    finally:
        rs.stop()
    s = Server("--dir", str(tmp_path))
    try:
        assert s.client().get("fromredis") == "yes"
        after = snapshot(s.client())
        after.pop((0, "fromredis"))
        assert after == before
    finally:
        s.stop()


def module_rdb(type_name, key=b"doc"):
    """An RDB file holding one key of the module type `type_name` (9 characters,
    encoding version 0) with an empty module payload."""
    charset = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    module_id = 0
    for c in type_name:
        module_id = (module_id << 6) | charset.index(c)
    module_id <<= 10
    return (
        b"REDIS0010"
        + b"\xfe\x00"  # SELECTDB 0
        + b"\x07"  # a module value, version 2 of the type byte
        + bytes([len(key)]) + key
        + b"\x81" + module_id.to_bytes(8, "big")  # the module id, as a 64-bit length
        + b"\x00"  # the module data's end opcode
        + b"\xff" + bytes(8)  # EOF, no checksum
    )


def test_a_module_type_keel_lacks_stops_start_up_naming_it(tmp_path):
    """A key of a module Keel does not serve (here RedisJSON's) makes Keel refuse to
    start, naming the type, rather than dropping the key."""
    if AGAINST_REDIS:
        pytest.skip("Keel's own refusal; redis-server here has no such module")
    (tmp_path / "dump.rdb").write_bytes(module_rdb(b"ReJSON-RL"))
    out = fails_to_start("--dir", str(tmp_path))
    assert "module type ReJSON-RL is not supported by Keel yet (RedisJSON documents)" in out, out


def test_corrupt_rdb_stops_start_up_with_the_offset(tmp_path):
    s = Server("--dir", str(tmp_path))
    try:
        r = s.client()
        fill(r)
        assert r.save()
    finally:
        s.stop()
    data = bytearray((tmp_path / "dump.rdb").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "dump.rdb").write_bytes(bytes(data))
    out = fails_to_start("--dir", str(tmp_path))
    if not AGAINST_REDIS:
        assert "dump.rdb" in out and "offset" in out, out
    (tmp_path / "dump.rdb").write_bytes(bytes(data[: len(data) // 3]))
    fails_to_start("--dir", str(tmp_path))


def test_failed_bgsave_stops_writes_until_told_otherwise(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    s = Server("--dir", str(gone), "--save", "3600 1")
    try:
        r = s.client()
        r.set("k", "v")
        gone.rmdir()
        assert raw(s, "BGSAVE") == "Background saving started"
        wait_for(lambda: info(r, "rdb_bgsave_in_progress") == 0)
        assert info(r, "rdb_last_bgsave_status") == "err"
        with pytest.raises(redis.ResponseError) as e:
            r.set("k", "w")
        assert str(e.value).startswith("MISCONF "), str(e.value)
        assert r.get("k") == "v"
        r.config_set("stop-writes-on-bgsave-error", "no")
        assert r.set("k", "w")
    finally:
        s.stop()


def test_single_file_aof_with_rdb_preamble_is_upgraded(tmp_path):
    """An appendonly.aof from before Redis 7: an RDB preamble, then commands.
    It loads whole, and the server carries on with a multi-part directory."""
    s = Server("--dir", str(tmp_path))
    try:
        r = s.client()
        fill(r)
        assert r.save()
    finally:
        s.stop()
    preamble = (tmp_path / "dump.rdb").read_bytes()
    os.remove(tmp_path / "dump.rdb")
    tail = b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$4\r\ntail\r\n$3\r\nyes\r\n"
    (tmp_path / "appendonly.aof").write_bytes(preamble + tail)
    s = Server("--dir", str(tmp_path), "--appendonly", "yes")
    try:
        r = s.client()
        assert r.get("tail") == "yes"
        assert r.get("s") == "hello"
        assert r.lrange("l", 0, 2) == ["e0", "e1", "e2"]
        r.set("after", "upgrade")
        time.sleep(1.2)
        assert os.path.exists(tmp_path / "appendonlydir" / "appendonly.aof.manifest")
    finally:
        s.proc.kill()
        s.proc.wait()
    s = Server("--dir", str(tmp_path), "--appendonly", "yes")
    try:
        r = s.client()
        assert r.mget("tail", "after", "s") == ["yes", "upgrade", "hello"]
    finally:
        s.stop()

"""Replication and cluster commands on a server that has neither: a master
without replicas, cluster support disabled. Redis's answers in that state where
they are true of Keel, and refusals that name the feature where they are not."""

import threading
import time

import pytest
import redis

from conftest import AGAINST_REDIS

DISABLED = "This instance has cluster support disabled"
CLUSTER_SUBCOMMANDS = """addslots addslotsrange bumpepoch count-failure-reports countkeysinslot
    delslots delslotsrange failover flushslots forget getkeysinslot help info keyslot links meet
    myid nodes replicas replicate reset saveconfig set-config-epoch setslot shards slaves
    slots""".split()


def error_of(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def test_wait_counts_no_replica(r):
    r.set("k", "v")
    assert r.execute_command("WAIT", 0, 0) == 0
    assert r.execute_command("WAIT", -1, 0) == 0
    start = time.time()
    assert r.execute_command("WAIT", 1, 150) == 0
    assert time.time() - start >= 0.14
    assert error_of(r, "WAIT", "a", 0) == "value is not an integer or out of range"
    assert error_of(r, "WAIT", 1, "x") == "timeout is not an integer or out of range"
    assert error_of(r, "WAIT", 1, -1) == "timeout is negative"
    assert error_of(r, "WAIT", 1) == "wrong number of arguments for 'wait' command"
    # Inside MULTI it cannot block: 0 at once.
    with r.pipeline(transaction=True) as p:
        p.execute_command("WAIT", 5, 0)
        assert p.execute() == [0]
    with pytest.raises(redis.ResponseError, match="not allowed from script"):
        r.eval("return redis.call('wait', 0, 0)", 0)


def test_wait_without_timeout_blocks_until_unblocked(server, r):
    c = server.client()
    cid = c.client_id()
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("reply", c.execute_command("WAIT", 1, 0)))
    t.start()
    deadline = time.time() + 5
    while r.info("clients")["blocked_clients"] < 1:
        assert time.time() < deadline
        time.sleep(0.01)
    assert "reply" not in out
    assert r.client_unblock(cid) == 1
    t.join(5)
    assert out["reply"] == 0
    c.close()


def test_replicaof_no_one_leaves_a_master_as_it_is(r):
    assert r.execute_command("REPLICAOF", "NO", "ONE") in ("OK", True)
    assert r.execute_command("SLAVEOF", "no", "one") in ("OK", True)
    assert r.info("replication")["role"] == "master"
    assert error_of(r, "REPLICAOF", "127.0.0.1", "notaport") == "Invalid master port"
    assert error_of(r, "SLAVEOF", "no") == "wrong number of arguments for 'slaveof' command"


def test_failover_finds_no_replica(r):
    assert error_of(r, "FAILOVER") == "FAILOVER requires connected replicas."
    assert error_of(r, "FAILOVER", "TO", "127.0.0.1", 1, "FORCE") == (
        "FAILOVER requires connected replicas.")
    assert error_of(r, "FAILOVER", "ABORT") == "No failover in progress."
    for args in (("ABORT", "FORCE"), ("TIMEOUT", 5, "ABORT"), ("FORCE", "FORCE"), ("TO", "h"),
                 ("bogus",), ("TIMEOUT", 5, "TIMEOUT", 6)):
        assert error_of(r, "FAILOVER", *args) == "syntax error"
    assert error_of(r, "FAILOVER", "TIMEOUT", 0) == "FAILOVER timeout must be greater than 0"
    assert error_of(r, "FAILOVER", "TO", "h", "x") == "value is not an integer or out of range"


def test_cluster_commands_say_cluster_support_is_disabled(r, raw):
    for sub in CLUSTER_SUBCOMMANDS:
        (info,) = raw.cmd("COMMAND", "INFO", f"cluster|{sub}")
        assert info[0] == f"cluster|{sub}".encode()
        args = ["CLUSTER", sub] + ["1"] * (abs(info[1]) - 2)
        assert error_of(r, *args) == DISABLED, sub
    for cmd in ("READONLY", "READWRITE", "ASKING"):
        assert error_of(r, cmd) == DISABLED
    assert error_of(r, "CLUSTER", "nosuch") == (
        "unknown subcommand 'nosuch'. Try CLUSTER HELP.")
    assert error_of(r, "CLUSTER") == "wrong number of arguments for 'cluster' command"
    assert error_of(r, "CLUSTER", "INFO", "x") == (
        "wrong number of arguments for 'cluster|info' command")
    assert r.info("cluster")["cluster_enabled"] == 0


def test_command_table_lists_them_as_redis_does(r, raw):
    names = set(r.command_list())
    for n in ["wait", "replicaof", "slaveof", "failover", "psync", "sync", "replconf", "migrate",
              "restore-asking", "cluster", "readonly", "readwrite", "asking"]:
        assert n in names
    subs = sorted(n.split("|")[1] for n in names if n.startswith("cluster|"))
    assert subs == sorted(CLUSTER_SUBCOMMANDS)
    assert raw.cmd("COMMAND", "GETKEYS", "MIGRATE", "h", 1, "k", 0, 10) == [b"k"]
    assert raw.cmd("COMMAND", "GETKEYS", "MIGRATE", "h", 1, "", 0, 10, "AUTH", "pw",
                   "KEYS", "a", "b") == [b"a", b"b"]
    # KEYS needs an empty key argument.
    assert raw.cmd("COMMAND", "GETKEYS", "MIGRATE", "h", 1, "k", 0, 10, "KEYS", "a") == (
        "ERR Invalid arguments specified for command")


@pytest.mark.skipif(AGAINST_REDIS, reason="Redis serves MIGRATE; Keel refuses it by name")
def test_migrate_is_refused_by_name(r):
    r.set("k", "v")
    assert error_of(r, "MIGRATE", "127.0.0.1", 1, "k", 0, 100) == (
        "MIGRATE is not available in this build of Keel")
    assert r.get("k") == "v"


def test_restore_asking_restores_as_restore_does(r):
    r.rpush("l", "a", "b")
    payload = r.dump("l")
    assert r.execute_command("RESTORE-ASKING", "l2", 0, payload) in ("OK", True)
    assert r.lrange("l2", 0, -1) == ["a", "b"]
    assert error_of(r, "RESTORE-ASKING", "l2", 0, payload) == "BUSYKEY Target key name already exists."
    assert error_of(r, "RESTORE-ASKING", "x", 0, "junk") == (
        "DUMP payload version or checksum are wrong")

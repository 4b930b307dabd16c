"""CONFIG GET / SET / RESETSTAT / REWRITE / HELP."""

import os
import socket
import subprocess
import time

import pytest
import redis

from conftest import AGAINST_REDIS, BINARY, free_port


def set_error(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("CONFIG", "SET", *args)
    return str(e.value)


def test_config_get(r):
    assert r.config_get("maxclients") == {"maxclients": "10000"}
    # redis-benchmark asks for these two.
    assert r.config_get("save") == {"save": ""}
    assert r.config_get("appendonly") == {"appendonly": "no"}
    assert r.config_get("nosuchparameter") == {}
    # Each parameter once, however many patterns name it.
    got = r.execute_command("CONFIG", "GET", "save", "appendonly", "SAVE", "sav*")
    assert len(got) == 4
    assert dict(zip(got[::2], got[1::2])) == {"save": "", "appendonly": "no"}


def test_config_get_glob(r):
    every = r.config_get("*")
    assert {"port", "databases", "maxclients", "save", "appendonly", "hz", "timeout"} <= every.keys()
    assert every["databases"] == "16"
    max_ = r.config_get("maxc*")
    assert max_ == {"maxclients": "10000"}
    # An exact name is answered as the client spelled it.
    assert r.config_get("MAXCLIENTS") == {"MAXCLIENTS": "10000"}
    got = r.execute_command("CONFIG", "GET", "MaxClients", "MAXC*")
    assert got == ["MaxClients", "10000"]
    assert set(r.config_get("h?")) == {"hz"}


def test_config_get_resp3(r3):
    got = r3.config_get("maxclients")
    assert isinstance(got, dict)
    assert got == {"maxclients": "10000"}
    assert r3.config_get("nosuch") == {}


def test_config_set_and_get(r):
    try:
        assert r.config_set("maxclients", 500) is True
        assert r.config_get("maxclients") == {"maxclients": "500"}
        assert r.execute_command("CONFIG", "SET", "maxclients", "600", "timeout", "30") == "OK"
        assert r.config_get("maxclients")["maxclients"] == "600"
        assert r.config_get("timeout")["timeout"] == "30"
        assert r.config_set("HZ", 501) is True
        assert r.config_get("hz") == {"hz": "500"}
        r.config_set("hz", 0)
        assert r.config_get("hz") == {"hz": "1"}
        r.config_set("save", "3600 1 300 100")
        assert r.config_get("save") == {"save": "3600 1 300 100"}
        r.config_set("loglevel", "VERBOSE")
        assert r.config_get("loglevel") == {"loglevel": "verbose"}
        r.config_set("proto-max-bulk-len", "2mb")
        assert r.config_get("proto-max-bulk-len") == {"proto-max-bulk-len": str(2 << 20)}
    finally:
        r.execute_command("CONFIG", "SET", "maxclients", "10000", "timeout", "0", "hz", "10",
                          "save", "", "loglevel", "notice", "proto-max-bulk-len", "512mb")


def test_config_set_is_atomic(r):
    msg = set_error(r, "maxclients", "77", "hz", "x")
    assert msg == ("CONFIG SET failed (possibly related to argument 'hz') - "
                   "argument couldn't be parsed into an integer")
    assert r.config_get("maxclients") == {"maxclients": "10000"}
    msg = set_error(r, "maxclients", "77", "nosuch", "1")
    assert msg == "Unknown option or number of arguments for CONFIG SET - 'nosuch'"
    assert r.config_get("maxclients") == {"maxclients": "10000"}


def test_config_set_errors(r):
    assert set_error(r, "foo", "bar") == "Unknown option or number of arguments for CONFIG SET - 'foo'"
    assert set_error(r, "nope", "1", "port", "2") == \
        "Unknown option or number of arguments for CONFIG SET - 'nope'"
    assert set_error(r, "databases", "3") == \
        "CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config"
    assert set_error(r, "enable-debug-command", "yes").endswith("can't set immutable config")
    assert set_error(r, "hz", "5", "HZ", "6") == \
        "CONFIG SET failed (possibly related to argument 'HZ') - duplicate parameter"
    assert set_error(r, "HZ", "x") == ("CONFIG SET failed (possibly related to argument 'hz') - "
                                       "argument couldn't be parsed into an integer")
    assert set_error(r, "timeout", "-1") == (
        "CONFIG SET failed (possibly related to argument 'timeout') - "
        "argument must be between 0 and 2147483647 inclusive")
    assert set_error(r, "protected-mode", "maybe") == (
        "CONFIG SET failed (possibly related to argument 'protected-mode') - "
        "argument must be 'yes' or 'no'")
    assert set_error(r, "appendfsync", "sometimes") == (
        "CONFIG SET failed (possibly related to argument 'appendfsync') - "
        "argument(s) must be one of the following: everysec, always, no")
    assert set_error(r, "proto-max-bulk-len", "1x") == (
        "CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - "
        "argument must be a memory value")
    assert set_error(r, "proto-max-bulk-len", "1k") == (
        "CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - "
        "argument must be between 1048576 and 9223372036854775807 inclusive")
    for bad in ("abc", "3600 1 300", "0 1", "10 -1"):
        assert set_error(r, "save", bad) == \
            "CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters"
    assert set_error(r, "maxclients", "10", "hz") == "syntax error"
    assert set_error(r, "maxclients") == "wrong number of arguments for 'config|set' command"
    assert r.config_get("save") == {"save": ""}


def test_config_arity_and_unknown(r):
    with pytest.raises(redis.ResponseError, match=r"^wrong number of arguments for 'config\|get' command$"):
        r.execute_command("CONFIG", "GET")
    with pytest.raises(redis.ResponseError,
                       match=r"^wrong number of arguments for 'config\|resetstat' command$"):
        r.execute_command("CONFIG", "RESETSTAT", "x")
    with pytest.raises(redis.ResponseError, match=r"^unknown subcommand 'foo'\. Try CONFIG HELP\.$"):
        r.execute_command("CONFIG", "foo")
    with pytest.raises(redis.ResponseError, match=r"^wrong number of arguments for 'config' command$"):
        r.execute_command("CONFIG")


def test_config_help(r):
    lines = r.execute_command("CONFIG", "HELP")
    assert isinstance(lines, list) and len(lines) >= 5
    text = " ".join(lines)
    for word in ("GET", "SET", "RESETSTAT", "REWRITE", "HELP"):
        assert word in text


def test_config_resetstat(r):
    r.get("x")
    r.get("y")
    assert r.info("stats")["keyspace_misses"] >= 2
    assert r.config_resetstat() is True
    stats = r.info("stats")
    assert stats["keyspace_misses"] == 0
    assert stats["keyspace_hits"] == 0
    assert stats["total_connections_received"] == 0
    cmds = r.info("commandstats")
    assert "cmdstat_get" not in cmds
    assert cmds["cmdstat_config|resetstat"]["calls"] == 1


def test_config_rewrite_without_file(r):
    with pytest.raises(redis.ResponseError, match="^The server is running without a config file$"):
        r.execute_command("CONFIG", "REWRITE")


def test_config_rewrite_with_file(tmp_path):
    conf = tmp_path / "keel.conf"
    port = free_port()
    conf.write_text(f"# kept comment\nport {port}\nbind 127.0.0.1\nmaxclients 100\n")
    exe = "redis-server" if AGAINST_REDIS else BINARY
    extra = ["--save", "", "--appendonly", "no"] if AGAINST_REDIS else []
    proc = subprocess.Popen([exe, str(conf), *extra], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.time() < deadline and proc.poll() is None, "server did not start"
                time.sleep(0.02)
        c = redis.Redis(port=port, decode_responses=True)
        c.config_set("maxclients", 77)
        c.config_set("timeout", 12)
        assert c.execute_command("CONFIG", "REWRITE") == "OK"
        lines = conf.read_text().splitlines()
        assert lines[0] == "# kept comment"
        assert "maxclients 77" in lines and "maxclients 100" not in lines
        assert "timeout 12" in lines
        assert f"port {port}" in lines
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]

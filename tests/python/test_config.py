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


# --- redis.conf compatibility -------------------------------------------------

KEEL_ONLY = pytest.mark.skipif(AGAINST_REDIS, reason="checks Keel's own refusal or log text")


def test_ziplist_aliases(r):
    try:
        assert r.config_set("hash-max-ziplist-value", 100) is True
        assert r.config_get("hash-max-listpack-value") == {"hash-max-listpack-value": "100"}
        assert r.config_get("hash-max-ziplist-value") == {"hash-max-ziplist-value": "100"}
        r.config_set("zset-max-ziplist-entries", 7)
        assert r.config_get("zset-max-listpack-entries") == {"zset-max-listpack-entries": "7"}
        r.config_set("list-max-ziplist-size", -3)
        assert r.config_get("list-max-listpack-size") == {"list-max-listpack-size": "-3"}
        # A glob lists both names.
        assert set(r.config_get("hash-max-*")) == {
            "hash-max-ziplist-entries", "hash-max-ziplist-value",
            "hash-max-listpack-entries", "hash-max-listpack-value"}
        # The alias takes effect: 8 fields stay a listpack only under the entries limit.
        r.config_set("zset-max-ziplist-entries", 4)
        r.zadd("zal", {f"m{i}": i for i in range(8)})
        assert r.object("encoding", "zal") == "skiplist"
        # Errors name the alias; an alias and its directive are two parameters.
        assert set_error(r, "hash-max-ziplist-value", "x") == (
            "CONFIG SET failed (possibly related to argument 'hash-max-ziplist-value') - "
            "argument must be a memory value")
        assert r.execute_command("CONFIG", "SET", "hash-max-ziplist-value", "10",
                                 "hash-max-listpack-value", "20") == "OK"
        assert r.config_get("hash-max-ziplist-value") == {"hash-max-ziplist-value": "20"}
        assert set_error(r, "HASH-MAX-ZIPLIST-VALUE", "1", "hash-max-ziplist-value", "2") == (
            "CONFIG SET failed (possibly related to argument 'hash-max-ziplist-value') - "
            "duplicate parameter")
    finally:
        r.delete("zal")
        defaults = r.config_get("*max-listpack-*")
        r.config_set("hash-max-listpack-value", 64)
        r.config_set("zset-max-listpack-entries", 128)
        r.config_set("list-max-listpack-size", -2)
        assert defaults  # the glob reached them


def test_list_compress_depth(r):
    try:
        assert r.config_get("list-compress-depth") == {"list-compress-depth": "0"}
        assert r.config_set("list-compress-depth", 2) is True
        assert r.config_get("list-compress-depth") == {"list-compress-depth": "2"}
        r.rpush("lcd", *range(10))
        assert r.lrange("lcd", 0, -1) == [str(i) for i in range(10)]
        assert set_error(r, "list-compress-depth", "-1") == (
            "CONFIG SET failed (possibly related to argument 'list-compress-depth') - "
            "argument must be between 0 and 2147483647 inclusive")
    finally:
        r.delete("lcd")
        r.config_set("list-compress-depth", 0)


def test_config_get_glob_patterns(r):
    assert set(r.config_get("lazyfree-*")) == {
        "lazyfree-lazy-eviction", "lazyfree-lazy-expire", "lazyfree-lazy-server-del",
        "lazyfree-lazy-user-del", "lazyfree-lazy-user-flush"}
    assert set(r.config_get("appendf*")) == {"appendfilename", "appendfsync"}
    assert set(r.config_get("*-max-ziplist-*")) == {
        "hash-max-ziplist-entries", "hash-max-ziplist-value", "list-max-ziplist-size",
        "zset-max-ziplist-entries", "zset-max-ziplist-value"}
    assert set(r.config_get("maxmemory-polic[xy]")) == {"maxmemory-policy"}
    every = r.config_get("*")
    # Redis 7.0's full list is there (Keel adds a few of its own).
    for name in ("always-show-logo", "rdbcompression", "activerehashing", "jemalloc-bg-thread",
                 "client-output-buffer-limit", "notify-keyspace-events", "maxmemory",
                 "replicaof", "slaveof", "tls-port", "cluster-enabled", "daemonize", "logfile",
                 "pidfile", "supervised", "oom-score-adj-values", "lua-time-limit",
                 "busy-reply-threshold", "aclfile", "unixsocketperm"):
        assert name in every, name


def test_config_canonical_forms(r):
    got = r.config_get("*")
    assert got["client-output-buffer-limit"] == (
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60")
    for name, value in {
        "notify-keyspace-events": "", "maxmemory": "0", "maxmemory-policy": "noeviction",
        "oom-score-adj-values": "0 200 800", "appendonly": "no", "daemonize": "no",
        "logfile": "", "auto-aof-rewrite-min-size": "67108864", "repl-backlog-size": "1048576",
        "rdbcompression": "yes", "activerehashing": "yes", "always-show-logo": "no",
        "proc-title-template": "{title} {listen-addr} {server-mode}", "supervised": "no",
        "unixsocketperm": "0", "replicaof": "", "busy-reply-threshold": "5000",
        "lua-time-limit": "5000", "stream-node-max-bytes": "4096", "list-compress-depth": "0",
    }.items():
        assert got[name] == value, name
    # Values that ask nothing of a missing feature are accepted everywhere.
    assert r.config_set("maxmemory", "0mb") is True
    assert r.config_get("maxmemory") == {"maxmemory": "0"}
    assert r.config_set("notify-keyspace-events", "") is True
    assert r.config_set("maxmemory-policy", "NOEVICTION") is True
    assert r.config_set("appendonly", "no") is True
    assert r.config_set("client-output-buffer-limit", "normal 0 0 0") is True
    assert r.config_set("client-output-buffer-limit", "replica 256mb 64mb 60") is True
    assert r.config_get("client-output-buffer-limit")["client-output-buffer-limit"] == (
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60")


def test_config_value_errors(r):
    cobl = "CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - "
    assert set_error(r, "client-output-buffer-limit", "normal 1 2") == \
        cobl + "Wrong number of arguments in buffer limit configuration."
    assert set_error(r, "client-output-buffer-limit", "foo 1 2 3") == \
        cobl + "Invalid client class specified in buffer limit configuration."
    assert set_error(r, "client-output-buffer-limit", "normal -1 2 3") == \
        cobl + "Error in hard, soft or soft_seconds setting in buffer limit configuration."
    assert set_error(r, "notify-keyspace-events", "Q") == (
        "CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
        "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    assert set_error(r, "maxmemory", "lots") == (
        "CONFIG SET failed (possibly related to argument 'maxmemory') - "
        "argument must be a memory value")
    assert set_error(r, "maxmemory-clients", "101%") == (
        "CONFIG SET failed (possibly related to argument 'maxmemory-clients') - "
        "percentage argument must be less or equal to 100")
    assert set_error(r, "maxmemory-policy", "sometimes") == (
        "CONFIG SET failed (possibly related to argument 'maxmemory-policy') - "
        "argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, "
        "volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction")
    assert set_error(r, "oom-score-adj-values", "0 1 2001") == (
        "CONFIG SET failed (possibly related to argument 'oom-score-adj-values') - "
        "Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
    assert set_error(r, "tls-port", "70000") == (
        "CONFIG SET failed (possibly related to argument 'tls-port') - "
        "argument must be between 0 and 65535 inclusive")
    for name in ("daemonize", "logfile", "pidfile", "always-show-logo", "set-proc-title",
                 "disable-thp", "supervised", "replicaof", "cluster-enabled", "unixsocket"):
        assert set_error(r, name, "yes") == \
            f"CONFIG SET failed (possibly related to argument '{name}') - can't set immutable config"
    assert set_error(r, "include", "x.conf") == \
        "Unknown option or number of arguments for CONFIG SET - 'include'"


def test_recorded_noops_keep_their_values(r):
    names = ["activerehashing", "dynamic-hz", "jemalloc-bg-thread", "rdbcompression",
             "lazyfree-lazy-eviction", "lazyfree-lazy-expire", "lazyfree-lazy-server-del",
             "lazyfree-lazy-user-del", "lazyfree-lazy-user-flush", "crash-log-enabled"]
    before = {n: r.config_get(n)[n] for n in names}
    try:
        for n in names:
            flipped = "no" if before[n] == "yes" else "yes"
            assert r.config_set(n, flipped.upper()) is True
            assert r.config_get(n) == {n: flipped}
        assert set_error(r, "activerehashing", "maybe") == (
            "CONFIG SET failed (possibly related to argument 'activerehashing') - "
            "argument must be 'yes' or 'no'")
        r.config_set("oom-score-adj", "absolute")
        assert r.config_get("oom-score-adj") == {"oom-score-adj": "absolute"}
        # Redis reports "relative" under its other name.
        r.config_set("oom-score-adj", "relative")
        assert r.config_get("oom-score-adj") == {"oom-score-adj": "yes"}
        r.config_set("oom-score-adj-values", "0 100 200")
        assert r.config_get("oom-score-adj-values") == {"oom-score-adj-values": "0 100 200"}
    finally:
        for n, v in before.items():
            r.config_set(n, v)
        r.config_set("oom-score-adj", "no")
        r.config_set("oom-score-adj-values", "0 200 800")


@KEEL_ONLY
def test_later_feature_values_are_refused(r):
    for name, value, feature in [
        ("activedefrag", "yes", "active defragmentation"),
        ("tls-replication", "yes", "TLS"),
        ("repl-diskless-load", "swapdb", "replication"),
    ]:
        assert set_error(r, name, value) == (
            f"CONFIG SET failed (possibly related to argument '{name}') - "
            f"{feature} is not available in this build of Keel"), name
    assert r.config_get("activedefrag") == {"activedefrag": "no"}


# --- start-up from a config file ----------------------------------------------

EXE = "redis-server" if AGAINST_REDIS else BINARY


def wait_port(proc, port, timeout=10.0):
    deadline = time.time() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            assert time.time() < deadline, "server did not start"
            assert proc is None or proc.poll() is None, "server exited"
            time.sleep(0.02)


def start_with(tmp_path, conf_text, *args, redis_extra=True):
    """Start a server from `conf_text` (a file in tmp_path, cwd tmp_path); returns (proc, port).
    Against Redis, `--save "" --appendonly no` are added unless redis_extra is False."""
    port = free_port()
    conf = tmp_path / "server.conf"
    conf.write_text(conf_text)
    extra = ["--save", "", "--appendonly", "no"] if AGAINST_REDIS and redis_extra else []
    proc = subprocess.Popen([EXE, str(conf), "--port", str(port), "--bind", "127.0.0.1", *extra,
                             *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            cwd=tmp_path)
    wait_port(proc, port)
    return proc, port


def stop(proc):
    proc.terminate()
    proc.wait(timeout=10)


def fails_to_start(tmp_path, conf_text, *args):
    conf = tmp_path / "bad.conf"
    conf.write_text(conf_text)
    proc = subprocess.run([EXE, str(conf), "--port", str(free_port()), *args],
                          capture_output=True, text=True, cwd=tmp_path, timeout=10)
    assert proc.returncode == 1
    return proc.stdout + proc.stderr


def test_include_and_save_lines_add_up(tmp_path):
    (tmp_path / "extra.conf").write_text("maxclients 123\nsave 300 100\nhash-max-ziplist-entries 64\n")
    conf = "save 3600 1\nsave 60 10000\ninclude extra.conf\nlist-compress-depth 1\n"
    proc, port = start_with(tmp_path, conf, redis_extra=False)
    try:
        c = redis.Redis(port=port, decode_responses=True)
        assert c.config_get("maxclients") == {"maxclients": "123"}
        assert c.config_get("hash-max-listpack-entries") == {"hash-max-listpack-entries": "64"}
        assert c.config_get("list-compress-depth") == {"list-compress-depth": "1"}
        assert c.config_get("save") == {"save": "3600 1 60 10000 300 100"}
        c.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_save_lines_after_an_include_replace(tmp_path):
    # Redis 7.0 adds save lines up only until an include has been read.
    (tmp_path / "extra.conf").write_text("save 300 100\n")
    proc, port = start_with(tmp_path, "save 3600 1\ninclude extra.conf\nsave 10 1\n",
                            "--save", "20 2", redis_extra=False)
    try:
        c = redis.Redis(port=port, decode_responses=True)
        assert c.config_get("save") == {"save": "20 2"}
        c.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_command_line_save_adds_to_the_file(tmp_path):
    proc, port = start_with(tmp_path, "save 3600 1\nsave 300 100\n", "--save", "60 1",
                            redis_extra=False)
    try:
        c = redis.Redis(port=port, decode_responses=True)
        assert c.config_get("save") == {"save": "3600 1 300 100 60 1"}
        c.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_stock_defaults_in_a_file_are_accepted(tmp_path):
    conf = "\n".join([
        "daemonize no", "always-show-logo no", "rdbcompression yes", "rdbchecksum yes",
        "activerehashing yes", "lazyfree-lazy-eviction no", "lazyfree-lazy-user-flush no",
        "jemalloc-bg-thread yes", "set-proc-title yes", "oom-score-adj no",
        "oom-score-adj-values 0 200 800", "disable-thp yes", "dynamic-hz yes",
        "supervised no", "appendonly no", 'appendfilename "appendonly.aof"',
        'notify-keyspace-events ""', "maxmemory-policy noeviction",
        "client-output-buffer-limit normal 0 0 0",
        "client-output-buffer-limit replica 256mb 64mb 60",
        "client-output-buffer-limit pubsub 32mb 8mb 60",
        'proc-title-template "{title} {listen-addr} {server-mode}"',
        "repl-diskless-sync yes", "hll-sparse-max-bytes 3000", "stream-node-max-bytes 4096",
        "list-max-ziplist-size -2", "hash-max-ziplist-value 64", "slave-read-only yes",
        "list-compress-depth 0", "logfile \"\"",
    ]) + "\n"
    proc, port = start_with(tmp_path, conf)
    try:
        c = redis.Redis(port=port, decode_responses=True)
        assert c.ping()
        assert c.config_get("client-output-buffer-limit")["client-output-buffer-limit"] == (
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60")
        c.close()
    finally:
        stop(proc)


def test_bind_with_optional_address(tmp_path):
    port = free_port()
    conf = tmp_path / "b.conf"
    conf.write_text(f"port {port}\nbind 127.0.0.1 -::1\n")
    extra = ["--save", "", "--appendonly", "no"] if AGAINST_REDIS else []
    proc = subprocess.Popen([EXE, str(conf), *extra], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        wait_port(proc, port)
        c = redis.Redis(port=port, decode_responses=True)
        assert c.config_get("bind") == {"bind": "127.0.0.1 -::1"}
        c.close()
    finally:
        stop(proc)


def test_logfile(tmp_path):
    log = tmp_path / "server.log"
    proc, port = start_with(tmp_path, f"logfile {log}\n")
    try:
        c = redis.Redis(port=port, decode_responses=True)
        assert c.config_get("logfile") == {"logfile": str(log)}
        c.close()
        deadline = time.time() + 5
        while "Ready to accept connections" not in log.read_text():
            assert time.time() < deadline
            time.sleep(0.05)
    finally:
        stop(proc)
    assert "Ready to accept connections" not in proc.stdout.read().decode()
    # Appended, never truncated.
    size = log.stat().st_size
    proc, port = start_with(tmp_path, f"logfile {log}\n")
    stop(proc)
    assert log.stat().st_size > size


def test_logfile_that_cannot_be_opened(tmp_path):
    out = fails_to_start(tmp_path, "logfile /nonexistent-dir/x.log\n")
    assert "Can't open the log file: No such file or directory" in out


def test_daemonize_with_pidfile(tmp_path):
    port = free_port()
    pidfile = tmp_path / "server.pid"
    log = tmp_path / "server.log"
    conf = tmp_path / "d.conf"
    conf.write_text(f"port {port}\nbind 127.0.0.1\ndaemonize yes\npidfile {pidfile}\n"
                    f"logfile {log}\nsave \"\"\nappendonly no\n")
    # The command returns at once: the server lives on in the background.
    done = subprocess.run([EXE, str(conf)], cwd=tmp_path, timeout=10)
    assert done.returncode == 0
    deadline = time.time() + 10
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.time() < deadline, "no pid file"
        time.sleep(0.02)
    pid = int(pidfile.read_text())
    try:
        wait_port(None, port)
        c = redis.Redis(port=port, decode_responses=True)
        assert c.ping()
        assert c.config_get("daemonize") == {"daemonize": "yes"}
        assert c.config_get("pidfile") == {"pidfile": str(pidfile)}
        c.close()
    finally:
        os.kill(pid, 15)
    deadline = time.time() + 10
    while pidfile.exists():
        assert time.time() < deadline, "pid file left behind"
        time.sleep(0.02)
    assert log.stat().st_size > 0


def test_unknown_directive_is_fatal(tmp_path):
    out = fails_to_start(tmp_path, "hz 10\nfrobnicate yes\n")
    assert "Bad directive or wrong number of arguments" in out
    assert ">>> 'frobnicate yes'" in out
    assert "line 2" in out
    out = fails_to_start(tmp_path, "hz 1 2\n")
    assert "wrong number of arguments" in out


@KEEL_ONLY
def test_every_error_of_a_file_in_one_pass(tmp_path):
    out = fails_to_start(tmp_path, "frobnicate yes\nhz x\nactivedefrag yes\n"
                                   "notify-keyspace-events KQ\nappendonly maybe\n")
    assert out.count("FATAL CONFIG FILE ERROR") == 5, out
    for text in ("Bad directive", "couldn't be parsed into an integer",
                 "'activedefrag yes' needs active defragmentation, which is not available",
                 "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.",
                 "argument must be 'yes' or 'no'"):
        assert text in out, text


@KEEL_ONLY
def test_noop_directive_logged_once_at_startup(tmp_path):
    proc, port = start_with(tmp_path, "activerehashing no\nalways-show-logo yes\n"
                                      "lazyfree-lazy-expire no\n")
    stop(proc)
    out = proc.stdout.read().decode()
    assert out.count("'activerehashing no'") == 1, out
    assert out.count("'always-show-logo yes'") == 1, out
    # Defaults are not worth a line.
    assert "lazyfree-lazy-expire" not in out


def test_shutdown_refusal_is_logged(tmp_path):
    log = tmp_path / "server.log"
    gone = tmp_path / "gone"
    gone.mkdir()
    proc, port = start_with(tmp_path, f"logfile {log}\ndir {gone}\n")
    try:
        c = redis.Redis(port=port, decode_responses=True)
        gone.rmdir()
        with pytest.raises(redis.ResponseError, match="^Errors trying to SHUTDOWN. Check logs.$"):
            c.execute_command("SHUTDOWN", "SAVE")
        text = log.read_text()
        assert "Error trying to save the DB, can't exit." in text, text
        assert c.ping()
        c.close()
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_loglevel_warning_leaves_out_notices(tmp_path):
    log = tmp_path / "server.log"
    proc, port = start_with(tmp_path, f"logfile {log}\nloglevel warning\n")
    try:
        c = redis.Redis(port=port, decode_responses=True)
        assert c.config_get("loglevel") == {"loglevel": "warning"}
        c.close()
    finally:
        stop(proc)
    text = log.read_text()
    assert "Ready to accept connections" not in text
    # Shutting down is worth a warning.
    assert "User requested shutdown..." in text
    # At notice level the same lines are there.
    log.unlink()
    proc, port = start_with(tmp_path, f"logfile {log}\nloglevel warning\n", "--loglevel", "notice")
    stop(proc)
    assert "Ready to accept connections" in log.read_text()


def test_config_rewrite_after_dir_changes_the_working_directory(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "rel.conf").write_text(f"dir {data}\nclient-output-buffer-limit normal 0 0 0\n"
                                       "notify-keyspace-events \"\"\nlist-compress-depth 0\n")
    port = free_port()
    extra = ["--save", "", "--appendonly", "no"] if AGAINST_REDIS else []
    # The file is named relative to where the server starts, not to `dir`.
    proc = subprocess.Popen([EXE, "rel.conf", "--port", str(port), "--bind", "127.0.0.1", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        wait_port(proc, port)
        c = redis.Redis(port=port, decode_responses=True)
        c.config_set("list-compress-depth", 3)
        assert c.info("server")["config_file"] == str(tmp_path / "rel.conf")
        assert c.execute_command("CONFIG", "REWRITE") == "OK"
        c.close()
    finally:
        stop(proc)
    lines = (tmp_path / "rel.conf").read_text().splitlines()
    assert "list-compress-depth 3" in lines
    assert not (data / "rel.conf").exists()
    # What was written loads again.
    proc = subprocess.Popen([EXE, "rel.conf", "--port", str(port), "--bind", "127.0.0.1", *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        wait_port(proc, port)
        c = redis.Redis(port=port, decode_responses=True)
        assert c.config_get("list-compress-depth") == {"list-compress-depth": "3"}
        c.close()
    finally:
        stop(proc)


def test_config_get_dir_is_the_working_directory(tmp_path):
    (tmp_path / "data").mkdir()
    tmp_path = tmp_path / "data"
    proc, port = start_with(tmp_path.parent, "dir data\n")
    try:
        c = redis.Redis(port=port, decode_responses=True)
        assert c.config_get("dir") == {"dir": str(tmp_path)}
        assert c.config_get("di?")["dir"] == str(tmp_path)
        c.close()
    finally:
        stop(proc)


def test_config_rewrite_writes_the_users(tmp_path):
    """Without an ACL file, CONFIG REWRITE writes every user as ACL LIST words
    it, in the places of the old `user` lines, the rest last; the file then
    starts the same users."""
    conf = tmp_path / "users.conf"
    port = free_port()
    conf.write_text(f"port {port}\nbind 127.0.0.1\nuser alice on >pw ~a:* +get\n"
                    "# between\nuser bob off\n")
    extra = ["--save", "", "--appendonly", "no"] if AGAINST_REDIS else []

    def start():
        proc = subprocess.Popen([EXE, str(conf), *extra], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, cwd=tmp_path)
        wait_port(proc, port)
        return proc, redis.Redis(port=port, decode_responses=True)

    proc, c = start()
    try:
        c.acl_setuser("carol", enabled=True, nopass=True, commands=["+set"])
        c.acl_deluser("bob")
        listed = c.acl_list()
        assert c.execute_command("CONFIG", "REWRITE") == "OK"
        lines = conf.read_text().splitlines()
        users = [line for line in lines if line.startswith("user ")]
        assert users == listed
        assert lines[2] == listed[0] and lines[3] == "# between" and lines[4] == listed[1]
        assert lines[-1] == "user default on nopass ~* &* +@all"
        c.shutdown(nosave=True)
    except redis.ConnectionError:
        pass
    finally:
        proc.wait(timeout=10)
    proc, c = start()
    try:
        # A `user default` line starts from `reset`, which shows.
        assert c.acl_list() == listed[:2] + ["user default on nopass sanitize-payload ~* &* +@all"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)

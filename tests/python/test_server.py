"""Server commands: INFO, DBSIZE, FLUSHDB, FLUSHALL, TIME, LASTSAVE, SWAPDB,
SHUTDOWN, DEBUG and MEMORY."""

import socket
import time

import pytest
import redis

from conftest import AGAINST_REDIS, running_server

DEBUG_REFUSAL = (
    'DEBUG command not allowed. If the enable-debug-command option is set to "local", '
    "you can run it from a local connection, otherwise you need to set this option in "
    "the configuration file, and then restart the server."
)


def raw(client, *args):
    """Send one command on a connection of its own and return the undecoded reply."""
    conn = client.connection_pool.get_connection("_")
    try:
        conn.send_command(*args)
        return conn.read_response(disable_decoding=True)
    finally:
        client.connection_pool.release(conn)


# --- INFO -------------------------------------------------------------------

INFO_FIELDS = [
    # server
    "redis_version", "redis_mode", "os", "arch_bits", "multiplexing_api", "process_id",
    "run_id", "tcp_port", "server_time_usec", "uptime_in_seconds", "uptime_in_days", "hz",
    "configured_hz", "executable", "config_file", "io_threads_active",
    # clients
    "connected_clients", "maxclients", "blocked_clients",
    # memory
    "used_memory", "used_memory_human", "used_memory_rss", "used_memory_rss_human",
    "used_memory_peak", "used_memory_peak_human", "maxmemory", "maxmemory_policy",
    "mem_allocator",
    # persistence
    "loading", "rdb_changes_since_last_save", "rdb_last_save_time", "aof_enabled",
    # stats
    "total_connections_received", "total_commands_processed", "instantaneous_ops_per_sec",
    "total_net_input_bytes", "total_net_output_bytes", "rejected_connections",
    "expired_keys", "keyspace_hits", "keyspace_misses",
    # replication
    "role", "connected_slaves", "master_replid", "master_repl_offset",
    # cpu
    "used_cpu_sys", "used_cpu_user",
]


def test_info_default_fields(r):
    info = r.info()
    missing = [f for f in INFO_FIELDS if f not in info]
    assert missing == []
    assert info["redis_version"] == "7.0.15"
    assert info["redis_mode"] == "standalone"
    assert info["role"] == "master"
    assert info["maxmemory"] == 0
    assert info["maxmemory_policy"] == "noeviction"
    assert info["loading"] == 0
    assert info["aof_enabled"] == 0
    assert info["connected_slaves"] == 0
    assert info["master_repl_offset"] == 0
    assert info["blocked_clients"] == 0
    assert info["io_threads_active"] == 0
    assert info["multiplexing_api"] == "epoll"
    assert info["arch_bits"] == 64
    assert info["tcp_port"] == r.connection_pool.connection_kwargs["port"]
    assert len(info["run_id"]) == 40 and len(info["master_replid"]) == 40
    assert info["used_memory"] > 0 and info["used_memory_rss"] > 0
    assert info["used_memory_peak"] >= info["used_memory"]
    assert isinstance(info["used_cpu_user"], float)
    assert abs(info["server_time_usec"] / 1e6 - time.time()) < 5
    assert not any(k.startswith("cmdstat_") for k in info)
    if not AGAINST_REDIS:
        assert info["mem_allocator"] == "mimalloc"
        assert "keel_version" in info


# Every field Redis 7.0.15 prints in these sections with no replica, module,
# key or command stat (monitoring tools read them by name).
REDIS_7_FIELDS = {
    "server": """redis_version redis_git_sha1 redis_git_dirty redis_build_id redis_mode os arch_bits
        monotonic_clock multiplexing_api atomicvar_api gcc_version process_id process_supervised
        run_id tcp_port server_time_usec uptime_in_seconds uptime_in_days hz configured_hz
        lru_clock executable config_file io_threads_active""",
    "clients": """connected_clients cluster_connections maxclients client_recent_max_input_buffer
        client_recent_max_output_buffer blocked_clients tracking_clients
        clients_in_timeout_table""",
    "memory": """used_memory used_memory_human used_memory_rss used_memory_rss_human
        used_memory_peak used_memory_peak_human used_memory_peak_perc used_memory_overhead
        used_memory_startup used_memory_dataset used_memory_dataset_perc allocator_allocated
        allocator_active allocator_resident total_system_memory total_system_memory_human
        used_memory_lua used_memory_vm_eval used_memory_lua_human used_memory_scripts_eval
        number_of_cached_scripts number_of_functions number_of_libraries
        used_memory_vm_functions used_memory_vm_total used_memory_vm_total_human
        used_memory_functions used_memory_scripts used_memory_scripts_human maxmemory
        maxmemory_human maxmemory_policy allocator_frag_ratio allocator_frag_bytes
        allocator_rss_ratio allocator_rss_bytes rss_overhead_ratio rss_overhead_bytes
        mem_fragmentation_ratio mem_fragmentation_bytes mem_not_counted_for_evict
        mem_replication_backlog mem_total_replication_buffers mem_clients_slaves
        mem_clients_normal mem_cluster_links mem_aof_buffer mem_allocator active_defrag_running
        lazyfree_pending_objects lazyfreed_objects""",
    "stats": """total_connections_received total_commands_processed instantaneous_ops_per_sec
        total_net_input_bytes total_net_output_bytes total_net_repl_input_bytes
        total_net_repl_output_bytes instantaneous_input_kbps instantaneous_output_kbps
        instantaneous_input_repl_kbps instantaneous_output_repl_kbps rejected_connections
        sync_full sync_partial_ok sync_partial_err expired_keys expired_stale_perc
        expired_time_cap_reached_count expire_cycle_cpu_milliseconds evicted_keys
        evicted_clients total_eviction_exceeded_time current_eviction_exceeded_time
        keyspace_hits keyspace_misses pubsub_channels pubsub_patterns pubsubshard_channels
        latest_fork_usec total_forks migrate_cached_sockets slave_expires_tracked_keys
        active_defrag_hits active_defrag_misses active_defrag_key_hits
        active_defrag_key_misses total_active_defrag_time current_active_defrag_time
        tracking_total_keys tracking_total_items tracking_total_prefixes
        unexpected_error_replies total_error_replies dump_payload_sanitizations
        total_reads_processed total_writes_processed io_threaded_reads_processed
        io_threaded_writes_processed reply_buffer_shrinks reply_buffer_expands""",
    "cpu": """used_cpu_sys used_cpu_user used_cpu_sys_children used_cpu_user_children
        used_cpu_sys_main_thread used_cpu_user_main_thread""",
}


@pytest.mark.parametrize("section", sorted(REDIS_7_FIELDS))
def test_info_has_every_redis_7_field(r, section):
    text = raw(r, "INFO", section).decode()
    names = [line.split(":", 1)[0] for line in text.split("\r\n")[1:] if line]
    missing = [f for f in REDIS_7_FIELDS[section].split() if f not in names]
    assert missing == []
    # Redis's order, Keel's own fields aside.
    ours = [n for n in names if n in REDIS_7_FIELDS[section].split()]
    assert ours == [f for f in REDIS_7_FIELDS[section].split() if f in ours]


def test_info_memory_overhead_and_dataset_add_up(r):
    r.set("big", "x" * 200_000)
    m = r.info("memory")
    assert 0 < m["used_memory_startup"] <= m["used_memory_overhead"] <= m["used_memory"]
    assert m["used_memory_dataset"] == m["used_memory"] - m["used_memory_overhead"]
    # The 200 kB value is dataset, not overhead.
    assert m["used_memory_dataset"] >= 200_000
    perc = float(m["used_memory_dataset_perc"].rstrip("%"))
    expect = 100 * m["used_memory_dataset"] / (m["used_memory"] - m["used_memory_startup"])
    assert abs(perc - expect) < 0.01
    s = r.memory_stats()
    assert s["startup.allocated"] == m["used_memory_startup"]
    assert s["dataset.bytes"] == s["total.allocated"] - s["overhead.total"]
    keys = s["keys.count"]
    assert s["keys.bytes-per-key"] == (s["total.allocated"] - s["startup.allocated"]) // keys
    for field in ("clients.normal", "aof.buffer", "lua.caches", "functions.caches",
                  "dataset.percentage", "allocator.allocated", "allocator.resident"):
        assert field in s
    assert set(s["db.0"]) >= {"overhead.hashtable.main", "overhead.hashtable.expires"}


def test_info_counts_reads_and_writes(r):
    before = r.info("stats")
    for _ in range(5):
        r.ping()
    after = r.info("stats")
    assert after["total_reads_processed"] - before["total_reads_processed"] >= 6
    assert after["total_writes_processed"] - before["total_writes_processed"] >= 6
    assert r.info("server")["atomicvar_api"] == "c11-builtin"
    assert r.info("memory")["number_of_libraries"] == 0
    r.function_load("#!lua name=lib1\nredis.register_function('f1', function() return 1 end)")
    assert r.info("memory")["number_of_libraries"] == 1
    r.function_delete("lib1")


def test_info_raw_layout(r):
    r.set("k", "v")
    text = raw(r, "INFO")
    assert text.startswith(b"# Server\r\nredis_version:7.0.15\r\n")
    assert text.endswith(b"\r\n") and not text.endswith(b"\r\n\r\n")
    headers = [line for line in text.split(b"\r\n") if line.startswith(b"#")]
    for h in [b"# Server", b"# Clients", b"# Memory", b"# Persistence", b"# Stats",
              b"# Replication", b"# CPU", b"# Keyspace"]:
        assert h in headers
    assert b"# Commandstats" not in headers
    # One blank line before every section but the first.
    assert text.count(b"\r\n\r\n#") == len(headers) - 1
    assert b"\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n" in text


def test_info_sections(r):
    server = r.info("server")
    assert "redis_version" in server and "connected_clients" not in server
    assert r.info("SERVER").keys() == server.keys()
    assert r.info("nosuchsection") == {}
    assert raw(r, "INFO", "nosuchsection") == b""
    both = raw(r, "INFO", "keyspace", "clients", "bogus")
    assert both.startswith(b"# Clients\r\n")
    assert b"\r\n\r\n# Keyspace\r\n" in both
    assert b"# Server" not in both
    assert "used_cpu_sys" in r.info("cpu")
    default = raw(r, "INFO", "default")
    assert b"# Server" in default and b"# Commandstats" not in default
    for word in ("all", "everything"):
        assert b"# Commandstats" in raw(r, "INFO", word)


def test_info_keyspace(r):
    assert r.info("keyspace") == {}
    r.set("a", 1)
    r.set("b", 1, ex=100)
    ks = r.info("keyspace")
    assert ks["db0"]["keys"] == 2 and ks["db0"]["expires"] == 1
    assert "avg_ttl" in ks["db0"]
    # SWAPDB moves the keys without SELECT, so other databases show up too.
    r.swapdb(0, 3)
    r.set("c", 1)
    ks = r.info("keyspace")
    assert ks["db3"]["keys"] == 2 and ks["db3"]["expires"] == 1
    assert ks["db0"]["keys"] == 1 and ks["db0"]["expires"] == 0
    assert "db1" not in ks


def test_info_stats_count(r):
    before = r.info("stats")
    r.get("missing")
    r.set("k", "v")
    r.get("k")
    after = r.info("stats")
    assert after["keyspace_misses"] == before["keyspace_misses"] + 1
    assert after["keyspace_hits"] == before["keyspace_hits"] + 1
    assert after["total_commands_processed"] >= before["total_commands_processed"] + 3
    assert after["total_net_input_bytes"] > before["total_net_input_bytes"]
    dirty = r.info("persistence")["rdb_changes_since_last_save"]
    r.set("k", "w")
    assert r.info("persistence")["rdb_changes_since_last_save"] == dirty + 1


def test_info_expired_keys(r):
    before = r.info("stats")["expired_keys"]
    r.set("k", "v", px=1)
    time.sleep(0.05)
    assert r.get("k") is None
    assert r.info("stats")["expired_keys"] == before + 1


def test_info_commandstats(r):
    r.config_resetstat()
    r.get("a")
    r.get("b")
    r.config_get("port")
    with pytest.raises(redis.ResponseError):
        r.execute_command("SET", "a", "1", "EX", "0")
    stats = r.info("commandstats")
    assert stats["cmdstat_get"]["calls"] == 2
    assert stats["cmdstat_get"]["failed_calls"] == 0
    assert stats["cmdstat_get"]["rejected_calls"] == 0
    assert "usec" in stats["cmdstat_get"] and "usec_per_call" in stats["cmdstat_get"]
    assert stats["cmdstat_config|get"]["calls"] == 1
    assert stats["cmdstat_set"]["failed_calls"] == 1
    assert "cmdstat_del" not in stats
    line = [l for l in raw(r, "INFO", "commandstats").split(b"\r\n")
            if l.startswith(b"cmdstat_get:")][0]
    assert line.startswith(b"cmdstat_get:calls=2,usec=")
    assert b",usec_per_call=" in line and line.endswith(b",rejected_calls=0,failed_calls=0")


def test_info_resp3(r3):
    r3.set("k", "v")
    info = r3.info()
    assert info["redis_version"] == "7.0.15"
    assert info["db0"]["keys"] == 1


def test_info_instantaneous_ops():
    with running_server("--hz", "100") as s:
        c = s.client()
        deadline = time.time() + 2.5
        ops = 0
        while time.time() < deadline and ops == 0:
            for _ in range(200):
                c.ping()
            ops = c.info("stats")["instantaneous_ops_per_sec"]
        assert ops > 0
        c.close()


# --- DBSIZE / FLUSHDB / FLUSHALL ----------------------------------------------

def test_dbsize_flushdb_flushall(r):
    r.set("a", 1)
    r.set("b", 2)
    assert r.dbsize() == 2
    r.swapdb(0, 1)
    assert r.dbsize() == 0
    r.set("c", 3)
    assert r.dbsize() == 1
    assert r.flushdb() is True
    assert r.dbsize() == 0
    assert r.info("keyspace") == {"db1": r.info("keyspace")["db1"]}
    r.swapdb(0, 1)
    assert r.dbsize() == 2
    r.swapdb(0, 1)
    r.set("c", 3)
    assert r.flushall() is True
    assert r.dbsize() == 0
    assert r.info("keyspace") == {}


@pytest.mark.parametrize("mode", ["ASYNC", "SYNC", "async", "sync"])
def test_flush_modes(r, mode):
    r.set("a", 1)
    assert r.execute_command("FLUSHDB", mode) is True
    assert r.dbsize() == 0
    r.set("a", 1)
    r.swapdb(0, 5)
    assert r.execute_command("FLUSHALL", mode) is True
    assert r.info("keyspace") == {}


def test_flush_errors(r):
    for cmd in (["FLUSHDB", "x"], ["FLUSHDB", "ASYNC", "SYNC"], ["FLUSHALL", "x"],
                ["FLUSHALL", "SYNC", "x"], ["FLUSHDB", "ASYNC", "ASYNC"]):
        with pytest.raises(redis.ResponseError, match="^syntax error$"):
            r.execute_command(*cmd)
    with pytest.raises(redis.ResponseError,
                       match=r"^wrong number of arguments for 'dbsize' command$"):
        r.execute_command("DBSIZE", "x")


def test_flush_invalidates_watch(r, server):
    r.set("w", 1)
    other = server.client()
    with r.pipeline() as p:
        p.watch("w")
        other.flushall()
        p.multi()
        p.set("w", 2)
        with pytest.raises(redis.WatchError):
            p.execute()
    other.close()


# --- TIME / LASTSAVE ----------------------------------------------------------

def test_time(r):
    reply = raw(r, "TIME")
    assert len(reply) == 2 and all(isinstance(x, bytes) for x in reply)
    secs, usecs = int(reply[0]), int(reply[1])
    assert abs(secs - time.time()) < 5
    assert 0 <= usecs < 1_000_000
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'time'"):
        r.execute_command("TIME", "x")


def test_lastsave(r):
    ts = raw(r, "LASTSAVE")
    assert isinstance(ts, int) and ts <= time.time() + 1
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'lastsave'"):
        r.execute_command("LASTSAVE", "x")


# --- SWAPDB -------------------------------------------------------------------

def test_swapdb(r):
    r.set("a", "in0")
    assert r.swapdb(0, 1) is True
    assert r.get("a") is None
    r.set("b", "new0")
    assert r.swapdb(1, 0) is True
    assert r.get("a") == "in0" and r.get("b") is None
    assert r.swapdb(0, 0) is True
    assert r.get("a") == "in0"
    assert r.swapdb(0, 15) is True
    assert r.info("keyspace")["db15"]["keys"] == 1


def test_swapdb_errors(r):
    cases = [(("x", 1), "invalid first DB index"), ((0, "y"), "invalid second DB index"),
             (("x", "y"), "invalid first DB index"), ((0, 16), "DB index is out of range"),
             ((-1, 0), "DB index is out of range")]
    for args, msg in cases:
        with pytest.raises(redis.ResponseError, match=f"^{msg}$"):
            r.execute_command("SWAPDB", *args)
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'swapdb'"):
        r.execute_command("SWAPDB", 0)


def test_swapdb_touches_watchers(r, server):
    r.set("w", 1)
    other = server.client()
    with r.pipeline() as p:
        p.watch("w")
        other.swapdb(0, 1)
        p.multi()
        p.set("x", 1)
        with pytest.raises(redis.WatchError):
            p.execute()
    other.close()


# --- SHUTDOWN -----------------------------------------------------------------

def wait_exit(s, timeout=10):
    try:
        s.proc.wait(timeout=timeout)
    except Exception:
        pytest.fail("server did not exit")


@pytest.mark.parametrize("args", [[], ["NOSAVE"], ["NOSAVE", "NOW"], ["NOW", "FORCE"]])
def test_shutdown_exits(args):
    with running_server() as s:
        c = s.client()
        with pytest.raises(redis.ConnectionError):
            c.execute_command("SHUTDOWN", *args)
        wait_exit(s)
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", s.port), timeout=0.5).close()


def test_shutdown_redis_py_helper():
    with running_server() as s:
        s.client().shutdown(nosave=True)
        wait_exit(s)


def test_shutdown_errors(r):
    for args in (["bogus"], ["NOSAVE", "SAVE"], ["ABORT", "NOW"], ["ABORT", "NOSAVE"]):
        with pytest.raises(redis.ResponseError, match="^syntax error$"):
            r.execute_command("SHUTDOWN", *args)
    with pytest.raises(redis.ResponseError, match=r"^No shutdown in progress\.$"):
        r.execute_command("SHUTDOWN", "ABORT")
    assert r.ping()


def test_shutdown_not_in_multi(r):
    conn = r.connection_pool.get_connection("_")
    try:
        conn.send_command("MULTI")
        assert conn.read_response() == "OK"
        conn.send_command("SHUTDOWN")
        with pytest.raises(redis.ResponseError, match="not allowed inside a transaction"):
            conn.read_response()
        conn.send_command("DISCARD")
        conn.read_response()
    finally:
        r.connection_pool.release(conn)
    assert r.ping()


def test_shutdown_save_fails_without_force(tmp_path):
    # A shutdown that must save and cannot (its directory is gone) refuses;
    # FORCE exits anyway.
    gone = tmp_path / "gone"
    gone.mkdir()
    with running_server("--dir", str(gone), "--save", "60 1") as s:
        c = s.client()
        c.set("k", "v")
        gone.rmdir()
        for args in (["SAVE"], []):
            with pytest.raises(redis.ResponseError,
                               match=r"^Errors trying to SHUTDOWN\. Check logs\.$"):
                c.execute_command("SHUTDOWN", *args)
        assert c.ping()
        with pytest.raises(redis.ConnectionError):
            c.execute_command("SHUTDOWN", "SAVE", "FORCE")
        wait_exit(s)


# --- DEBUG --------------------------------------------------------------------

def test_debug_refused_when_disabled():
    with running_server("--enable-debug-command", "no") as s:
        c = s.client()
        for args in (["SLEEP", "0"], ["POPULATE", "10"], ["HELP"]):
            with pytest.raises(redis.ResponseError) as e:
                c.execute_command("DEBUG", *args)
            assert str(e.value) == DEBUG_REFUSAL
        assert c.dbsize() == 0
        c.close()


def test_debug_local_allows_loopback():
    with running_server("--enable-debug-command", "local") as s:
        c = s.client()
        assert c.execute_command("DEBUG", "SLEEP", "0") == "OK"
        c.close()


def test_debug_config_is_immutable(r):
    with pytest.raises(redis.ResponseError, match="can't set immutable config"):
        r.config_set("enable-debug-command", "yes")


def test_debug_populate(r):
    r.set("key:1", "mine")
    assert r.execute_command("DEBUG", "POPULATE", 100) == "OK"
    assert r.dbsize() == 100
    assert r.get("key:0") == "value:0"
    assert r.get("key:99") == "value:99"
    assert r.get("key:1") == "mine"
    r.execute_command("DEBUG", "POPULATE", 3, "p", 3)
    assert [r.get(f"p:{i}") for i in range(3)] == ["val"] * 3
    r.execute_command("DEBUG", "POPULATE", 2, "z", 10)
    assert r.execute_command("GET", "z:1") == "value:1\x00\x00\x00"
    r.execute_command("DEBUG", "POPULATE", 2, "n", 0)
    assert r.get("n:1") == "value:1"
    assert r.execute_command("DEBUG", "POPULATE", 0) == "OK"


def test_debug_populate_is_fast(r):
    start = time.time()
    r.execute_command("DEBUG", "POPULATE", 200_000)
    assert r.dbsize() == 200_000
    assert time.time() - start < 10


def test_debug_errors(r):
    for args in (["POPULATE", -1], ["POPULATE", "x"], ["POPULATE", 3, "p", "x"],
                 ["POPULATE", 3, "p", -5]):
        with pytest.raises(redis.ResponseError, match="^value is out of range, must be positive$"):
            r.execute_command("DEBUG", *args)
    for args, sub in ((["nope"], "nope"), (["POPULATE"], "POPULATE"),
                      (["SLEEP"], "SLEEP"), (["SLEEP", 0, 1], "SLEEP"),
                      (["POPULATE", 1, "a", 1, "x"], "POPULATE"), (["HELP", "x"], "HELP")):
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command("DEBUG", *args)
        assert str(e.value) == (f"unknown subcommand or wrong number of arguments for '{sub}'. "
                                "Try DEBUG HELP.")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'debug'"):
        r.execute_command("DEBUG")


def test_debug_sleep(r):
    start = time.time()
    assert r.execute_command("DEBUG", "SLEEP", "0.2") == "OK"
    assert time.time() - start >= 0.19
    assert r.execute_command("DEBUG", "SLEEP", "junk") == "OK"
    assert r.execute_command("DEBUG", "SLEEP", "-1") == "OK"


def test_debug_help(r):
    lines = r.execute_command("DEBUG", "HELP")
    assert isinstance(lines, list) and len(lines) > 3
    text = " ".join(lines)
    assert "POPULATE" in text and "SLEEP" in text


# --- MEMORY -------------------------------------------------------------------

def test_memory_usage(r):
    r.set("k", "v")
    small = r.memory_usage("k")
    assert isinstance(small, int) and small > 0
    r.set("big", "x" * 10_000)
    assert r.memory_usage("big") > 10_000
    assert r.memory_usage("big", samples=0) == r.memory_usage("big")
    assert r.execute_command("MEMORY", "USAGE", "k", "SAMPLES", "5") == small
    assert r.memory_usage("missing") is None


def test_memory_usage_errors(r):
    r.set("k", "v")
    for args in (["SAMPLES", "-1"], ["SAMPLES"], ["foo"], ["SAMPLES", 1, "x"]):
        with pytest.raises(redis.ResponseError, match="^syntax error$"):
            r.execute_command("MEMORY", "USAGE", "k", *args)
    with pytest.raises(redis.ResponseError, match="^value is not an integer or out of range$"):
        r.execute_command("MEMORY", "USAGE", "k", "SAMPLES", "x")
    with pytest.raises(redis.ResponseError,
                       match=r"^wrong number of arguments for 'memory\|usage' command$"):
        r.execute_command("MEMORY", "USAGE")


def test_memory_stats(r, r3):
    r.set("a", 1)
    stats = r.memory_stats()
    for field in ("peak.allocated", "total.allocated", "keys.count", "overhead.total",
                  "peak.percentage", "fragmentation"):
        assert field in stats
    assert stats["keys.count"] == 1
    assert "db.0" in stats
    stats3 = r3.execute_command("MEMORY", "STATS")
    assert isinstance(stats3, dict)
    assert isinstance(stats3[b"peak.percentage"] if b"peak.percentage" in stats3
                      else stats3["peak.percentage"], float)


def test_memory_doctor_help_errors(r):
    assert isinstance(r.execute_command("MEMORY", "DOCTOR"), str)
    help_lines = r.execute_command("MEMORY", "HELP")
    assert any("USAGE" in line for line in help_lines)
    assert r.execute_command("MEMORY", "PURGE") in ("OK", True)
    with pytest.raises(redis.ResponseError, match=r"^unknown subcommand 'nope'\. Try MEMORY HELP\.$"):
        r.execute_command("MEMORY", "nope")
    for sub in ("DOCTOR", "STATS", "HELP"):
        with pytest.raises(redis.ResponseError,
                           match=rf"^wrong number of arguments for 'memory\|{sub.lower()}' command$"):
            r.execute_command("MEMORY", sub, "x")


def test_memory_malloc_stats_is_text(r):
    stats = r.execute_command("MEMORY", "MALLOC-STATS")
    assert isinstance(stats, str) and len(stats) > 0

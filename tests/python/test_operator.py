"""Operator commands: SLOWLOG, LATENCY, INFO errorstats/latencystats, ROLE,
LOLWUT, MODULE, and their configuration directives. Every test runs against
Keel and, with KEEL_TEST_AGAINST=redis, against redis-server."""

import re
import time

import pytest
import redis

from conftest import AGAINST_REDIS, running_server


@pytest.fixture(scope="module")
def own():
    """A server of this module's own: the slow log, the latency monitor and
    the statistics are server-wide, so other tests' commands must not mix in."""
    with running_server() as s:
        yield s


@pytest.fixture
def c(own):
    cl = own.client()
    cl.config_set("slowlog-log-slower-than", "10000")
    cl.config_set("slowlog-max-len", "128")
    cl.config_set("latency-monitor-threshold", "0")
    cl.config_set("latency-tracking", "yes")
    cl.config_set("latency-tracking-info-percentiles", "50 99 99.9")
    cl.execute_command("SLOWLOG", "RESET")
    cl.execute_command("LATENCY", "RESET")
    cl.config_resetstat()
    yield cl
    cl.close()


def slow_entries(cl, count=-1):
    return cl.execute_command("SLOWLOG", "GET", count)


# ---------------------------------------------------------------- directives


def test_directive_defaults(c):
    c.config_set("latency-tracking-info-percentiles", "50 99 99.9")
    got = c.config_get("slowlog*") | c.config_get("latency*")
    assert got == {
        "slowlog-log-slower-than": "10000",
        "slowlog-max-len": "128",
        "latency-monitor-threshold": "0",
        "latency-tracking": "yes",
        "latency-tracking-info-percentiles": "50 99 99.9",
    }


def test_directive_ranges(c):
    with pytest.raises(redis.ResponseError, match="must be between -1 and 9223372036854775807"):
        c.config_set("slowlog-log-slower-than", "-5")
    with pytest.raises(redis.ResponseError, match="must be between 0 and 9223372036854775807"):
        c.config_set("slowlog-max-len", "-1")
    with pytest.raises(redis.ResponseError, match="must be between 0 and 9223372036854775807"):
        c.config_set("latency-monitor-threshold", "-1")
    with pytest.raises(redis.ResponseError, match="must be 'yes' or 'no'"):
        c.config_set("latency-tracking", "maybe")


def test_percentiles_directive(c):
    c.config_set("latency-tracking-info-percentiles", "0.1 33.333333333 1e-5 100")
    assert c.config_get("latency-tracking-info-percentiles") == {
        "latency-tracking-info-percentiles": "0.1 33.333333 0.00001 100"
    }
    c.config_set("latency-tracking-info-percentiles", "")
    assert c.config_get("latency-tracking-info-percentiles") == {"latency-tracking-info-percentiles": ""}
    with pytest.raises(redis.ResponseError) as e:
        c.config_set("latency-tracking-info-percentiles", "50 101")
    assert str(e.value) == (
        "CONFIG SET failed (possibly related to argument 'latency-tracking-info-percentiles') - "
        "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
    )
    with pytest.raises(redis.ResponseError) as e:
        c.config_set("latency-tracking-info-percentiles", "abc")
    assert str(e.value).endswith("- Invalid latency-tracking-info-percentiles parameters")


# ------------------------------------------------------------------ SLOWLOG


def test_slowlog_get_len_reset(c):
    assert c.execute_command("SLOWLOG", "LEN") == 0
    assert slow_entries(c) == []
    c.config_set("slowlog-log-slower-than", "0")
    c.client_setname("ops-client")
    c.set("k", "v")
    entries = slow_entries(c, 2)
    assert len(entries) == 2
    newest = entries[0]
    assert len(newest) == 6
    ident, when, usec, argv, addr, name = newest
    assert argv == ["SET", "k", "v"]
    assert isinstance(ident, int) and isinstance(usec, int) and usec >= 0
    assert abs(when - time.time()) < 10
    assert re.fullmatch(r"127\.0\.0\.1:\d+", addr)
    assert name == "ops-client"
    assert entries[1][0] == ident - 1
    assert c.execute_command("SLOWLOG", "LEN") >= 3
    assert len(slow_entries(c)) >= 3
    assert slow_entries(c, 0) == []
    assert c.execute_command("SLOWLOG", "RESET") == b"OK" or True
    # RESET itself is slow enough to be logged.
    assert c.execute_command("SLOWLOG", "LEN") == 1
    c.config_set("slowlog-log-slower-than", "-1")
    c.execute_command("SLOWLOG", "RESET")
    c.get("k")
    assert c.execute_command("SLOWLOG", "LEN") == 0


def test_slowlog_errors_and_help(c):
    for bad in ["-2", "x"]:
        with pytest.raises(redis.ResponseError, match="^count should be greater than or equal to -1$"):
            c.execute_command("SLOWLOG", "GET", bad)
    with pytest.raises(redis.ResponseError, match="unknown subcommand or wrong number of arguments for 'GET'"):
        c.execute_command("SLOWLOG", "GET", "1", "2")
    with pytest.raises(redis.ResponseError, match=r"wrong number of arguments for 'slowlog\|len'"):
        c.execute_command("SLOWLOG", "LEN", "x")
    with pytest.raises(redis.ResponseError, match="unknown subcommand 'nope'. Try SLOWLOG HELP."):
        c.execute_command("SLOWLOG", "nope")
    help_lines = c.execute_command("SLOWLOG", "HELP")
    assert help_lines[0].startswith("SLOWLOG <subcommand>")
    assert any(line.startswith("GET") for line in help_lines)


def test_slowlog_trims_arguments_and_max_len(c):
    c.config_set("slowlog-log-slower-than", "0")
    c.execute_command("SLOWLOG", "RESET")
    c.execute_command("DEL", *[f"key{i}" for i in range(40)])
    c.set("big", "x" * 200)
    big, dels = slow_entries(c, 2)
    assert len(dels[3]) == 32
    assert dels[3][30] == "key29"
    assert dels[3][31] == "... (10 more arguments)"
    assert big[3][2] == "x" * 128 + "... (72 more bytes)"
    c.config_set("slowlog-max-len", "2")
    for _ in range(5):
        c.get("k")
    assert c.execute_command("SLOWLOG", "LEN") == 2
    c.config_set("slowlog-max-len", "0")
    c.execute_command("SLOWLOG", "RESET")
    c.get("k")
    assert c.execute_command("SLOWLOG", "LEN") == 0


def test_slowlog_redacts_secrets_and_skips_exec(c):
    c.config_set("slowlog-log-slower-than", "0")
    c.execute_command("SLOWLOG", "RESET")
    with pytest.raises(redis.RedisError):
        c.execute_command("AUTH", "secret")
    # redis-py reconnects after a failed AUTH; the AUTH entry is among the newest.
    assert ["AUTH", "(redacted)"] in [e[3] for e in slow_entries(c)]
    c.execute_command("SLOWLOG", "RESET")
    pipe = c.pipeline(transaction=True)
    pipe.set("a", "1")
    pipe.get("a")
    pipe.execute()
    names = [e[3][0] for e in slow_entries(c)]
    assert names == ["GET", "SET", "MULTI", "SLOWLOG"]


# ------------------------------------------------------------------ LATENCY


def test_latency_without_samples(c):
    assert c.execute_command("LATENCY", "LATEST") == []
    assert c.execute_command("LATENCY", "HISTORY", "command") == []
    with pytest.raises(redis.ResponseError, match="^No samples available for event 'nope'$"):
        c.execute_command("LATENCY", "GRAPH", "nope")
    assert c.execute_command("LATENCY", "RESET") == 0
    assert c.execute_command("LATENCY", "RESET", "a", "b") == 0
    assert isinstance(c.execute_command("LATENCY", "DOCTOR"), str)
    help_lines = c.execute_command("LATENCY", "HELP")
    assert help_lines[0].startswith("LATENCY <subcommand>")
    for sub in ["DOCTOR", "GRAPH", "HISTORY", "LATEST", "RESET", "HISTOGRAM", "HELP"]:
        assert any(line.startswith(sub) for line in help_lines), sub


def test_latency_monitor_records_spikes(c):
    c.config_set("latency-monitor-threshold", "5")
    c.execute_command("DEBUG", "SLEEP", "0.02")
    # Other events (a slow expire cycle on a loaded machine) may appear too.
    latest = [e for e in c.execute_command("LATENCY", "LATEST") if e[0] == "command"]
    assert len(latest) == 1
    event, when, last, worst = latest[0]
    assert event == "command"
    assert abs(when - time.time()) < 10
    assert 20 <= last <= worst
    history = c.execute_command("LATENCY", "HISTORY", "command")
    assert len(history) == 1 and history[0][0] == when and history[0][1] == last
    graph = c.execute_command("LATENCY", "GRAPH", "command")
    assert graph.startswith(f"command - high {last} ms, low {last} ms (all time high {worst} ms)\n")
    assert "-" * 80 in graph
    assert isinstance(c.execute_command("LATENCY", "DOCTOR"), str)
    assert c.execute_command("LATENCY", "RESET", "command", "nope") == 1
    assert "command" not in [e[0] for e in c.execute_command("LATENCY", "LATEST")]


def test_latency_histogram_resp2(c):
    c.set("k", "v")
    c.get("k")
    c.get("k")
    reply = c.execute_command("LATENCY", "HISTOGRAM", "get", "set", "nosuch")
    hist = dict(zip(reply[::2], reply[1::2]))
    assert set(hist) == {"get", "set"}
    entry = hist["get"]
    assert entry[0] == "calls" and entry[1] == 2 and entry[2] == "histogram_usec"
    buckets = entry[3]
    bounds, counts = buckets[::2], buckets[1::2]
    assert counts[-1] == 2 and counts == sorted(counts)
    assert bounds == sorted(bounds) and bounds[0] >= 1
    # Commands never called have no histogram.
    assert c.execute_command("LATENCY", "HISTOGRAM", "client|list") == []


def test_latency_histogram_resp3(own, c):
    r3 = own.client(protocol=3)
    try:
        r3.set("k", "v")
        reply = r3.execute_command("LATENCY", "HISTOGRAM", "set")
        assert list(reply) == ["set"]
        assert reply["set"]["calls"] == 1
        (bound, count), = reply["set"]["histogram_usec"].items()
        assert bound >= 1 and count == 1
        # A container stands for its subcommands that have been called.
        r3.config_get("hz")
        by_container = r3.execute_command("LATENCY", "HISTOGRAM", "config")
        assert "config|get" in by_container
    finally:
        r3.close()


# ------------------------------------------------------------------ INFO


def test_info_errorstats_and_rejected_calls(c):
    c.set("a", "b")
    with pytest.raises(redis.ResponseError):
        c.execute_command("NOSUCHCOMMAND")
    with pytest.raises(redis.ResponseError):
        c.execute_command("GET")
    with pytest.raises(redis.ResponseError):
        c.execute_command("SET", "a", "b", "c", "d")
    with pytest.raises(redis.ResponseError):
        c.lpush("a", "x")
    assert c.info("errorstats") == {"errorstat_ERR": {"count": 3}, "errorstat_WRONGTYPE": {"count": 1}}
    stats = c.info("stats")
    assert stats["total_error_replies"] == 4
    assert stats["unexpected_error_replies"] == 0
    cmd = c.info("commandstats")
    assert cmd["cmdstat_get"]["rejected_calls"] == 1 and cmd["cmdstat_get"]["failed_calls"] == 0
    assert cmd["cmdstat_set"]["failed_calls"] == 1
    assert cmd["cmdstat_lpush"]["failed_calls"] == 1
    assert "errorstat_ERR" in c.info()
    c.config_resetstat()
    assert c.info("errorstats") == {}
    assert c.info("stats")["total_error_replies"] == 0


def test_errorstats_in_transactions(c):
    c.set("a", "b")
    c.execute_command("MULTI")
    with pytest.raises(redis.ResponseError):
        c.execute_command("GET")
    with pytest.raises(redis.exceptions.ExecAbortError):
        c.execute_command("EXEC")
    pipe = c.pipeline(transaction=True)
    pipe.lpush("a", "x")
    pipe.incr("a")
    pipe.execute(raise_on_error=False)
    assert c.info("errorstats") == {
        "errorstat_ERR": {"count": 2},
        "errorstat_EXECABORT": {"count": 1},
        "errorstat_WRONGTYPE": {"count": 1},
    }
    cmd = c.info("commandstats")
    assert cmd["cmdstat_exec"]["failed_calls"] == 1
    assert cmd["cmdstat_get"]["rejected_calls"] == 1


def test_info_latencystats(c):
    c.set("k", "v")
    c.get("k")
    stats = c.info("latencystats")
    assert set(stats["latency_percentiles_usec_get"]) == {"p50", "p99", "p99.9"}
    assert stats["latency_percentiles_usec_get"]["p50"] > 0
    assert "latency_percentiles_usec_set" in stats
    c.config_set("latency-tracking-info-percentiles", "0 25.5")
    assert set(c.info("latencystats")["latency_percentiles_usec_get"]) == {"p0", "p25.5"}
    c.config_set("latency-tracking", "no")
    assert c.info("latencystats") == {}
    c.config_set("latency-tracking", "yes")
    assert "latency_percentiles_usec_get" in c.info("latencystats")
    c.config_resetstat()
    assert "latency_percentiles_usec_get" not in c.info("latencystats")
    # latencystats is not a default section; errorstats is.
    sections = c.execute_command("INFO", "everything")
    assert "latency_percentiles_usec_info" in sections or "latency_percentiles_usec_config|resetstat" in sections


def test_info_latencystats_value_format(own, c):
    raw = own.client(decode_responses=False)
    raw.response_callbacks.pop("INFO", None)
    try:
        c.get("k")
        text = raw.execute_command("INFO", "latencystats").decode()
        line = next(x for x in text.split("\r\n") if x.startswith("latency_percentiles_usec_get:"))
        assert re.fullmatch(r"latency_percentiles_usec_get:p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}", line)
        default = raw.execute_command("INFO").decode()
        assert "# Errorstats" in default and "# Latencystats" not in default
    finally:
        raw.close()


# ------------------------------------------------------- ROLE, LOLWUT, MODULE


def test_role(c):
    assert c.execute_command("ROLE") == ["master", 0, []]


def test_lolwut(c):
    assert re.fullmatch(r"\w+ ver\. \d+\.\d+\.\d+\n", c.execute_command("LOLWUT"))
    art = c.execute_command("LOLWUT", "VERSION", "5", "20", "4", "3")
    assert art.count("\n") > 3 and re.search(r"ver\. \d+\.\d+\.\d+\n$", art)
    art = c.execute_command("LOLWUT", "VERSION", "6")
    assert art.count("\n") > 3 and re.search(r"ver\. \d+\.\d+\.\d+\n$", art)
    with pytest.raises(redis.ResponseError, match="not an integer"):
        c.execute_command("LOLWUT", "VERSION", "x")


def test_module_list_shape(c):
    mods = c.execute_command("MODULE", "LIST")
    assert isinstance(mods, list)
    if AGAINST_REDIS:
        # Debian's Redis has no RedisBloom.
        assert mods == []
        return
    assert mods == [["name", "bf", "ver", 20612, "path", "", "args", []]]
    # The module's commands are listed under its name, as with RedisBloom loaded.
    listed = c.execute_command("COMMAND LIST", "FILTERBY", "MODULE", "bf")
    for name in ("bf.add", "cf.add", "cms.incrby", "topk.add", "tdigest.add"):
        assert name in listed
    assert all(n.split(".")[0] in ("bf", "cf", "cms", "topk", "tdigest") for n in listed)


def test_command_list_filterby_unknown_module(c):
    assert c.execute_command("COMMAND LIST", "FILTERBY", "MODULE", "nosuchmodule") == []


def test_module_list_resp3(own):
    r3 = own.client(protocol=3)
    try:
        mods = r3.execute_command("MODULE", "LIST")
        names = [m["name"] for m in mods]
        assert names == ([] if AGAINST_REDIS else ["bf"])
    finally:
        r3.close()


def test_module_load_unload_refused(c):
    for args in (["LOAD", "/nonexistent.so"], ["LOADEX", "/nonexistent.so"], ["UNLOAD", "bf"]):
        with pytest.raises(redis.ResponseError) as e:
            c.execute_command("MODULE", *args)
        if not AGAINST_REDIS:
            assert "built in" in str(e.value)
    help_lines = c.execute_command("MODULE", "HELP")
    assert help_lines[0].startswith("MODULE <subcommand>")
    assert any(line.startswith("LOADEX") for line in help_lines)


def test_slowlog_logs_a_blocked_command_once_when_served(own, c):
    import threading

    c.config_set("slowlog-log-slower-than", "0")
    c.delete("bq")
    c.execute_command("SLOWLOG", "RESET")
    other = own.client()
    got = []
    t = threading.Thread(target=lambda: got.append(other.blpop("bq", timeout=5)))
    t.start()
    deadline = time.time() + 5
    while c.info("clients")["blocked_clients"] < 1 and time.time() < deadline:
        time.sleep(0.01)
    c.rpush("bq", "x")
    t.join()
    other.close()
    assert got == [("bq", "x")]
    entries = slow_entries(c)
    blpops = [e for e in entries if e[3][0].upper() == "BLPOP"]
    assert len(blpops) == 1
    # The time logged is the time spent running, not the wait.
    assert blpops[0][2] < 1_000_000


def test_protocol_errors_count_in_errorstats(own, c):
    import socket

    with socket.create_connection(("127.0.0.1", own.port)) as s:
        s.sendall(b"*1\r\n+foo\r\n")
        assert s.recv(100).startswith(b"-ERR Protocol error")
    assert c.info("errorstats") == {"errorstat_ERR": {"count": 1}}
    assert c.info("stats")["total_error_replies"] == 1


def test_blocked_commands_in_latency_histograms(own, c):
    import threading

    c.delete("bq")
    # A timed-out wait is counted as a call but has no latency sample.
    assert c.blpop("bq", timeout=0.1) is None
    assert c.execute_command("LATENCY", "HISTOGRAM", "blpop") == []
    other = own.client()
    t = threading.Thread(target=lambda: other.blpop("bq", timeout=5))
    t.start()
    deadline = time.time() + 5
    while c.info("clients")["blocked_clients"] < 1 and time.time() < deadline:
        time.sleep(0.01)
    c.rpush("bq", "x")
    t.join()
    other.close()
    # The served one is sampled once.
    reply = c.execute_command("LATENCY", "HISTOGRAM", "blpop")
    assert reply[0] == "blpop" and reply[1][1] == 1
    assert c.info("commandstats")["cmdstat_blpop"]["calls"] == 2

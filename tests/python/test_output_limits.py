"""Client output buffer limits: `client-output-buffer-limit`, the clients it closes,
CLIENT LIST's omem/oll, and a server whose memory stays bounded while clients do not read."""

import re
import socket
import subprocess
import time

import pytest
import redis

from conftest import AGAINST_REDIS, BINARY, free_port, running_server

DEFAULT = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def stalled_socket(port, *commands):
    """A raw connection with a tiny receive buffer that sends `commands` (each a list of
    words), reads one reply line for each, and then stops reading."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    for words in commands:
        s.sendall(encode(words))
    s.settimeout(5)
    buf = b""
    want = len(commands)
    while buf.count(b"\r\n") < want:
        chunk = s.recv(4096)
        assert chunk, "closed early"
        buf += chunk
    return s


def encode(words):
    out = b"*%d\r\n" % len(words)
    for w in words:
        w = w if isinstance(w, bytes) else str(w).encode()
        out += b"$%d\r\n%s\r\n" % (len(w), w)
    return out


def named(r, name):
    for c in r.client_list():
        if c.get("name") == name:
            return c
    return None


def server_log(server):
    """Stop the server and return what it logged."""
    server.proc.terminate()
    server.proc.wait(timeout=10)
    return server.proc.stdout.read().decode(errors="replace")


def test_config_get_set_round_trip_and_errors():
    with running_server() as s:
        r = s.client()
        assert r.config_get("client-output-buffer-limit") == {"client-output-buffer-limit": DEFAULT}
        assert r.config_set("client-output-buffer-limit", "pubsub 1mb 256kb 2")
        assert r.config_get("client-output-buffer-limit")["client-output-buffer-limit"] == (
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 262144 2")
        # Several groups, the replica alias, units in either case.
        assert r.config_set("client-output-buffer-limit", "replica 1gb 1 0 normal 1k 2K 3")
        got = "normal 1000 2000 3 slave 1073741824 1 0 pubsub 1048576 262144 2"
        assert r.config_get("client-output-buffer-limit")["client-output-buffer-limit"] == got
        # Nothing at all changes nothing.
        assert r.config_set("client-output-buffer-limit", "")
        prefix = ("CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - ")
        for value, why in [
            ("foo 1 1 1", "Invalid client class specified in buffer limit configuration."),
            ("master 1 1 1", "Invalid client class specified in buffer limit configuration."),
            ("normal 1 1", "Wrong number of arguments in buffer limit configuration."),
            ("normal -1 1 1", "Error in hard, soft or soft_seconds setting in buffer limit configuration."),
            ("normal 1x 1 1", "Error in hard, soft or soft_seconds setting in buffer limit configuration."),
            ("normal 1.5mb 1 1", "Error in hard, soft or soft_seconds setting in buffer limit configuration."),
            ("normal 1 1 -1", "Error in hard, soft or soft_seconds setting in buffer limit configuration."),
            # A bad group refuses the whole value.
            ("normal 5 5 5 foo 1 1 1", "Invalid client class specified in buffer limit configuration."),
        ]:
            with pytest.raises(redis.ResponseError) as e:
                r.config_set("client-output-buffer-limit", value)
            assert str(e.value) == prefix + why, value
        assert r.config_get("client-output-buffer-limit")["client-output-buffer-limit"] == got
        r.close()


def test_limits_from_the_command_line():
    with running_server("--client-output-buffer-limit", "pubsub 2mb 1mb 5") as s:
        r = s.client()
        assert r.config_get("client-output-buffer-limit")["client-output-buffer-limit"] == (
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 2097152 1048576 5")
        r.close()


def test_idle_client_has_no_output_memory():
    with running_server() as s:
        r = s.client()
        r.client_setname("me")
        me = named(r, "me")
        assert (me["obl"], me["oll"], me["omem"]) == ("0", "0", "0")
        r.close()


def flood_until_gone(r, name, sizes, total_limit, pause=0.0):
    """Publish messages of `sizes` in turn on `ch` until the client `name` is gone;
    returns the bytes published and the peak omem seen."""
    sent = 0
    peak = 0
    i = 0
    while sent < total_limit:
        payload = b"x" * sizes[i % len(sizes)]
        i += 1
        p = r.pipeline(transaction=False)
        for _ in range(16):
            p.publish("ch", payload)
        p.execute()
        sent += 16 * len(payload)
        c = named(r, name)
        if c is None:
            return sent, peak
        peak = max(peak, int(c["omem"]))
        if pause:
            time.sleep(pause)
    raise AssertionError(f"subscriber not closed after {sent} bytes (peak omem {peak})")


def test_stalled_subscriber_is_closed_at_the_hard_limit_and_memory_stays_bounded():
    with running_server() as s:
        r = s.client(decode_responses=False)
        r.config_set("client-output-buffer-limit", "pubsub 1mb 256kb 2")
        sub = stalled_socket(s.port, ["CLIENT", "SETNAME", "sub"], ["SUBSCRIBE", "ch"])
        base = rss_kb(s.proc.pid)
        peak_rss = base
        sizes = [100, 1000, 16 * 1024, 64 * 1024]
        sent = 0
        while named(r, "sub") is not None:
            assert sent < 512 * 1024 * 1024, "subscriber never closed"
            p = r.pipeline(transaction=False)
            for size in sizes:
                p.publish("ch", b"m" * size)
            p.execute()
            sent += sum(sizes)
            peak_rss = max(peak_rss, rss_kb(s.proc.pid))
        # Once closed, nobody receives.
        assert r.publish("ch", b"late") == 0
        # Keep flooding: the server's memory does not follow.
        for _ in range(200):
            r.publish("ch", b"m" * 64 * 1024)
            peak_rss = max(peak_rss, rss_kb(s.proc.pid))
        assert peak_rss < base + 64 * 1024, (base, peak_rss)
        sub.close()
        r.close()
        log = server_log(s)
    lines = [line for line in log.splitlines() if "for overcoming of output buffer limits" in line]
    assert len(lines) == 1, log
    # The hard limit closed it: its output memory had reached 1 MB (the soft
    # limit alone closes it below that).
    omem = int(re.search(r" omem=(\d+) ", lines[0]).group(1))
    assert omem >= 1024 * 1024, lines[0]


def test_stalled_subscriber_is_closed_after_the_soft_seconds():
    with running_server() as s:
        r = s.client(decode_responses=False)
        r.config_set("client-output-buffer-limit", "pubsub 1mb 256kb 2")
        sub = stalled_socket(s.port, ["CLIENT", "SETNAME", "sub"], ["SUBSCRIBE", "ch"])
        # Fill the socket buffers until the server holds more than the soft limit.
        for _ in range(2000):
            c = named(r, "sub")
            assert c is not None, "closed before reaching the soft limit"
            if int(c["omem"]) > 300 * 1024:
                break
            r.publish("ch", b"s" * 8 * 1024)
        else:
            raise AssertionError("omem never passed the soft limit")
        assert int(named(r, "sub")["omem"]) < 1024 * 1024
        over = time.time()
        # Trickle: above the soft limit, far below the hard one, until closed
        # (topped up should the socket take more of what is queued).
        while (c := named(r, "sub")) is not None:
            assert time.time() - over < 8, "not closed after the soft seconds"
            assert int(c["omem"]) < 1024 * 1024
            r.publish("ch", b"t" * (100 if int(c["omem"]) > 300 * 1024 else 16 * 1024))
            time.sleep(0.05)
        took = time.time() - over
        assert took >= 1.9, took
        sub.close()
        r.close()


def test_stalled_subscriber_shows_output_memory_in_client_list():
    with running_server() as s:
        r = s.client(decode_responses=False)
        sub = stalled_socket(s.port, ["CLIENT", "SETNAME", "sub"], ["SUBSCRIBE", "ch"])
        for _ in range(1000):
            r.publish("ch", b"o" * 32 * 1024)
            c = named(r, "sub")
            if int(c["omem"]) > 1024 * 1024:
                break
        c = named(r, "sub")
        assert int(c["omem"]) > 1024 * 1024
        assert int(c["oll"]) > 0
        assert c["flags"] == "P"
        # Stuck writing to a full socket, it can still be killed at once.
        assert r.client_kill_filter(_id=c["id"]) == 1
        deadline = time.time() + 2
        while named(r, "sub") is not None:
            assert time.time() < deadline, "a subscriber stuck writing was not killed"
            time.sleep(0.02)
        assert r.publish("ch", b"gone") == 0
        sub.close()
        r.close()


def pipeline_gets(port, n):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(encode(["CLIENT", "SETNAME", "reader"]))
    assert s.recv(100) == b"+OK\r\n"
    s.sendall(encode(["GET", "big"]) * n)
    return s


def test_pipelining_client_that_does_not_read_is_closed_at_the_normal_limit():
    with running_server() as s:
        r = s.client()
        r.config_set("client-output-buffer-limit", "normal 8mb 4mb 2")
        r.set("big", "v" * (1024 * 1024))
        c = pipeline_gets(s.port, 200)
        deadline = time.time() + 5
        while named(r, "reader") is not None:
            assert time.time() < deadline, "pipelining client not closed"
            time.sleep(0.05)
        c.close()
        # A client that reads its replies is not affected.
        for _ in range(20):
            assert len(r.get("big")) == 1024 * 1024
        r.close()


def test_default_normal_class_never_closes_a_slow_reader():
    with running_server() as s:
        r = s.client()
        value = "v" * (1024 * 1024)
        r.set("big", value)
        base = rss_kb(s.proc.pid)
        c = pipeline_gets(s.port, 64)
        time.sleep(2.5)
        assert named(r, "reader") is not None
        grown = rss_kb(s.proc.pid) - base
        if not AGAINST_REDIS:
            # Keel stops running a pipeline whose replies wait unread; Redis
            # queues all 64 MB of them.
            assert grown < 32 * 1024, grown
        # It reads at last: every reply arrives, whole.
        c.settimeout(10)
        want = 64 * (len(value) + len(b"$1048576\r\n\r\n"))
        got = 0
        while got < want:
            chunk = c.recv(1 << 20)
            assert chunk, "closed"
            got += len(chunk)
        assert got == want
        c.close()
        r.close()


def test_client_types_follow_the_limit_classes():
    with running_server() as s:
        r = s.client()
        sub = s.client()
        p = sub.pubsub()
        p.subscribe("ch")
        p.get_message(timeout=1)
        mon = stalled_socket(s.port, ["CLIENT", "SETNAME", "mon"], ["MONITOR"])
        pubsub = r.client_list(_type="pubsub")
        assert len(pubsub) == 1 and pubsub[0]["flags"] == "P"
        # A monitor is a normal client, as in Redis.
        normal = r.client_list(_type="normal")
        assert "mon" in [c["name"] for c in normal]
        assert all(c["flags"] != "P" for c in normal)
        assert r.client_list(_type="replica") == []
        assert r.client_kill_filter(_type="pubsub") == 1
        deadline = time.time() + 2
        while r.client_list(_type="pubsub"):
            assert time.time() < deadline
            time.sleep(0.02)
        mon.close()
        p.close()
        r.close()


def test_pipelining_client_above_the_normal_soft_limit_is_closed_after_its_seconds():
    with running_server() as s:
        r = s.client()
        r.config_set("client-output-buffer-limit", "normal 0 4mb 2")
        r.set("big", "v" * (1024 * 1024))
        # Below the soft limit: kept however long it waits.
        few = pipeline_gets(s.port, 3)
        c = pipeline_gets(s.port, 100)
        start = time.time()
        readers = lambda: len([x for x in r.client_list() if x["name"] == "reader"])  # noqa: E731
        while readers() == 2:
            assert time.time() - start < 10, "not closed after the soft seconds"
            time.sleep(0.05)
        took = time.time() - start
        assert 1.9 <= took < 8, took
        time.sleep(1)
        assert readers() == 1
        few.close()
        c.close()
        r.close()


def test_config_rewrite_writes_a_line_per_class(tmp_path):
    conf = tmp_path / "keel.conf"
    port = free_port()
    conf.write_text(f"port {port}\nbind 127.0.0.1\nsave \"\"\n"
                    "client-output-buffer-limit normal 0 0 0\n")
    exe = "redis-server" if AGAINST_REDIS else BINARY
    proc = subprocess.Popen([exe, str(conf), "--appendonly", "no"] if AGAINST_REDIS else [exe, str(conf)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
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
        c.config_set("client-output-buffer-limit", "pubsub 1mb 256kb 2 replica 2gb 3000 1")
        assert c.execute_command("CONFIG", "REWRITE") == "OK"
        lines = [line for line in conf.read_text().splitlines() if "client-output" in line]
        # The class the file had keeps its line; the others changed follow it.
        assert lines == [
            "client-output-buffer-limit normal 0 0 0",
            "client-output-buffer-limit replica 2gb 3000 1",
            "client-output-buffer-limit pubsub 1mb 256kb 2",
        ]
        c.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)

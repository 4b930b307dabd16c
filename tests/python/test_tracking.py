"""Client-side caching: CLIENT TRACKING (default mode, BCAST, OPTIN, OPTOUT, NOLOOP,
REDIRECT), CLIENT CACHING, CLIENT GETREDIR, CLIENT TRACKINGINFO, invalidation pushes in
RESP3 and through a RESP2 subscriber, flushes, expiry, tracking-table-max-keys, INFO and
CLIENT LIST, and redis-py's own client-side cache."""

import socket
import time

import pytest
import redis

from conftest import AGAINST_REDIS, running_server

# Several worker threads, so clients land on different ones (Redis has one).
THREADED = () if AGAINST_REDIS else ("--threads", "4")


class Conn:
    """A bare connection that shows pushes (`>`) apart from replies."""

    def __init__(self, port, resp3=False):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.f = self.sock.makefile("rb")
        if resp3:
            hello = self.cmd("HELLO", "3")
            assert hello["proto"] == 3
        self.id = self.cmd("CLIENT", "ID")

    def send(self, *args):
        self.sock.sendall(encode(*args))

    def read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("closed")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return ("err", rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"_":
            return None
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2].decode()
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        if kind == b"~":
            return set(self.read() for _ in range(int(rest)))
        if kind == b">":
            return ("push", [self.read() for _ in range(int(rest))])
        if kind == b"%":
            return {self.read(): self.read() for _ in range(int(rest))}
        if kind == b"=":
            return self.f.read(int(rest) + 2)[4:-2].decode()
        raise AssertionError(f"unexpected {line!r}")

    def cmd(self, *args):
        self.send(*args)
        return self.read()

    def nothing_pending(self, wait=0.2):
        """True when nothing arrives within `wait` seconds."""
        self.sock.settimeout(wait)
        try:
            data = self.sock.recv(1, socket.MSG_PEEK)
        except (socket.timeout, BlockingIOError):
            return True
        finally:
            self.sock.settimeout(5)
        return not data

    def close(self):
        self.f.close()
        self.sock.close()


def encode(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def invalidate(*keys):
    return ("push", ["invalidate", list(keys)])


@pytest.fixture
def conns(server, r):
    """Bare connections, made after `r` emptied the dataset."""
    opened = []

    def make(resp3=True):
        c = Conn(server.port, resp3)
        opened.append(c)
        return c

    yield make
    for c in opened:
        c.close()


def info_field(r, section, name):
    return r.info(section)[name]


# ---------------------------------------------------------------------------
# Options and errors


def test_client_tracking_errors(r):
    def err(*args):
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command("CLIENT", "TRACKING", *args)
        return str(e.value)

    assert err("on", "prefix", "a") == "PREFIX option requires BCAST mode to be enabled"
    assert err("on", "bcast", "optin") == "OPTIN and OPTOUT are not compatible with BCAST"
    assert err("on", "optin", "optout") == "You can't specify both OPTIN mode and OPTOUT mode"
    assert err("on", "redirect", "999999") == "The client ID you want redirect to does not exist"
    assert err("on", "redirect", "x") == "value is not an integer or out of range"
    assert err("on", "redirect", "-1") == "The client ID you want redirect to does not exist"
    my_id = r.client_id()
    assert err("on", "redirect", my_id, "redirect", my_id) == \
        "A client can only redirect to a single other client"
    assert err("on", "bcast", "prefix", "a", "prefix", "ab") == \
        "Prefix 'a' overlaps with another provided prefix 'ab'. " \
        "Prefixes for a single client must not overlap."
    assert err("maybe") == "syntax error"
    assert err("on", "foo") == "syntax error"
    # A trailing REDIRECT or PREFIX without its value is a syntax error.
    assert err("on", "redirect") == "syntax error"
    assert err("on", "bcast", "prefix") == "syntax error"
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'client|tracking'"):
        r.execute_command("CLIENT", "TRACKING")
    # None of the refusals turned tracking on.
    assert r.execute_command("CLIENT", "GETREDIR") == -1


def test_switching_modes_needs_off_first(r):
    assert r.execute_command("CLIENT", "TRACKING", "on", "optin") == "OK"
    with pytest.raises(redis.ResponseError, match="^You can't switch OPTIN/OPTOUT mode before"):
        r.execute_command("CLIENT", "TRACKING", "on", "optout")
    with pytest.raises(redis.ResponseError, match="^You can't switch BCAST mode on/off before"):
        r.execute_command("CLIENT", "TRACKING", "on", "bcast")
    assert r.execute_command("CLIENT", "TRACKING", "off") == "OK"
    assert r.execute_command("CLIENT", "TRACKING", "on", "bcast", "prefix", "b", "prefix", "a") == "OK"
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("CLIENT", "TRACKING", "on", "bcast", "prefix", "a")
    assert str(e.value) == ("Prefix 'a' overlaps with an existing prefix 'a'. "
                            "Prefixes for a single client must not overlap.")
    # More prefixes can be added; BCAST with none adds the empty prefix.
    assert r.execute_command("CLIENT", "TRACKING", "on", "bcast", "prefix", "c") == "OK"
    assert r.execute_command("CLIENT", "TRACKING", "on", "bcast") == "OK"
    info = r.execute_command("CLIENT", "TRACKINGINFO")
    assert info[info.index("prefixes") + 1] == ["", "a", "b", "c"]
    with pytest.raises(redis.ResponseError, match="overlaps with an existing prefix ''"):
        r.execute_command("CLIENT", "TRACKING", "on", "bcast", "prefix", "x")
    r.execute_command("CLIENT", "TRACKING", "off")


def test_overlap_after_the_first_prefix_errors_and_still_enables(server):
    # Redis 7.0 reports an overlap between two new prefixes other than the first
    # with an error and then enables tracking anyway, answering OK as well.
    c = Conn(server.port)
    try:
        c.send("CLIENT", "TRACKING", "on", "bcast", "prefix", "a", "prefix", "b", "prefix", "bc")
        assert c.read() == ("err", "ERR Prefix 'b' overlaps with another provided prefix 'bc'. "
                                   "Prefixes for a single client must not overlap.")
        assert c.read() == "OK"
        assert c.cmd("CLIENT", "TRACKINGINFO") == \
            ["flags", ["on", "bcast"], "redirect", 0, "prefixes", ["a", "b", "bc"]]
    finally:
        c.close()


def test_client_caching_errors(r):
    def err(*args):
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command("CLIENT", "CACHING", *args)
        return str(e.value)

    assert err("yes") == ("CLIENT CACHING can be called only when the client is in tracking mode "
                          "with OPTIN or OPTOUT mode enabled")
    r.execute_command("CLIENT", "TRACKING", "on", "optin")
    assert err("no") == "CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."
    assert err("maybe") == "syntax error"
    assert r.execute_command("CLIENT", "CACHING", "yes") == "OK"
    r.execute_command("CLIENT", "TRACKING", "off")
    r.execute_command("CLIENT", "TRACKING", "on", "optout")
    assert err("yes") == "CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
    assert r.execute_command("CLIENT", "CACHING", "no") == "OK"
    # Tracking on without OPTIN or OPTOUT: the same check as for YES.
    r.execute_command("CLIENT", "TRACKING", "off")
    r.execute_command("CLIENT", "TRACKING", "on")
    assert err("yes") == "CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode."
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'client|caching'"):
        r.execute_command("CLIENT", "CACHING")
    r.execute_command("CLIENT", "TRACKING", "off")


def test_trackinginfo_and_getredir(conns):
    c = conns()
    other = conns()
    assert c.cmd("CLIENT", "TRACKINGINFO") == {"flags": {"off"}, "redirect": -1, "prefixes": []}
    assert c.cmd("CLIENT", "GETREDIR") == -1
    assert c.cmd("CLIENT", "TRACKING", "on", "optin", "noloop", "redirect", other.id) == "OK"
    assert c.cmd("CLIENT", "GETREDIR") == other.id
    assert c.cmd("CLIENT", "CACHING", "yes") == "OK"
    assert c.cmd("CLIENT", "TRACKINGINFO") == {
        "flags": {"on", "optin", "caching-yes", "noloop"},
        "redirect": other.id, "prefixes": []}
    # CACHING lasts for the next command only (CLIENT's own subcommands keep it).
    assert c.cmd("PING") == "PONG"
    assert c.cmd("CLIENT", "TRACKINGINFO")["flags"] == {"on", "optin", "noloop"}
    assert c.cmd("CLIENT", "TRACKING", "off") == "OK"
    assert c.cmd("CLIENT", "TRACKING", "on", "optout") == "OK"
    assert c.cmd("CLIENT", "CACHING", "no") == "OK"
    assert c.cmd("CLIENT", "TRACKINGINFO") == {
        "flags": {"on", "optout", "caching-no"}, "redirect": 0, "prefixes": []}
    assert c.cmd("CLIENT", "GETREDIR") == 0
    assert c.cmd("CLIENT", "TRACKING", "off") == "OK"
    assert c.cmd("CLIENT", "TRACKING", "on", "bcast", "prefix", "z", "prefix", "m") == "OK"
    assert c.cmd("CLIENT", "TRACKINGINFO") == {
        "flags": {"on", "bcast"}, "redirect": 0, "prefixes": ["m", "z"]}


# ---------------------------------------------------------------------------
# Default mode


def test_read_keys_are_invalidated_once(conns, r):
    c = conns()
    assert c.cmd("CLIENT", "TRACKING", "on") == "OK"
    assert c.cmd("GET", "k") is None
    assert c.cmd("MGET", "k", "j") == [None, None]
    r.set("k", "1")
    assert c.read() == invalidate("k")
    # Forgotten once invalidated: a second write sends nothing.
    r.set("k", "2")
    r.set("j", "2")
    assert c.read() == invalidate("j")
    assert c.nothing_pending()
    # Writes that change nothing send nothing.
    assert c.cmd("GET", "k") == "2"
    r.delete("missing")
    r.set("k", "3", nx=True)
    assert c.nothing_pending()
    # A key in another database of the same name invalidates: the table knows names only.
    r.execute_command("SELECT", "1")
    r.set("k", "x")
    assert c.read() == invalidate("k")
    r.execute_command("SELECT", "0")


def test_own_write_invalidation_follows_its_reply(conns):
    c = conns()
    c.cmd("CLIENT", "TRACKING", "on")
    c.sock.sendall(encode("GET", "k") + encode("SET", "k", "v") + encode("PING")
                   + encode("MGET", "k", "j") + encode("MSET", "k", "1", "j", "2"))
    assert c.read() is None
    assert c.read() == "OK"
    assert c.read() == invalidate("k")
    assert c.read() == "PONG"
    assert c.read() == ["v", None]
    assert c.read() == "OK"
    assert c.read() == invalidate("k")
    assert c.read() == invalidate("j")


def test_write_from_another_thread_arrives_before_its_reply_is_seen(server):
    with running_server(*THREADED) as s:
        readers = [Conn(s.port, resp3=True) for _ in range(6)]
        writer = s.client()
        try:
            for i, c in enumerate(readers):
                assert c.cmd("CLIENT", "TRACKING", "on") == "OK"
                assert c.cmd("GET", f"key{i % 2}") is None
            for round_ in range(20):
                assert writer.set(f"key{round_ % 2}", round_) is True
                for i, c in enumerate(readers):
                    if i % 2 != round_ % 2:
                        continue
                    # The push was queued while the write ran: it comes before
                    # the reply to a read sent after the writer's reply.
                    c.send("GET", f"key{i % 2}")
                    assert c.read() == invalidate(f"key{i % 2}")
                    assert c.read() == str(round_)
            assert info_field(writer, "clients", "tracking_clients") == 6
        finally:
            for c in readers:
                c.close()
            writer.close()


def test_noloop_and_optin_optout(conns, r):
    c = conns()
    c.cmd("CLIENT", "TRACKING", "on", "noloop")
    c.cmd("GET", "n")
    c.cmd("SET", "n", "1")
    c.cmd("GET", "n")
    assert c.nothing_pending()
    r.set("n", "2")
    assert c.read() == invalidate("n")
    c.cmd("CLIENT", "TRACKING", "off")

    c.cmd("CLIENT", "TRACKING", "on", "optin")
    c.cmd("GET", "o1")
    c.cmd("CLIENT", "CACHING", "yes")
    c.cmd("CLIENT", "ID")
    c.cmd("GET", "o2")
    c.cmd("GET", "o3")
    c.cmd("MULTI")
    c.cmd("CLIENT", "CACHING", "yes")
    c.cmd("GET", "o4")
    c.cmd("GET", "o5")
    assert c.cmd("EXEC") == ["OK", None, None]
    r.mset({"o1": 1, "o2": 2, "o3": 3, "o4": 4, "o5": 5})
    assert [c.read() for _ in range(3)] == [invalidate("o2"), invalidate("o4"), invalidate("o5")]
    assert c.nothing_pending()
    c.cmd("CLIENT", "TRACKING", "off")

    c.cmd("CLIENT", "TRACKING", "on", "optout")
    c.cmd("GET", "p1")
    c.cmd("CLIENT", "CACHING", "no")
    c.cmd("GET", "p2")
    c.cmd("GET", "p3")
    r.mset({"p1": 1, "p2": 2, "p3": 3})
    assert [c.read() for _ in range(2)] == [invalidate("p1"), invalidate("p3")]
    assert c.nothing_pending()


def test_off_reset_and_disconnect_stop_tracking(conns, r):
    c = conns()
    c.cmd("CLIENT", "TRACKING", "on")
    c.cmd("GET", "q")
    c.cmd("CLIENT", "TRACKING", "off")
    r.set("q", "1")
    assert c.nothing_pending()
    c.cmd("CLIENT", "TRACKING", "on")
    c.cmd("GET", "q")
    assert c.cmd("RESET") == "RESET"
    assert c.cmd("CLIENT", "GETREDIR") == -1
    r.set("q", "2")
    assert c.nothing_pending()
    assert info_field(r, "clients", "tracking_clients") == 0


def test_flush_sends_null_to_every_tracking_client(conns, r):
    a = conns()
    b = conns()
    plain = conns()
    a.cmd("CLIENT", "TRACKING", "on")
    b.cmd("CLIENT", "TRACKING", "on", "bcast")
    a.cmd("GET", "f")
    r.flushdb()
    assert a.read() == ("push", ["invalidate", None])
    assert b.read() == ("push", ["invalidate", None])
    assert plain.nothing_pending()
    # The table was emptied: the key read before the flush is not invalidated again.
    r.set("f", "1")
    assert a.nothing_pending()
    assert b.read() == invalidate("f")
    # The flushing client itself gets the null after its reply.
    a.send("FLUSHALL")
    assert a.read() == "OK"
    assert a.read() == ("push", ["invalidate", None])
    assert b.read() == ("push", ["invalidate", None])
    # SWAPDB invalidates nothing.
    a.cmd("GET", "s")
    r.swapdb(0, 1)
    assert a.nothing_pending()


def test_expired_keys_are_invalidated(conns, r):
    c = conns()
    c.cmd("CLIENT", "TRACKING", "on")
    assert c.cmd("SET", "ex", "1", "PX", "100") == "OK"
    assert c.cmd("GET", "ex") == "1"
    # The active expiry cycle removes it without anyone reading it.
    assert c.read() == invalidate("ex")


def test_a_key_found_expired_is_invalidated_once(conns, r):
    c = conns()
    c.cmd("CLIENT", "TRACKING", "on")
    c.cmd("SET", "lx", "1", "PX", "50")
    c.cmd("GET", "lx")
    time.sleep(0.1)
    # Whether the active cycle or this read removes it, the reader hears once.
    assert r.get("lx") is None
    assert c.read() == invalidate("lx")
    assert c.nothing_pending()


# ---------------------------------------------------------------------------
# Redirection


def test_resp2_redirect_through_a_subscriber(conns, r):
    sub = conns(resp3=False)
    assert sub.cmd("SUBSCRIBE", "__redis__:invalidate") == ["subscribe", "__redis__:invalidate", 1]
    c = conns(resp3=False)
    assert c.cmd("CLIENT", "TRACKING", "on", "redirect", sub.id) == "OK"
    assert c.cmd("GET", "x") is None
    r.set("x", "1")
    assert sub.read() == ["message", "__redis__:invalidate", ["x"]]
    r.flushall()
    # A flush's null is the tracking client's (RESP2) null.
    assert sub.read() == ["message", "__redis__:invalidate", None]
    assert c.nothing_pending()
    assert sub.cmd("PING") == ["pong", ""]


def test_resp2_redirect_to_an_unsubscribed_client_sends_nothing(conns, r):
    target = conns(resp3=False)
    c = conns(resp3=False)
    c.cmd("CLIENT", "TRACKING", "on", "redirect", target.id)
    c.cmd("GET", "x")
    r.set("x", "1")
    assert target.nothing_pending()
    assert c.nothing_pending()
    assert target.cmd("PING") == "PONG"


def test_resp3_redirect_target_gets_pushes(conns, r):
    target = conns()
    c = conns()
    c.cmd("CLIENT", "TRACKING", "on", "redirect", target.id)
    c.cmd("GET", "x")
    r.set("x", "1")
    assert target.read() == invalidate("x")
    assert c.nothing_pending()
    r.flushall()
    assert target.read() == ("push", ["invalidate", None])


def test_broken_redirect(server, conns, r):
    target = Conn(server.port, resp3=True)
    c = conns()
    c.cmd("CLIENT", "TRACKING", "on", "redirect", target.id)
    c.cmd("GET", "x")
    target.close()
    time.sleep(0.1)
    r.set("x", "1")
    assert c.read() == ("push", ["tracking-redir-broken", target.id])
    info = c.cmd("CLIENT", "TRACKINGINFO")
    assert info == {"flags": {"on", "broken_redirect"}, "redirect": target.id, "prefixes": []}
    line = c.cmd("CLIENT", "INFO")
    assert " flags=tR " in line
    assert f" redir={target.id} " in line
    # Each message that would have gone out is reported instead.
    c.send("FLUSHALL")
    assert c.read() == "OK"
    assert c.read() == ("push", ["tracking-redir-broken", target.id])


# ---------------------------------------------------------------------------
# Broadcasting


def test_bcast_sends_keys_per_prefix(conns, r):
    c = conns()
    w = conns(resp3=False)
    c.cmd("CLIENT", "TRACKING", "on", "bcast", "prefix", "a", "prefix", "b")
    # One batch of commands: its keys go out together, per prefix, in byte order.
    w.sock.sendall(encode("MSET", "a2", "1", "b1", "2", "a1", "3", "c", "3") + encode("SET", "a0", "1"))
    assert w.read() == "OK" and w.read() == "OK"
    assert c.read() == invalidate("a0", "a1", "a2")
    assert c.read() == invalidate("b1")
    # A key written twice in one batch is sent once.
    w.sock.sendall(encode("SET", "a1", "1") + encode("SET", "a1", "2"))
    assert w.read() == "OK" and w.read() == "OK"
    assert c.read() == invalidate("a1")
    # Reads are not remembered in BCAST mode, and keys out of every prefix are not sent.
    assert c.cmd("GET", "c") == "3"
    r.set("c", "4")
    assert c.nothing_pending()
    assert info_field(r, "stats", "tracking_total_prefixes") == 2


def test_bcast_noloop_leaves_out_own_writes(conns, r):
    c = conns()
    c.cmd("CLIENT", "TRACKING", "on", "bcast", "noloop")
    c.cmd("SET", "mine", "1")
    assert c.nothing_pending()
    r.set("theirs", "1")
    assert c.read() == invalidate("theirs")


# ---------------------------------------------------------------------------
# Introspection and limits


def test_client_list_flags_and_info(conns, r):
    c = conns()
    b = conns()
    c.cmd("CLIENT", "TRACKING", "on")
    assert " flags=t " in c.cmd("CLIENT", "INFO")
    assert " redir=0 " in c.cmd("CLIENT", "INFO")
    b.cmd("CLIENT", "TRACKING", "on", "bcast", "prefix", "p")
    line = r.execute_command("CLIENT", "LIST", "ID", b.id)
    assert " flags=tB " in line
    assert " redir=-1 " in r.execute_command("CLIENT", "INFO")
    c.cmd("GET", "i1")
    c.cmd("MGET", "i1", "i2")
    assert info_field(r, "clients", "tracking_clients") == 2
    stats = r.info("stats")
    assert stats["tracking_total_keys"] == 2
    assert stats["tracking_total_items"] == 2
    assert stats["tracking_total_prefixes"] == 1


def test_tracking_table_max_keys(server, conns, r):
    assert r.config_get("tracking-table-max-keys") == {"tracking-table-max-keys": "1000000"}
    r.config_set("tracking-table-max-keys", 2)
    try:
        c = conns()
        c.cmd("CLIENT", "TRACKING", "on")
        c.cmd("MGET", "m1", "m2", "m3")
        # Over the limit: a key is forgotten, and its reader told so.
        push = c.read()
        assert push[0] == "push" and push[1][0] == "invalidate"
        assert push[1][1][0] in ("m1", "m2", "m3")
        deadline = time.time() + 2
        while info_field(r, "stats", "tracking_total_keys") > 2 and time.time() < deadline:
            time.sleep(0.01)
        assert info_field(r, "stats", "tracking_total_keys") == 2
    finally:
        r.config_set("tracking-table-max-keys", 1000000)


# ---------------------------------------------------------------------------
# redis-py's client-side cache


def test_redis_py_client_side_cache(server, monkeypatch):
    try:
        from redis.cache import CacheConfig
        from redis.connection import CacheProxyConnection
    except ImportError:
        pytest.skip("this redis-py has no client-side cache")
    # redis-py enables its cache only for servers that say 7.4 or later; the
    # protocol it uses is the one Redis 7.0 serves.
    monkeypatch.setattr(CacheProxyConnection, "MIN_ALLOWED_VERSION", "7.0.0")
    cached = redis.Redis(host="127.0.0.1", port=server.port, protocol=3,
                         cache_config=CacheConfig(), decode_responses=True)
    other = server.client()
    try:
        other.set("csc", "one")
        assert cached.get("csc") == "one"
        assert cached.get_cache().size == 1
        # Served from the cache: the server sees no command for it.
        calls = other.info("commandstats")["cmdstat_get"]["calls"]
        assert cached.get("csc") == "one"
        assert other.info("commandstats")["cmdstat_get"]["calls"] == calls
        other.set("csc", "two")
        deadline = time.time() + 2
        while cached.get("csc") != "two":
            assert time.time() < deadline, "the cached value was never invalidated"
            time.sleep(0.01)
    finally:
        cached.close()
        other.close()


def test_pushes_are_sent_while_replies_are_off(conns, r):
    # Redis 7.0 writes push messages (invalidations, and pub/sub messages in
    # either protocol) even after CLIENT REPLY OFF; only replies are held back.
    c = conns()
    c.cmd("CLIENT", "TRACKING", "on")
    c.cmd("GET", "k")
    c.send("CLIENT", "REPLY", "OFF")
    r.set("k", "1")
    assert c.read() == invalidate("k")
    sub = conns(resp3=False)
    assert sub.cmd("SUBSCRIBE", "ch") == ["subscribe", "ch", 1]
    sub3 = conns()
    assert sub3.cmd("SUBSCRIBE", "ch") == ("push", ["subscribe", "ch", 1])
    sub3.send("CLIENT", "REPLY", "OFF")
    time.sleep(0.1)
    assert r.publish("ch", "hi") == 2
    assert sub.read() == ["message", "ch", "hi"]
    assert sub3.read() == ("push", ["message", "ch", "hi"])


def test_idle_tracking_clients_time_out_subscribers_do_not():
    with running_server("--timeout", "1") as s:
        tracker = Conn(s.port, resp3=True)
        target = Conn(s.port, resp3=True)
        redirecting = Conn(s.port, resp3=True)
        sub = Conn(s.port)
        try:
            assert tracker.cmd("CLIENT", "TRACKING", "on") == "OK"
            assert redirecting.cmd("CLIENT", "TRACKING", "on", "redirect", target.id) == "OK"
            assert sub.cmd("SUBSCRIBE", "x") == ["subscribe", "x", 1]
            time.sleep(2.5)
            for c in (tracker, target):
                c.sock.settimeout(2)
                assert c.sock.recv(16) == b""
            assert sub.nothing_pending()
            assert sub.cmd("PING") == ["pong", ""]
        finally:
            for c in (tracker, target, redirecting, sub):
                c.close()


def test_pushes_reach_a_blocked_client(conns, r):
    c = conns()
    c.cmd("CLIENT", "TRACKING", "on")
    c.cmd("GET", "k")
    assert c.cmd("SUBSCRIBE", "ch") == ("push", ["subscribe", "ch", 1])
    c.send("BLPOP", "list", "0")
    time.sleep(0.1)
    r.set("k", "1")
    r.publish("ch", "m")
    # Written while the BLPOP still waits, as Redis writes them.
    assert c.read() == invalidate("k")
    assert c.read() == ("push", ["message", "ch", "m"])
    r.rpush("list", "x")
    assert c.read() == ["list", "x"]

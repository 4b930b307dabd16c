"""Pub/sub: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE and their UNSUBSCRIBEs, PUBLISH,
SPUBLISH, PUBSUB introspection, RESP2 subscribed mode and RESP3 pushes."""

import asyncio
import socket
import threading
import time

import pytest
import redis
import redis.asyncio

from conftest import AGAINST_REDIS, running_server

# Several worker threads, so clients land on different ones (Redis has one).
THREADED = () if AGAINST_REDIS else ("--threads", "4")

SUBSCRIBED_ERR = ("Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
                  "RESET are allowed in this context")


class Wire:
    """A bare connection that tells pushes (`>`) from arrays (`*`)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.f = self.sock.makefile("rb")

    def send(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)

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
            return [self.read() for _ in range(int(rest))]
        if kind == b">":
            return ("push", [self.read() for _ in range(int(rest))])
        if kind == b"%":
            return {self.read(): self.read() for _ in range(int(rest))}
        raise AssertionError(f"unexpected {line!r}")

    def cmd(self, *args):
        self.send(*args)
        return self.read()

    def close(self):
        self.f.close()
        self.sock.close()


@pytest.fixture
def wire(server):
    w = Wire(server.port)
    yield w
    w.close()


def test_resp2_subscribed_mode(server, r, wire):
    assert wire.cmd("SUBSCRIBE", "a", "b") == ["subscribe", "a", 1]
    assert wire.read() == ["subscribe", "b", 2]
    assert wire.cmd("GET", "x") == ("err", "ERR " + SUBSCRIBED_ERR.format("get"))
    assert wire.cmd("CLIENT", "LIST") == ("err", "ERR " + SUBSCRIBED_ERR.format("client|list"))
    assert wire.cmd("MULTI") == ("err", "ERR " + SUBSCRIBED_ERR.format("multi"))
    assert wire.cmd("PING") == ["pong", ""]
    assert wire.cmd("PING", "hi") == ["pong", "hi"]
    assert r.publish("a", "m1") == 1
    assert wire.read() == ["message", "a", "m1"]
    # Shard subscriptions count apart from channels and patterns.
    assert wire.cmd("SSUBSCRIBE", "s") == ["ssubscribe", "s", 1]
    assert wire.cmd("PSUBSCRIBE", "a*") == ["psubscribe", "a*", 3]
    assert r.publish("a", "m2") == 2
    got = [wire.read(), wire.read()]
    assert ["message", "a", "m2"] in got and ["pmessage", "a*", "a", "m2"] in got
    assert r.execute_command("SPUBLISH", "s", "sm") == 1
    assert wire.read() == ["smessage", "s", "sm"]
    assert wire.cmd("UNSUBSCRIBE", "a", "zz") == ["unsubscribe", "a", 2]
    assert wire.read() == ["unsubscribe", "zz", 2]
    assert wire.cmd("SUNSUBSCRIBE") == ["sunsubscribe", "s", 0]
    assert wire.cmd("SUNSUBSCRIBE") == ["sunsubscribe", None, 0]
    assert wire.cmd("PUNSUBSCRIBE") == ["punsubscribe", "a*", 1]
    assert wire.cmd("UNSUBSCRIBE") == ["unsubscribe", "b", 0]
    assert wire.cmd("UNSUBSCRIBE") == ["unsubscribe", None, 0]
    assert wire.cmd("GET", "x") is None


def test_reset_and_close_drop_subscriptions(server, r, wire):
    assert wire.cmd("SUBSCRIBE", "rc") == ["subscribe", "rc", 1]
    assert wire.cmd("RESET") == "RESET"
    assert wire.cmd("GET", "x") is None
    assert r.publish("rc", "x") == 0
    other = Wire(server.port)
    assert other.cmd("PSUBSCRIBE", "rc*") == ["psubscribe", "rc*", 1]
    assert r.publish("rc", "x") == 1
    other.close()
    deadline = time.time() + 5
    while r.publish("rc", "x") != 0:
        assert time.time() < deadline
        time.sleep(0.01)


def test_resp3_pushes_between_replies(server, r):
    w = Wire(server.port)
    try:
        assert w.cmd("HELLO", "3")["proto"] == 3
        assert w.cmd("SUBSCRIBE", "c3") == ("push", ["subscribe", "c3", 1])
        # No subscribed-mode restriction in RESP3.
        assert w.cmd("SET", "k3", "v") == "OK"
        assert w.cmd("PING") == "PONG"
        assert r.publish("c3", "hello") == 1
        assert w.read() == ("push", ["message", "c3", "hello"])
        assert w.cmd("GET", "k3") == "v"
        assert w.cmd("UNSUBSCRIBE") == ("push", ["unsubscribe", "c3", 0])
        assert w.cmd("UNSUBSCRIBE") == ("push", ["unsubscribe", None, 0])
    finally:
        w.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_pubsub(server, protocol):
    c = server.client(protocol=protocol)
    p = c.pubsub()
    try:
        p.subscribe("news")
        p.psubscribe("n*")
        assert p.get_message(timeout=2)["type"] == "subscribe"
        assert p.get_message(timeout=2)["type"] == "psubscribe"
        assert c.publish("news", "hi") == 2
        got = [p.get_message(timeout=2), p.get_message(timeout=2)]
        kinds = sorted((m["type"], m["channel"], m["data"]) for m in got)
        assert kinds == [("message", "news", "hi"), ("pmessage", "news", "hi")]
        p.unsubscribe()
        p.punsubscribe()
        assert p.get_message(timeout=2)["type"] == "unsubscribe"
        assert p.get_message(timeout=2)["type"] == "punsubscribe"
        assert c.publish("news", "hi") == 0
    finally:
        p.close()
        c.close()


def test_pubsub_introspection(server, r):
    subs = Wire(server.port)
    subs2 = Wire(server.port)
    try:
        subs.cmd("SUBSCRIBE", "intro.a", "intro.b")
        subs.read()
        subs.cmd("PSUBSCRIBE", "intro.*")
        subs.cmd("SSUBSCRIBE", "intro.s")
        subs2.cmd("SUBSCRIBE", "intro.a")
        subs2.cmd("PSUBSCRIBE", "intro.*")
        assert sorted(r.execute_command("PUBSUB", "CHANNELS")) == ["intro.a", "intro.b"]
        assert r.execute_command("PUBSUB", "CHANNELS", "*.a") == ["intro.a"]
        assert r.execute_command("PUBSUB", "NUMSUB", "intro.a", "intro.b", "zz") == [
            "intro.a", 2, "intro.b", 1, "zz", 0]
        assert r.execute_command("PUBSUB", "NUMSUB") == []
        assert r.execute_command("PUBSUB", "NUMPAT") == 1
        assert r.execute_command("PUBSUB", "SHARDCHANNELS") == ["intro.s"]
        assert r.execute_command("PUBSUB", "SHARDCHANNELS", "x*") == []
        assert r.execute_command("PUBSUB", "SHARDNUMSUB", "intro.s", "q") == ["intro.s", 1, "q", 0]
        assert r.execute_command("PUBSUB", "HELP")[0].startswith("PUBSUB <subcommand>")
        with pytest.raises(redis.ResponseError, match="unknown subcommand or wrong number of arguments for 'CHANNELS'"):
            r.execute_command("PUBSUB", "CHANNELS", "a", "b")
        info = r.info("stats")
        assert (info["pubsub_channels"], info["pubsub_patterns"], info["pubsubshard_channels"]) == (2, 1, 1)
        lines = [l for l in r.execute_command("CLIENT", "LIST").splitlines() if "sub=2 " in l]
        assert len(lines) == 1
        assert " flags=P " in lines[0] and " psub=1 ssub=1 " in lines[0]
        assert r.execute_command("PUBLISH", "intro.a", "x") == 4
        with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'subscribe'"):
            r.execute_command("SUBSCRIBE")
        with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'publish'"):
            r.execute_command("PUBLISH", "a")
    finally:
        subs.close()
        subs2.close()


def test_order_across_threads():
    """Each publisher's numbered messages reach every subscriber in order."""
    publishers, per, nsubs = 4, 300, 3
    with running_server(*THREADED) as s:
        subs = [Wire(s.port) for _ in range(nsubs)]
        try:
            for i, w in enumerate(subs):
                if i % 2:
                    assert w.cmd("PSUBSCRIBE", "ord*") == ["psubscribe", "ord*", 1]
                else:
                    assert w.cmd("SUBSCRIBE", "ord") == ["subscribe", "ord", 1]

            def pub(p):
                c = s.client()
                for n in range(per):
                    c.publish("ord", f"{p}:{n}")
                c.close()

            threads = [threading.Thread(target=pub, args=(p,)) for p in range(publishers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for w in subs:
                last = [-1] * publishers
                for _ in range(publishers * per):
                    m = w.read()
                    p, n = map(int, m[-1].split(":"))
                    assert n == last[p] + 1
                    last[p] = n
                assert last == [per - 1] * publishers
        finally:
            for w in subs:
                w.close()


def test_asyncio_pubsub(server):
    async def main():
        c = redis.asyncio.Redis(host="127.0.0.1", port=server.port, decode_responses=True)
        p = c.pubsub()
        await p.subscribe("aio")
        assert (await p.get_message(timeout=2))["type"] == "subscribe"
        assert await c.publish("aio", "one") == 1
        msg = None
        for _ in range(20):
            msg = await p.get_message(ignore_subscribe_messages=True, timeout=1)
            if msg:
                break
        assert msg["data"] == "one"
        await p.unsubscribe("aio")
        await p.aclose() if hasattr(p, "aclose") else await p.close()
        await c.aclose() if hasattr(c, "aclose") else await c.close()

    asyncio.run(main())


def test_command_info_and_getkeys(r):
    info = r.execute_command("COMMAND", "INFO", "spublish", "ssubscribe", "publish", "pubsub|help")
    assert info["spublish"]["flags"] == ["pubsub", "loading", "stale", "fast"]
    assert (info["spublish"]["first_key_pos"], info["spublish"]["last_key_pos"]) == (1, 1)
    assert (info["ssubscribe"]["first_key_pos"], info["ssubscribe"]["last_key_pos"]) == (1, -1)
    assert info["publish"]["flags"] == ["pubsub", "loading", "stale", "fast"]
    assert info["pubsub|help"]["flags"] == ["loading", "stale"]
    # Shard channels are not keys.
    for argv in (("SSUBSCRIBE", "a", "b"), ("SPUBLISH", "a", "m")):
        with pytest.raises(redis.ResponseError, match="The command has no key arguments"):
            r.execute_command("COMMAND", "GETKEYS", *argv)


def test_scripts_publish_but_do_not_subscribe(r):
    assert r.eval("return redis.call('publish', 'nobody', 'x')", 0) == 0
    with pytest.raises(redis.ResponseError, match="not allowed from script"):
        r.eval("return redis.call('subscribe', 'a')", 0)


def test_run_in_thread(server):
    """redis-py's PubSub.run_in_thread: handlers are called from its own thread,
    for channels and patterns, until the thread is stopped."""
    c = server.client()
    p = c.pubsub(ignore_subscribe_messages=True)
    got = []
    done = threading.Event()

    def handler(m):
        got.append((m["type"], m["pattern"], m["channel"], m["data"]))
        if len(got) == 3:
            done.set()

    p.subscribe(**{"rit.a": handler})
    p.psubscribe(**{"rit.*": handler})
    worker = p.run_in_thread(sleep_time=0.01, daemon=True)
    try:
        deadline = time.time() + 5
        while c.execute_command("PUBSUB", "NUMSUB", "rit.a")[1] != 1 or c.execute_command("PUBSUB", "NUMPAT") != 1:
            assert time.time() < deadline
            time.sleep(0.01)
        assert c.publish("rit.a", "one") == 2
        assert c.publish("rit.b", "two") == 1
        assert done.wait(5), got
        assert sorted(got) == [("message", None, "rit.a", "one"), ("pmessage", "rit.*", "rit.a", "one"),
                               ("pmessage", "rit.*", "rit.b", "two")]
    finally:
        worker.stop()
        worker.join(5)
        p.close()
    assert not worker.is_alive()
    assert c.publish("rit.a", "gone") == 0
    c.close()

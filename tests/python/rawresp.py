"""A bare RESP connection for tests that must see exact reply types, pushes and the socket closing;
and `unparsed`, a redis-py client's reply to a command before redis-py's per-command parsing."""

import socket

import redis


class Status(str):
    """A simple-string reply."""


class Err(str):
    """An error reply."""


class Map(list):
    """A RESP3 map, as a list of (key, value) pairs in wire order."""


class Set(list):
    """A RESP3 set."""


class Verbatim(bytes):
    """A RESP3 verbatim string (the format prefix removed)."""


def encode(*args):
    """A command as a client sends it: a multibulk of its words."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def unparsed(r, *args):
    """Send a command on a pooled connection of redis-py client `r` and return the reply without
    redis-py's per-command parsing; an error reply is raised as redis.ResponseError."""
    conn = r.connection_pool.get_connection(args[0])
    try:
        conn.send_command(*args)
        reply = conn.read_response()
        if isinstance(reply, redis.ResponseError):
            raise reply
        return reply
    finally:
        r.connection_pool.release(conn)


class Raw:
    """A bare RESP connection, to see exact reply types and the socket closing."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.f = self.sock.makefile("rb")

    def send(self, *args):
        self.sock.sendall(encode(*args))

    def read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("closed by server")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return Status(rest.decode())
        if kind == b"-":
            return Err(rest.decode())
        if kind in (b":", b"("):
            return int(rest)
        if kind == b"_":
            return None
        if kind in (b"$", b"="):
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)[:-2]
            return Verbatim(data[4:]) if kind == b"=" else data
        if kind in (b"*", b"~"):
            n = int(rest)
            if n < 0:
                return None
            items = [self.read() for _ in range(n)]
            return Set(items) if kind == b"~" else items
        if kind == b">":
            return Push(self.read() for _ in range(int(rest)))
        if kind == b"%":
            return Map((self.read(), self.read()) for _ in range(int(rest)))
        raise AssertionError(f"unexpected reply {line!r}")

    def cmd(self, *args):
        self.send(*args)
        return self.read()

    def closed(self):
        """Whether the server has closed the connection."""
        try:
            return self.f.read(1) == b""
        except OSError:
            return True

    def close(self):
        self.f.close()
        self.sock.close()


class Push(list):
    """A RESP3 push (`>`), told apart from a reply."""


class Resp3(Raw):
    """A connection that tells RESP3 pushes from replies."""

    def read(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("closed by server")
        kind, rest = line[:1], line[1:-2]
        if kind == b">":
            return Push(self.read() for _ in range(int(rest)))
        if kind in (b"*", b"~"):
            return [self.read() for _ in range(int(rest))]
        if kind == b"%":
            return [(self.read(), self.read()) for _ in range(int(rest))]
        if kind in (b",", b"#"):
            return rest.decode()
        if kind == b"_":
            return None
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.f.read(n + 2)[:-2]
        if kind == b":":
            return int(rest)
        return rest.decode() if kind == b"+" else ("ERR", rest.decode())

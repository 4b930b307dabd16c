"""Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET and CLIENT."""

import time

import pytest
import redis

from conftest import AGAINST_REDIS, running_server
from rawresp import Err, Map, Raw, Set, Status, Verbatim  # noqa: F401 (re-exported)

# CLIENT LIST fields in Redis's order; 7.2 appends lib-name and lib-ver, which
# Keel reports and the 7.0 server the tests are checked against does not.
CLIENT_FIELDS = [
    "id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub",
    "ssub", "multi", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl",
    "oll", "omem", "tot-mem", "events", "cmd", "user", "redir", "resp",
]
if not AGAINST_REDIS:
    CLIENT_FIELDS += ["lib-name", "lib-ver"]

NOAUTH_HELLO = (
    "NOAUTH HELLO must be called with the client already authenticated, otherwise the "
    "HELLO AUTH <user> <pass> option can be used to authenticate the client and select "
    "the RESP protocol version at the same time"
)
NO_PASSWORD = (
    "AUTH <password> called without any password configured for the default user. "
    "Are you sure your configuration is correct?"
)
WRONGPASS = "WRONGPASS invalid username-password pair or user is disabled."


def fields_of(line):
    return dict(kv.split("=", 1) for kv in line.split())


# --- PING / ECHO -----------------------------------------------------------


def test_ping_and_echo(r, raw):
    assert r.ping() is True
    assert raw.cmd("PING") == "PONG" and isinstance(raw.cmd("PING"), Status)
    assert raw.cmd("PING", "hi") == b"hi"
    assert r.echo("hello") == "hello"
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'ping'"):
        r.execute_command("PING", "a", "b")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'echo'"):
        r.execute_command("ECHO")


# --- HELLO -----------------------------------------------------------------


def test_hello_resp3_map(r3):
    reply = r3.execute_command("HELLO", 3)
    assert list(reply) == ["server", "version", "proto", "id", "mode", "role", "modules"]
    assert reply["server"] == "redis"
    assert reply["version"].startswith("7.")
    assert reply["proto"] == 3
    assert reply["id"] == r3.client_id()
    assert reply["mode"] == "standalone"
    assert reply["role"] == "master"
    assert reply["modules"] == []


def test_hello_switches_wire_protocol(raw):
    reply = raw.cmd("HELLO", "3")
    assert isinstance(reply, Map)
    assert dict(reply)[b"proto"] == 3
    assert raw.cmd("CLIENT", "GETNAME") is None
    assert isinstance(raw.cmd("CLIENT", "INFO"), Verbatim)
    reply = raw.cmd("HELLO", "2")
    assert isinstance(reply, list) and not isinstance(reply, Map)
    assert reply[reply.index(b"proto") + 1] == 2
    assert fields_of(raw.cmd("CLIENT", "INFO").decode())["resp"] == "2"
    # Without a version HELLO reports the current protocol and changes nothing.
    reply = raw.cmd("HELLO")
    assert reply[reply.index(b"proto") + 1] == 2


def test_hello_errors(raw):
    assert raw.cmd("HELLO", "4") == "NOPROTO unsupported protocol version"
    assert raw.cmd("HELLO", "1") == "NOPROTO unsupported protocol version"
    assert raw.cmd("HELLO", "x") == "ERR Protocol version is not an integer or out of range"
    assert raw.cmd("HELLO", "3", "FOO") == "ERR Syntax error in HELLO option 'FOO'"
    assert raw.cmd("HELLO", "3", "AUTH", "default") == "ERR Syntax error in HELLO option 'AUTH'"
    assert raw.cmd("HELLO", "3", "SETNAME") == "ERR Syntax error in HELLO option 'SETNAME'"
    assert (raw.cmd("HELLO", "3", "SETNAME", "a b")
            == "ERR Client names cannot contain spaces, newlines or special characters.")
    # None of the failures switched the protocol.
    assert isinstance(raw.cmd("HELLO"), list) and not isinstance(raw.cmd("HELLO"), Map)


def test_hello_setname_and_auth_without_password(raw):
    reply = raw.cmd("HELLO", "2", "AUTH", "default", "anything", "SETNAME", "conn-a")
    assert reply[reply.index(b"proto") + 1] == 2
    assert raw.cmd("CLIENT", "GETNAME") == b"conn-a"
    assert raw.cmd("HELLO", "2", "AUTH", "bob", "x") == WRONGPASS


def test_hello_queued_in_multi(raw):
    assert raw.cmd("MULTI") == "OK"
    assert raw.cmd("HELLO", "2") == "QUEUED"
    replies = raw.cmd("EXEC")
    assert replies[0][replies[0].index(b"proto") + 1] == 2


# --- AUTH ------------------------------------------------------------------


def test_auth_without_password_configured(r):
    # redis-py raises this reply as an AuthenticationError.
    with pytest.raises(redis.AuthenticationError) as e:
        r.execute_command("AUTH", "secret")
    assert str(e.value) == NO_PASSWORD
    # The default user has no password: naming it accepts any password.
    assert r.execute_command("AUTH", "default", "whatever") is True
    with pytest.raises(redis.AuthenticationError):
        r.execute_command("AUTH", "bob", "whatever")
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.execute_command("AUTH", "a", "b", "c")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'auth'"):
        r.execute_command("AUTH")


def test_requirepass_gates_commands():
    with running_server("--requirepass", "secret") as s:
        c = Raw(s.port)
        try:
            assert c.cmd("PING") == "NOAUTH Authentication required."
            assert c.cmd("SET", "k", "v") == "NOAUTH Authentication required."
            assert c.cmd("CLIENT", "ID") == "NOAUTH Authentication required."
            assert c.cmd("SELECT", "1") == "NOAUTH Authentication required."
            # Unknown commands and arity are reported before authentication.
            assert c.cmd("NOSUCH").startswith("ERR unknown command 'NOSUCH'")
            assert c.cmd("GET") == "ERR wrong number of arguments for 'get' command"
            assert c.cmd("HELLO") == NOAUTH_HELLO
            assert c.cmd("HELLO", "3") == NOAUTH_HELLO
            assert c.cmd("HELLO", "3", "AUTH", "default", "bad") == WRONGPASS
            assert c.cmd("AUTH", "bad") == WRONGPASS
            assert c.cmd("AUTH", "bob", "secret") == WRONGPASS
            assert c.cmd("RESET") == "RESET"
            assert c.cmd("AUTH", "secret") == "OK"
            assert c.cmd("PING") == "PONG"
            # A failed AUTH does not log an authenticated connection out.
            assert c.cmd("AUTH", "bad") == WRONGPASS
            assert c.cmd("PING") == "PONG"
            # RESET does.
            assert c.cmd("RESET") == "RESET"
            assert c.cmd("PING") == "NOAUTH Authentication required."
            assert c.cmd("AUTH", "default", "secret") == "OK"
            assert c.cmd("RESET") == "RESET"
            reply = c.cmd("HELLO", "3", "AUTH", "default", "secret")
            assert isinstance(reply, Map)
            assert c.cmd("PING") == "PONG"
            c.close()
            c = Raw(s.port)
            assert c.cmd("QUIT") == "OK"
            assert c.closed()
        finally:
            c.close()
        # redis-py authenticates on connect with the password option.
        good = s.client(password="secret")
        assert good.ping() is True
        good.close()
        with pytest.raises(redis.AuthenticationError):
            s.client(password="wrong").ping()
        with pytest.raises(redis.AuthenticationError):
            s.client().ping()
        r3 = s.client(password="secret", protocol=3)
        assert r3.set("k", "v") is True
        assert r3.get("k") == "v"
        r3.close()


# --- SELECT ----------------------------------------------------------------


def test_select(r):
    r.set("k", "db0")
    assert r.execute_command("SELECT", 1) is True
    assert r.get("k") is None
    r.set("k", "db1")
    assert r.execute_command("SELECT", 0) is True
    assert r.get("k") == "db0"
    assert r.execute_command("SELECT", 15) is True
    for bad in ("16", "-1", "2147483647"):
        with pytest.raises(redis.ResponseError, match="^DB index is out of range$"):
            r.execute_command("SELECT", bad)
    with pytest.raises(redis.ResponseError,
                       match="^value is out of range, value must between -2147483648 and "
                             "2147483647$"):
        r.execute_command("SELECT", "100000000000")
    for bad in ("x", "1.5", "99999999999999999999"):
        with pytest.raises(redis.ResponseError,
                           match="^value is not an integer or out of range$"):
            r.execute_command("SELECT", bad)
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'select'"):
        r.execute_command("SELECT", 1, 2)
    r.execute_command("SELECT", 0)
    r.flushall()


def test_select_shows_in_client_info(raw):
    assert raw.cmd("SELECT", "7") == "OK"
    assert fields_of(raw.cmd("CLIENT", "INFO").decode())["db"] == "7"


# --- QUIT / RESET ----------------------------------------------------------


def test_quit_closes_after_reply(raw):
    assert raw.cmd("QUIT") == "OK"
    assert raw.closed()


def test_quit_inside_multi_is_not_queued(raw):
    assert raw.cmd("MULTI") == "OK"
    assert raw.cmd("QUIT") == "OK"
    assert raw.closed()


def test_reset_restores_defaults(raw):
    assert isinstance(raw.cmd("HELLO", "3"), Map)
    raw.cmd("SELECT", "3")
    raw.cmd("CLIENT", "SETNAME", "before-reset")
    raw.cmd("WATCH", "k")
    raw.cmd("MULTI")
    raw.cmd("SET", "k", "v")
    assert raw.cmd("RESET") == "RESET"
    assert raw.cmd("EXEC") == "ERR EXEC without MULTI"
    assert raw.cmd("CLIENT", "GETNAME") is None
    info = fields_of(raw.cmd("CLIENT", "INFO").decode())
    assert isinstance(raw.cmd("CLIENT", "INFO"), bytes)
    assert not isinstance(raw.cmd("CLIENT", "INFO"), Verbatim)
    assert info["db"] == "0"
    assert info["resp"] == "2"
    assert info["flags"] == "N"
    assert info["name"] == ""
    assert raw.cmd("GET", "k") is None
    assert raw.cmd("RESET", "x") == "ERR wrong number of arguments for 'reset' command"


@pytest.mark.skipif(AGAINST_REDIS, reason="RESET clears NO-EVICT/NO-TOUCH since Redis 7.2")
def test_reset_clears_no_evict_and_no_touch(raw):
    raw.cmd("CLIENT", "NO-EVICT", "on")
    raw.cmd("CLIENT", "NO-TOUCH", "on")
    assert fields_of(raw.cmd("CLIENT", "INFO").decode())["flags"] == "eT"
    assert raw.cmd("RESET") == "RESET"
    assert fields_of(raw.cmd("CLIENT", "INFO").decode())["flags"] == "N"


def test_reset_arity(r):
    assert r.reset() == "RESET"
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'reset'"):
        r.execute_command("RESET", "x")


# --- CLIENT ----------------------------------------------------------------


def test_client_id_setname_getname(r):
    cid = r.client_id()
    assert isinstance(cid, int) and cid > 0
    assert r.client_getname() is None
    assert r.client_setname("worker-1") is True
    assert r.client_getname() == "worker-1"
    for bad in ("a b", "a\nb", "caf\u00e9", "x\x01"):
        with pytest.raises(redis.ResponseError,
                           match="Client names cannot contain spaces, newlines or special"):
            r.client_setname(bad)
    assert r.client_getname() == "worker-1"
    assert r.client_setname("") is True
    assert r.client_getname() is None
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'client|id'"):
        r.execute_command("CLIENT", "ID", "x")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'client|getname'"):
        r.execute_command("CLIENT", "GETNAME", "x")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'client|setname'"):
        r.execute_command("CLIENT", "SETNAME")


def test_client_container_errors(r):
    with pytest.raises(redis.ResponseError, match="^wrong number of arguments for 'client' command$"):
        r.execute_command("CLIENT")
    with pytest.raises(redis.ResponseError,
                       match=r"^unknown subcommand 'NOPE'. Try CLIENT HELP.$"):
        r.execute_command("CLIENT", "NOPE")


def test_client_help(r):
    lines = r.execute_command("CLIENT", "HELP")
    assert lines[0].startswith("CLIENT <subcommand>")
    text = "\n".join(lines)
    for sub in ("ID", "GETNAME", "SETNAME", "LIST", "INFO", "KILL", "NO-EVICT", "HELP"):
        assert sub in text


def test_client_list_fields_parse(server, r):
    other = server.client()
    other.client_setname("second")
    other.execute_command("SELECT", 4)
    r.client_setname("first")
    clients = r.client_list()
    by_name = {c["name"]: c for c in clients}
    assert {"first", "second"} <= set(by_name)
    me = by_name["first"]
    assert list(me) == CLIENT_FIELDS
    assert int(me["id"]) == r.client_id()
    assert me["cmd"] == "client|list"
    assert me["flags"] == "N"
    assert me["multi"] == "-1"
    assert me["db"] == "0"
    assert me["user"] == "default"
    assert me["resp"] == "2"
    assert me["laddr"].endswith(f":{server.port}")
    host, port = me["addr"].rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    for numeric in ("id", "fd", "age", "idle", "sub", "psub", "ssub", "qbuf", "omem", "tot-mem"):
        int(me[numeric])
    assert by_name["second"]["db"] == "4"
    assert by_name["second"]["cmd"] == "select"
    ids = [int(c["id"]) for c in clients]
    assert ids == sorted(ids)
    other.close()


def test_client_list_filters(server, r):
    other = server.client()
    other_id = other.client_id()
    listed = r.execute_command("CLIENT", "LIST", "ID", other_id, 999999)
    assert [int(fields_of(line)["id"]) for line in listed.splitlines()] == [other_id]
    assert [int(c["id"]) for c in r.client_list(client_id=[str(other_id)])] == [other_id]
    assert len(r.client_list(_type="normal")) >= 2
    for t in ("pubsub", "master", "replica"):
        assert r.client_list(_type=t) == []
    assert r.execute_command("CLIENT", "LIST", "ID", "0") == ""
    with pytest.raises(redis.ResponseError, match="^Unknown client type 'bogus'$"):
        r.execute_command("CLIENT", "LIST", "TYPE", "bogus")
    with pytest.raises(redis.ResponseError, match="^Invalid client ID$"):
        r.execute_command("CLIENT", "LIST", "ID", "1", "abc")
    for args in (("ID",), ("FOO",), ("TYPE", "normal", "ID", "1")):
        with pytest.raises(redis.ResponseError, match="^syntax error$"):
            r.execute_command("CLIENT", "LIST", *args)
    other.close()


def test_client_list_shows_multi(server, r):
    other = Raw(server.port)
    try:
        other.cmd("MULTI")
        other.cmd("SET", "a", "1")
        other.cmd("GET", "a")
        assert other.cmd("CLIENT", "ID") == "QUEUED"
        (entry,) = [c for c in r.client_list() if c["flags"] == "x"]
        assert entry["multi"] == "3"
        other.cmd("DISCARD")
        entry = [c for c in r.client_list() if c["addr"] == entry["addr"]][0]
        assert entry["flags"] == "N" and entry["multi"] == "-1"
    finally:
        other.close()


def test_client_info(r, r3):
    info = r.client_info()
    assert int(info["id"]) == r.client_id()
    assert info["cmd"] == "client|info"
    assert list(info) == CLIENT_FIELDS
    info3 = r3.client_info()
    assert info3["resp"] == "3"
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'client|info'"):
        r.execute_command("CLIENT", "INFO", "x")


def test_client_info_and_list_reply_types(raw):
    assert type(raw.cmd("CLIENT", "INFO")) is bytes
    assert raw.cmd("CLIENT", "INFO").endswith(b"\n")
    raw.cmd("HELLO", "3")
    info = raw.cmd("CLIENT", "INFO")
    assert isinstance(info, Verbatim) and info.startswith(b"id=")
    assert isinstance(raw.cmd("CLIENT", "LIST"), Verbatim)


def test_client_kill_by_id_closes_other_connection(server, r):
    victim = redis.Connection(host="127.0.0.1", port=server.port)
    victim.send_command("CLIENT", "ID")
    victim_id = victim.read_response()
    assert r.client_kill_filter(_id=victim_id) == 1
    with pytest.raises(redis.ConnectionError):
        victim.send_command("PING")
        victim.read_response()
    victim.disconnect()
    deadline = time.time() + 5
    while victim_id in [int(c["id"]) for c in r.client_list()]:
        assert time.time() < deadline, "killed client still listed"
        time.sleep(0.02)
    assert r.client_kill_filter(_id=victim_id) == 0


def test_client_kill_old_form(server, r):
    victim = Raw(server.port)
    try:
        victim.cmd("CLIENT", "SETNAME", "victim")
        addr = [c for c in r.client_list() if c["name"] == "victim"][0]["addr"]
        assert r.client_kill(addr) is True
        assert victim.closed()
    finally:
        victim.close()
    with pytest.raises(redis.ResponseError, match="^No such client$"):
        r.client_kill("10.0.0.1:1")
    with pytest.raises(redis.ResponseError, match="^No such client$"):
        r.execute_command("CLIENT", "KILL", "ID")


def test_client_kill_filters(server, r):
    victim = Raw(server.port)
    try:
        victim.cmd("CLIENT", "SETNAME", "victim")
        entry = [c for c in r.client_list() if c["name"] == "victim"][0]
        # Filters combine with AND.
        assert r.execute_command("CLIENT", "KILL", "ADDR", entry["addr"],
                                 "ID", str(r.client_id())) == 0
        assert r.execute_command("CLIENT", "KILL", "ADDR", entry["addr"], "LADDR", "1.1.1.1:1") == 0
        assert r.execute_command("CLIENT", "KILL", "TYPE", "pubsub", "ADDR", entry["addr"]) == 0
        assert r.execute_command("CLIENT", "KILL", "USER", "default", "TYPE", "normal",
                                 "ADDR", entry["addr"], "LADDR", entry["laddr"],
                                 "SKIPME", "yes") == 1
        assert victim.closed()
    finally:
        victim.close()


def test_client_kill_errors(r):
    for bad in ("0", "-3", "abc"):
        with pytest.raises(redis.ResponseError, match="^client-id should be greater than 0$"):
            r.execute_command("CLIENT", "KILL", "ID", bad)
    with pytest.raises(redis.ResponseError, match="^Unknown client type 'bogus'$"):
        r.execute_command("CLIENT", "KILL", "TYPE", "bogus")
    with pytest.raises(redis.ResponseError, match="^No such user 'nobody'$"):
        r.execute_command("CLIENT", "KILL", "USER", "nobody")
    for args in (("SKIPME", "maybe"), ("FOO", "bar"), ("ID", "1", "ADDR")):
        with pytest.raises(redis.ResponseError, match="^syntax error$"):
            r.execute_command("CLIENT", "KILL", *args)
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'client|kill'"):
        r.execute_command("CLIENT", "KILL")


def test_client_kill_self(raw):
    my_id = raw.cmd("CLIENT", "ID")
    # SKIPME defaults to yes.
    assert raw.cmd("CLIENT", "KILL", "ID", my_id) == 0
    assert raw.cmd("CLIENT", "KILL", "ID", my_id, "SKIPME", "no") == 1
    assert raw.closed()


def test_client_kill_self_old_form(raw):
    addr = fields_of(raw.cmd("CLIENT", "INFO").decode())["addr"]
    assert raw.cmd("CLIENT", "KILL", addr) == "OK"
    assert raw.closed()


def test_client_no_evict(r):
    assert r.client_no_evict("on") == "OK"
    assert r.client_info()["flags"] == "e"
    assert r.client_no_evict("OFF") == "OK"
    assert r.client_info()["flags"] == "N"
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.client_no_evict("maybe")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'client|no-evict'"):
        r.execute_command("CLIENT", "NO-EVICT")


@pytest.mark.skipif(AGAINST_REDIS, reason="CLIENT NO-TOUCH is Redis 7.2; checked against 7.0")
def test_client_no_touch(r):
    assert r.client_no_touch("ON") == "OK"
    assert r.client_info()["flags"] == "T"
    r.client_no_evict("on")
    assert r.client_info()["flags"] == "eT"
    assert r.client_no_touch("off") == "OK"
    with pytest.raises(redis.ResponseError, match="^syntax error$"):
        r.client_no_touch("maybe")


@pytest.mark.skipif(AGAINST_REDIS, reason="CLIENT SETINFO is Redis 7.2; checked against 7.0")
def test_client_setinfo(r):
    assert r.client_setinfo("LIB-NAME", "mylib") is True
    assert r.client_setinfo("lib-ver", "1.2.3") is True
    info = r.client_info()
    assert info["lib-name"] == "mylib" and info["lib-ver"] == "1.2.3"
    with pytest.raises(redis.ResponseError,
                       match="^lib-name cannot contain spaces, newlines or special characters.$"):
        r.client_setinfo("lib-name", "my lib")
    with pytest.raises(redis.ResponseError, match="^Unrecognized option 'color'$"):
        r.client_setinfo("color", "red")
    assert r.client_setinfo("lib-name", "") is True
    assert r.client_info()["lib-name"] == ""
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'client|setinfo'"):
        r.execute_command("CLIENT", "SETINFO", "lib-name")


@pytest.mark.skipif(AGAINST_REDIS, reason="redis-py reports its library only to Redis 7.2+")
def test_redis_py_reports_library(r):
    info = r.client_info()
    assert info["lib-name"].startswith("redis-py")
    assert info["lib-ver"] == redis.__version__

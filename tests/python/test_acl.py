"""ACL: users and rules, AUTH, the permission check (commands, keys, channels,
MULTI, scripts), ACL LOG, DRYRUN and the ACL file, as Redis 7.0.15 does them.
Every test runs against redis-server too (KEEL_TEST_AGAINST=redis)."""

import os
import tempfile

import pytest
import redis

from conftest import running_server

HASH_P1 = "f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a"  # sha256("p1")


@pytest.fixture(scope="module")
def acl_server():
    with running_server() as s:
        yield s


@pytest.fixture
def r(acl_server):
    c = acl_server.client()
    for name in c.acl_users():
        if name != "default":
            c.acl_deluser(name)
    c.execute_command("ACL", "SETUSER", "default", "reset", "on", "nopass", "~*", "&*", "+@all")
    c.execute_command("ACL", "SETUSER", "default", "skip-sanitize-payload")
    c.acl_log_reset()
    c.flushall()
    yield c
    c.close()


def as_user(server, user, password):
    return server.client(username=user, password=password)


def acl_log(r, *count):
    """ACL LOG less the refusals of CLIENT SETINFO, which redis-py sends on
    connecting and Redis 7.0 does not have."""
    return [e for e in r.acl_log(*count) if e["object"] != "client|setinfo"]


def wait_gone(r, text):
    """CLIENT LIST no longer shows `text` (a killed client goes asynchronously)."""
    import time
    deadline = time.time() + 3
    while text in r.execute_command("CLIENT", "LIST") and time.time() < deadline:
        time.sleep(0.02)
    return text not in r.execute_command("CLIENT", "LIST")


def line(r, name):
    return [entry for entry in r.acl_list() if entry.startswith(f"user {name} ")][0]


def setuser(r, name, *rules):
    return r.execute_command("ACL", "SETUSER", name, *rules)


def test_default_user_as_redis_lists_it(acl_server):
    c = acl_server.client()
    c.execute_command("ACL", "SETUSER", "default", "reset", "on", "nopass", "~*", "&*", "+@all")
    # `reset` sets sanitize-payload; a fresh server has neither flag.
    assert line(c, "default") == "user default on nopass sanitize-payload ~* &* +@all"
    with running_server() as s:
        fresh = s.client()
        assert fresh.acl_list() == ["user default on nopass ~* &* +@all"]
        assert fresh.acl_whoami() == "default"
        assert fresh.acl_users() == ["default"]


@pytest.mark.parametrize("rules,want", [
    (["on", ">p1", "~cache:*", "+@read"], f"on #{HASH_P1} ~cache:* resetchannels -@all +@read"),
    (["reset", "+get", "+set", "-set"], "off sanitize-payload resetchannels -@all +get"),
    (["reset", "+@read", "-get"], "off sanitize-payload resetchannels -@all +@read -get"),
    (["reset", "+@all", "-get"], "off sanitize-payload resetchannels +@all -get"),
    (["reset", "+get", "+@read"], "off sanitize-payload resetchannels -@all +@read"),
    (["reset", "+@read", "+@write", "-@read"], "off sanitize-payload resetchannels -@all +@write"),
    (["reset", "+@read", "+@write"], "off sanitize-payload resetchannels -@all +@write +@read"),
    (["reset", "+@admin", "+@dangerous"], "off sanitize-payload resetchannels -@all +@dangerous"),
    (["reset", "+@string", "-get", "+@read"], "off sanitize-payload resetchannels -@all +@read +@string"),
    (["reset", "nocommands", "+@hash", "+@set"], "off sanitize-payload resetchannels -@all +@set +@hash"),
    (["reset", "+@all", "-@dangerous"], "off sanitize-payload resetchannels +@all -@dangerous"),
    (["reset", "+@pubsub", "-publish"], "off sanitize-payload resetchannels -@all +@pubsub -publish"),
    (["reset", "+client", "-client|kill"], "off sanitize-payload resetchannels -@all +client -client|kill"),
    (["reset", "allcommands", "allkeys", "allchannels", "on", "nopass"],
     "on nopass sanitize-payload ~* &* +@all"),
    (["reset", "nopass", "%R~r:*", "%W~w:*", "~rw:*", "&ch*", "(+get ~x*)"],
     "off nopass sanitize-payload %R~r:* %W~w:* ~rw:* resetchannels &ch* -@all (~x* resetchannels -@all +get)"),
    (["reset", "(+get", "~x*)", "(+set ~y*)", "clearselectors", "(+del ~z*)"],
     "off sanitize-payload resetchannels -@all (~z* resetchannels -@all +del)"),
    (["reset", ">a", ">b", "<a", "skip-sanitize-payload"],
     "off skip-sanitize-payload #3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d resetchannels -@all"),
    (["reset", ">a", "nopass"], "off nopass sanitize-payload resetchannels -@all"),
    (["reset", "nopass", "resetpass"], "off sanitize-payload resetchannels -@all"),
    (["reset", "~a", "resetkeys", "~b", "&c", "resetchannels", "&d"],
     "off sanitize-payload ~b resetchannels &d -@all"),
])
def test_setuser_rules_and_list(r, rules, want):
    assert setuser(r, "u", *rules) == "OK"
    assert line(r, "u") == f"user u {want}"


def test_getuser_layout(r):
    setuser(r, "bob", "on", "nopass", "%R~r:*", "%W~w:*", "&ch*", "+get", "(+get ~x*)")
    raw = r.execute_command("ACL", "GETUSER", "bob")
    assert raw == [
        "flags", ["on", "nopass"],
        "passwords", [],
        "commands", "-@all +get",
        "keys", "%R~r:* %W~w:*",
        "channels", "&ch*",
        "selectors", [["commands", "-@all +get", "keys", "~x*", "channels", ""]],
    ]
    setuser(r, "alice", "on", ">p1", "~cache:*", "+@read")
    raw = r.execute_command("ACL", "GETUSER", "alice")
    assert raw == ["flags", ["on"], "passwords", [HASH_P1], "commands", "-@all +@read",
                   "keys", "~cache:*", "channels", "", "selectors", []]
    assert r.execute_command("ACL", "GETUSER", "default") == [
        "flags", ["on", "nopass", "skip-sanitize-payload"], "passwords", [], "commands", "+@all",
        "keys", "~*", "channels", "&*", "selectors", []]
    assert r.execute_command("ACL", "GETUSER", "nobody") is None


def test_getuser_resp3_is_a_map(acl_server, r):
    setuser(r, "m", "on", "~k", "+get")
    c = acl_server.client(protocol=3)
    got = c.execute_command("ACL", "GETUSER", "m")
    assert got["commands"] == "-@all +get"
    assert got["keys"] == "~k"
    assert list(got["flags"]) == ["on"]
    c.close()


@pytest.mark.parametrize("rules,error", [
    (["badrule"], "Error in ACL SETUSER modifier 'badrule': Syntax error"),
    (["+nosuch"], "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"),
    (["+@nosuch"], "Error in ACL SETUSER modifier '+@nosuch': Unknown command or category name in ACL"),
    (["+client|nosuch"],
     "Error in ACL SETUSER modifier '+client|nosuch': Unknown command or category name in ACL"),
    (["%X~a"], "Error in ACL SETUSER modifier '%X~a': Syntax error"),
    (["~a", "("], "Unmatched parenthesis in acl selector starting at '('."),
    (["#abc"], "Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 "
               "characters and contain only lowercase hexadecimal characters"),
    (["allkeys", "~a"], "Error in ACL SETUSER modifier '~a': Adding a pattern after the * pattern "
                        "(or the 'allkeys' flag) is not valid and does not have any effect. Try "
                        "'resetkeys' to start with an empty list of patterns"),
    (["allchannels", "&a"], "Error in ACL SETUSER modifier '&a': Adding a pattern after the * "
                            "pattern (or the 'allchannels' flag) is not valid and does not have any "
                            "effect. Try 'resetchannels' to start with an empty list of channels"),
    (["<nothere"], "Error in ACL SETUSER modifier '<nothere': The password you are trying to "
                   "remove from the user does not exist"),
])
def test_setuser_errors_change_nothing(r, rules, error):
    setuser(r, "u", "on", "+get")
    before = line(r, "u")
    with pytest.raises(redis.ResponseError) as e:
        setuser(r, "u", "+set", *rules)
    assert str(e.value) == error
    assert line(r, "u") == before
    with pytest.raises(redis.ResponseError):
        setuser(r, "ghost", *rules)
    assert "ghost" not in r.acl_users()


def test_users_deluser_whoami_cat_genpass(r):
    setuser(r, "b")
    setuser(r, "a")
    assert r.acl_users() == ["a", "b", "default"]
    with pytest.raises(redis.ResponseError, match="The 'default' user cannot be removed"):
        r.acl_deluser("a", "default")
    assert r.acl_users() == ["a", "b", "default"]
    assert r.execute_command("ACL", "DELUSER", "a", "nope", "b") == 2
    assert r.execute_command("ACL", "WHOAMI") == "default"
    cats = r.acl_cat()
    assert cats[:21] == ["keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
                         "bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast",
                         "slow", "blocking", "dangerous", "connection", "transaction", "scripting"]
    assert "get" in r.acl_cat("read") and "set" not in r.acl_cat("read")
    assert "client|kill" in r.acl_cat("admin") and "client" in r.acl_cat("slow")
    with pytest.raises(redis.ResponseError, match="Unknown category 'nosuch'"):
        r.acl_cat("nosuch")
    assert len(r.acl_genpass()) == 64
    assert len(r.acl_genpass(5)) == 2
    assert len(r.acl_genpass(4096)) == 1024
    assert r.acl_genpass() != r.acl_genpass()
    for bad in (0, 4097, -1):
        with pytest.raises(redis.ResponseError, match="positive number up to 4096"):
            r.execute_command("ACL", "GENPASS", bad)
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.execute_command("ACL", "GENPASS", "x")
    with pytest.raises(redis.ResponseError, match="unknown subcommand 'nosuch'. Try ACL HELP."):
        r.execute_command("ACL", "nosuch")
    assert r.execute_command("ACL", "HELP")[0].startswith("ACL <subcommand>")


def test_auth_users_and_wrongpass_never_succeeds(acl_server, r):
    setuser(r, "alice", "on", ">p1", "~*", "+@all")
    c = as_user(acl_server, "alice", "p1")
    assert c.acl_whoami() == "alice"
    assert "user=alice" in c.client_info() or c.client_info()["user"] == "alice"
    c.close()
    c = acl_server.client()
    for _ in range(5):
        with pytest.raises(redis.AuthenticationError):
            c.execute_command("AUTH", "alice", "wrong")
        with pytest.raises(redis.AuthenticationError):
            c.execute_command("AUTH", "nobody", "p1")
    assert c.acl_whoami() == "default"
    log = acl_log(r)
    assert [(e["reason"], e["username"], e["count"], e["context"], e["object"]) for e in log] == [
        ("auth", "nobody", 5, "toplevel", "AUTH"), ("auth", "alice", 5, "toplevel", "AUTH")]
    setuser(r, "alice", "off")
    with pytest.raises(redis.AuthenticationError,
                       match="invalid username-password pair or user is disabled"):
        c.execute_command("AUTH", "alice", "p1")
    with pytest.raises(redis.RedisError, match="without any password configured"):
        c.execute_command("AUTH", "x")
    setuser(r, "alice", "on")
    assert "proto" in c.execute_command("HELLO", "2", "AUTH", "alice", "p1")
    assert c.acl_whoami() == "alice"
    c.close()


def test_requirepass_sets_the_default_password(acl_server, r):
    r.config_set("requirepass", "sekret")
    try:
        assert line(r, "default").startswith(
            "user default on skip-sanitize-payload #"
        ) or line(r, "default").startswith("user default on #")
        c = acl_server.client()
        with pytest.raises(redis.AuthenticationError):
            c.ping()
        c.close()
        c = acl_server.client(password="sekret")
        assert c.ping()
        assert c.acl_whoami() == "default"
        c.close()
        with pytest.raises(redis.AuthenticationError):
            acl_server.client(password="wrong").ping()
    finally:
        r.config_set("requirepass", "")
    assert "nopass" in line(r, "default")


def test_command_key_and_channel_denials(acl_server, r):
    setuser(r, "s", "on", ">pw", "~k*", "&c*", "+@all", "-set")
    c = as_user(acl_server, "s", "pw")
    with pytest.raises(redis.exceptions.NoPermissionError) as e:
        c.set("k1", "v")
    assert str(e.value) == "this user has no permissions to run the 'set' command"
    with pytest.raises(redis.exceptions.NoPermissionError) as e:
        c.get("zz")
    assert str(e.value) == "this user has no permissions to access one of the keys used as arguments"
    with pytest.raises(redis.exceptions.NoPermissionError) as e:
        c.publish("x", "m")
    assert str(e.value) == ("this user has no permissions to access one of the channels used "
                            "as arguments")
    setuser(r, "s", "-client|kill")
    with pytest.raises(redis.exceptions.NoPermissionError) as e:
        c.execute_command("CLIENT", "KILL", "ID", "999999")
    assert str(e.value) == "this user has no permissions to run the 'client|kill' command"
    assert c.get("k1") is None
    assert c.publish("c1", "m") == 0
    log = acl_log(r)
    got = [(e["reason"], e["context"], e["object"], e["username"]) for e in log]
    assert ("command", "toplevel", "set", "s") in got
    assert ("key", "toplevel", "zz", "s") in got
    assert ("channel", "toplevel", "x", "s") in got
    entry = log[0]
    assert list(entry.keys()) == ["count", "reason", "context", "object", "username",
                                  "age-seconds", "client-info"]
    info = entry["client-info"]
    assert (info["user"] if isinstance(info, dict) else info.split(" user=")[1].split()[0]) == "s"
    c.close()


def test_read_write_key_permissions(r):
    setuser(r, "w", "on", "nopass", "%W~w:*", "%R~r:*", "+@all")
    cases = {
        ("set", "w:1", "v"): "OK",
        ("set", "r:1", "v"): "This user has no permissions to access the 'r:1' key",
        ("get", "w:1"): "This user has no permissions to access the 'w:1' key",
        ("get", "r:1"): "OK",
        ("set", "w:1", "v", "get"): "This user has no permissions to access the 'w:1' key",
        ("append", "w:1", "x"): "OK",
        ("rpoplpush", "r:1", "w:1"): "This user has no permissions to access the 'r:1' key",
        ("copy", "r:1", "w:2"): "OK",
        ("del", "w:1"): "OK",
        ("exists", "w:1"): "OK",
        ("exists", "r:1"): "OK",
        ("exists", "z"): "This user has no permissions to access the 'z' key",
        ("rename", "w:1", "w:2"): "This user has no permissions to access the 'w:1' key",
    }
    for argv, want in cases.items():
        assert r.execute_command("ACL", "DRYRUN", "w", *argv) == want, argv


def test_dryrun_errors_and_channels(r):
    setuser(r, "d", "on", "nopass", "~*", "resetchannels", "&ch*", "+@all")
    assert r.execute_command("ACL", "DRYRUN", "d", "publish", "ch1", "m") == "OK"
    assert r.execute_command("ACL", "DRYRUN", "d", "publish", "x", "m") == \
        "This user has no permissions to access the 'x' channel"
    assert r.execute_command("ACL", "DRYRUN", "d", "subscribe", "ch1", "y") == \
        "This user has no permissions to access the 'y' channel"
    assert r.execute_command("ACL", "DRYRUN", "d", "psubscribe", "ch*") == "OK"
    assert r.execute_command("ACL", "DRYRUN", "d", "psubscribe", "ch1*") == \
        "This user has no permissions to access the 'ch1*' channel"
    with pytest.raises(redis.ResponseError, match="User 'nope' not found"):
        r.execute_command("ACL", "DRYRUN", "nope", "get", "x")
    with pytest.raises(redis.ResponseError, match="Command 'nosuch' not found"):
        r.execute_command("ACL", "DRYRUN", "d", "nosuch")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'get' command"):
        r.execute_command("ACL", "DRYRUN", "d", "get")


def test_selectors_allow_what_any_selector_allows(r):
    setuser(r, "sel", "on", "nopass", "-@all", "~a*", "+get", "(+set ~x*)")
    dry = lambda *a: r.execute_command("ACL", "DRYRUN", "sel", *a)  # noqa: E731
    assert dry("get", "a1") == "OK"
    assert dry("set", "x1", "v") == "OK"
    assert dry("set", "a1", "v") == "This user has no permissions to access the 'a1' key"
    assert dry("get", "x1") == "This user has no permissions to access the 'x1' key"
    assert dry("del", "a1") == "This user has no permissions to run the 'del' command"


def test_multi_and_scripts_are_checked_the_same_way(acl_server, r):
    setuser(r, "s", "on", ">pw", "~k*", "&c*", "+@all", "-set")
    c = as_user(acl_server, "s", "pw")
    p = c.pipeline(transaction=True)
    p.get("zz")
    p.set("k", "v")
    p.get("k")
    with pytest.raises(redis.exceptions.NoPermissionError) as e:
        p.execute()
    assert "no permissions to access one of the keys" in str(e.value)
    # Refused while queued: the transaction is discarded at EXEC.
    conn = c.connection_pool.get_connection("MULTI")
    try:
        conn.send_command("MULTI")
        assert conn.read_response() == b"OK" or conn.read_response
        conn.send_command("SET", "k", "v")
        with pytest.raises(redis.exceptions.NoPermissionError):
            conn.read_response()
        conn.send_command("GET", "k")
        assert conn.read_response() in (b"QUEUED", "QUEUED")
        conn.send_command("EXEC")
        with pytest.raises(redis.exceptions.ExecAbortError):
            conn.read_response()
    finally:
        c.connection_pool.release(conn)
    with pytest.raises(redis.ResponseError) as e:
        c.eval("return redis.call('set','k','v')", 0)
    assert str(e.value).startswith(
        "The user executing the script can't run this command or subcommand")
    with pytest.raises(redis.ResponseError) as e:
        c.eval("return redis.call('get','zz')", 0)
    assert str(e.value).startswith("The user executing the script can't access at least one of "
                                   "the keys mentioned in the command arguments")
    assert c.eval("return redis.pcall('get','zz')['err']", 0).startswith(
        "ERR The user executing the script can't access")
    got = [(e["reason"], e["context"], e["object"]) for e in acl_log(r)]
    assert ("key", "multi", "zz") in got
    assert ("command", "multi", "set") in got
    assert ("command", "lua", "set") in got
    assert ("key", "lua", "zz") in got
    c.close()


def test_log_count_reset_and_max_len(acl_server, r):
    setuser(r, "s", "on", ">pw", "-@all", "+get", "~*")
    c = as_user(acl_server, "s", "pw")
    for i in range(5):
        with pytest.raises(redis.exceptions.NoPermissionError):
            c.execute_command("SET", f"k{i}", "v")
    assert len(acl_log(r)) == 1 and acl_log(r)[0]["count"] == 5
    for cmd in ("del", "incr", "append"):
        with pytest.raises(redis.exceptions.NoPermissionError):
            c.execute_command(cmd.upper(), "k", *(["v"] if cmd == "append" else []))
    assert [e["object"] for e in acl_log(r)] == ["append", "incr", "del", "set"]
    assert [e["object"] for e in acl_log(r, 2)] == ["append", "incr"]
    assert r.execute_command("ACL", "LOG", "-1") == []
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.execute_command("ACL", "LOG", "x")
    r.config_set("acllog-max-len", "2")
    try:
        with pytest.raises(redis.exceptions.NoPermissionError):
            c.execute_command("DECR", "k")
        assert [e["object"] for e in acl_log(r)] == ["decr", "append"]
    finally:
        r.config_set("acllog-max-len", "128")
    assert r.acl_log_reset()
    assert acl_log(r) == []
    c.close()


def test_deleted_user_is_disconnected_and_client_kill_user(acl_server, r):
    setuser(r, "gone", "on", ">pw", "~*", "+@all")
    setuser(r, "kept", "on", ">pw", "~*", "+@all")
    g = as_user(acl_server, "gone", "pw")
    k = as_user(acl_server, "kept", "pw")
    g.ping()
    k.ping()
    listed = r.execute_command("CLIENT", "LIST")
    assert "user=gone" in listed and "user=kept" in listed
    assert r.acl_deluser("gone") == 1
    assert wait_gone(r, "user=gone")
    assert r.execute_command("CLIENT", "KILL", "USER", "kept") == 1
    with pytest.raises(redis.ResponseError, match="No such user 'nope'"):
        r.execute_command("CLIENT", "KILL", "USER", "nope")
    g.close()
    k.close()


def test_changes_apply_to_connected_clients(acl_server, r):
    setuser(r, "live", "on", ">pw", "~*", "+@all")
    c = as_user(acl_server, "live", "pw")
    assert c.set("a", "1")
    setuser(r, "live", "-set")
    with pytest.raises(redis.exceptions.NoPermissionError):
        c.set("a", "2")
    setuser(r, "live", "+set")
    assert c.set("a", "3")
    c.close()


def test_aclfile_save_load_and_restart():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "users.acl")
        with open(path, "w") as f:
            f.write("user default on nopass ~* &* +@all\nuser boot on #%s ~b* -@all +get\n" % HASH_P1)
        with running_server("--aclfile", path) as s:
            c = s.client()
            assert sorted(c.acl_users()) == ["boot", "default"]
            assert line(c, "boot") == f"user boot on #{HASH_P1} ~b* resetchannels -@all +get"
            setuser(c, "added", "on", ">x", "~a*", "&c*", "+@read", "(+set ~s*)")
            want = sorted(c.acl_list())
            assert c.execute_command("ACL", "SAVE") == "OK"
            other = s.client(username="added", password="x")
            other.get("a1")
            setuser(c, "added", "reset")
            setuser(c, "temp")
            assert c.execute_command("ACL", "LOAD") == "OK"
            # The default user's clients stay; the others' are disconnected.
            assert c.acl_whoami() == "default"
            assert wait_gone(c, "user=added")
            other.close()
            assert sorted(c.acl_list()) == want
            with open(path, "a") as f:
                f.write("user broken on +nosuch\n")
            with pytest.raises(redis.ResponseError) as e:
                c.execute_command("ACL", "LOAD")
            assert "Unknown command or category name in ACL" in str(e.value)
            assert sorted(c.acl_list()) == want
            with open(path, "w") as f:
                f.write("".join(x + "\n" for x in want))
        with running_server("--aclfile", path) as s:
            assert sorted(s.client().acl_list()) == want


def test_load_and_save_need_an_aclfile(r):
    for sub in ("LOAD", "SAVE"):
        with pytest.raises(redis.ResponseError,
                           match="This Redis instance is not configured to use an ACL file"):
            r.execute_command("ACL", sub)


def test_user_directive_in_config_file():
    with tempfile.TemporaryDirectory() as d:
        with running_server("--user", "cfg", "on", ">pw", "~c*", "+@read") as s:
            c = s.client()
            assert line(c, "cfg").startswith("user cfg on #")
            u = s.client(username="cfg", password="pw")
            assert u.get("c1") is None
            with pytest.raises(redis.exceptions.NoPermissionError):
                u.set("c1", "v")
            u.close()


def arities(server):
    """Every command's and subcommand's arity, as COMMAND INFO reports it."""
    c = server.client()
    c.set_response_callback("COMMAND", lambda reply, **_: reply)
    out = {}
    for info in c.execute_command("COMMAND"):
        out[info[0]] = info[1]
        for sub in info[9] or []:
            out[sub[0]] = sub[1]
    c.close()
    return out


def test_permission_matrix_by_category(acl_server, r):
    """Every category against a read-only user and a key-pattern user: DRYRUN agrees
    with the category lists the server itself reports."""
    setuser(r, "ro", "on", "nopass", "~*", "&*", "+@read")
    setuser(r, "kp", "on", "nopass", "~cache:*", "&*", "+@all")
    read = set(r.acl_cat("read"))
    setuser(r, "none", "on", "nopass", "~*", "&*", "-@all")
    arity = arities(acl_server)

    def argv_of(name):
        parts = name.split("|")
        return parts + ["cache:1"] * (max(abs(arity[name]), len(parts)) - len(parts))

    # Containers (CLIENT, CONFIG, ...) are run through their subcommands.
    containers = {name.split("|")[0] for name in arity if "|" in name}
    # Commands open to every user (AUTH and its kind), whatever the rules.
    everyone = {name for name in arity if name not in containers
                and r.execute_command("ACL", "DRYRUN", "none", *argv_of(name)) == "OK"}
    assert "auth" in everyone and "get" not in everyone and len(everyone) <= 5
    seen = 0
    for category in r.acl_cat():
        for name in sorted(r.acl_cat(category)):
            if name in containers:
                continue
            argv = argv_of(name)
            got = r.execute_command("ACL", "DRYRUN", "ro", *argv)
            if name in read or name in everyone:
                assert got == "OK", (category, name, got)
            else:
                assert got == f"This user has no permissions to run the '{name}' command", \
                    (category, name, got)
            assert r.execute_command("ACL", "DRYRUN", "kp", *argv) == "OK", (category, name)
            seen += 1
    assert seen > 300


def test_key_pattern_user_matrix(r):
    """For every command whose first key is its first argument, a key outside
    ~cache:* is refused and one inside is allowed."""
    setuser(r, "kp", "on", "nopass", "~cache:*", "&*", "+@all")
    checked = 0
    for name in sorted(r.acl_cat("keyspace") + r.acl_cat("string") + r.acl_cat("hash")
                       + r.acl_cat("list") + r.acl_cat("set") + r.acl_cat("sortedset")):
        if "|" in name:
            continue
        argv = [name, "other:1"] + ["cache:f"] * 7
        try:
            got = r.execute_command("ACL", "DRYRUN", "kp", *argv)
        except redis.ResponseError:
            continue
        if got == "OK":
            continue
        assert got == "This user has no permissions to access the 'other:1' key", (name, got)
        argv[1] = "cache:1"
        assert r.execute_command("ACL", "DRYRUN", "kp", *argv) == "OK", name
        checked += 1
    assert checked > 50


def test_aclfile_and_user_directives_together_are_refused():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "users.acl")
        with open(path, "w") as f:
            f.write("user default on nopass ~* &* +@all\n")
        with pytest.raises(RuntimeError, match="not both"):
            with running_server("--aclfile", path, "--user", "x", "on"):
                pass


def test_acl_pubsub_default_allchannels():
    with running_server("--acl-pubsub-default", "allchannels") as s:
        c = s.client()
        setuser(c, "p", "on", "nopass", "+@all")
        assert line(c, "p") == "user p on nopass &* +@all"
        assert c.execute_command("ACL", "DRYRUN", "p", "publish", "any", "m") == "OK"
        c.config_set("acl-pubsub-default", "resetchannels")
        setuser(c, "q", "on", "nopass", "+@all")
        assert line(c, "q") == "user q on nopass resetchannels +@all"


def test_subscriber_losing_its_channel_is_disconnected(acl_server, r):
    import time
    setuser(r, "p", "on", "nopass", "~*", "&*", "+@all")
    c = acl_server.client(username="p", password="x")
    ps = c.pubsub()
    ps.subscribe("ch1")
    assert ps.get_message(timeout=1)["type"] == "subscribe"
    setuser(r, "p", "resetchannels", "&ch*")
    time.sleep(0.1)
    assert "user=p" in r.execute_command("CLIENT", "LIST")
    setuser(r, "p", "resetchannels", "&other")
    assert wait_gone(r, "user=p")
    ps.close()
    c.close()


def test_first_argument_rules(r, acl_server):
    """`+command|arg` on a command without subcommands allows it with that
    first argument only (compared without case), as Redis 7.0 does."""
    def rules():
        (line,) = [u for u in r.acl_list() if u.startswith("user fa ")]
        return set(line.split(" resetchannels ")[1].split()) - {"-@all"}

    assert r.acl_setuser("fa", enabled=True, nopass=True, keys=["*"],
                         commands=["+select|0", "+get|k1", "+get|K2", "+get|k1"])
    assert rules() == {"+select|0", "+get|k1", "+get|K2"}
    c = acl_server.client()
    c.execute_command("AUTH", "fa", "x")
    assert c.execute_command("SELECT", 0) in ("OK", True)
    with pytest.raises(redis.exceptions.NoPermissionError):
        c.execute_command("SELECT", 1)
    r.set("k1", "v1")
    r.set("K1", "v2")
    assert c.get("k1") == "v1"
    # The argument is compared without case: GET K1 passes the command check.
    assert c.get("K1") == "v2"
    assert c.get("k2") is None
    with pytest.raises(redis.exceptions.NoPermissionError):
        c.get("k3")
    assert r.acl_dryrun("fa", "SELECT", "0") == "OK"
    assert r.acl_dryrun("fa", "select", "2") == (
        "This user has no permissions to run the 'select' command")
    # A rule naming the whole command, or a category holding it, drops them.
    r.acl_setuser("fa", commands=["+@string"])
    assert rules() == {"+@string", "+select|0"}
    r.acl_setuser("fa", commands=["-select"])
    assert rules() == {"+@string"}
    # Once the whole command is allowed, a first-argument rule adds nothing.
    r.acl_setuser("fa", commands=["+select", "+select|3"])
    assert rules() == {"+@string", "+select"}
    for rule, why in [("-select|0", "Unknown command or category name in ACL"),
                      ("+select|", "Syntax error"),
                      ("+config|get|x", "Allowing first-arg of a subcommand is not supported")]:
        with pytest.raises(redis.ResponseError) as e:
            r.acl_setuser("fa", commands=[rule])
        assert str(e.value) == f"Error in ACL SETUSER modifier '{rule}': {why}"
    r.acl_setuser("fa", commands=["-@all", "+@all", "-select", "+select|1", "+select|2"])
    # (redis-py sends "off" when enabled is not given.)
    assert "user fa off nopass ~* resetchannels +@all -select +select|1 +select|2" in r.acl_list()
    c.close()

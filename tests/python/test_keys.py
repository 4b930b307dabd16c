"""Generic key commands: DEL, EXISTS, TYPE, TOUCH, the EXPIRE/TTL families,
PERSIST, KEYS, SCAN, RENAME, RANDOMKEY, COPY, MOVE and OBJECT."""

import socket
import time

import pytest
import redis

from rawresp import encode


def err(fn, *args):
    """The text of the error a call raises."""
    with pytest.raises(redis.ResponseError) as e:
        fn(*args)
    return str(e.value)


def cmd_err(r, *args):
    return err(r.execute_command, *args)


def select_db(client, db):
    """Switch `client` to `db`."""
    client.execute_command("SELECT", db)


@pytest.fixture
def resp3(r3):
    return r3


def scan_all(r, **kw):
    keys, cursor, calls = [], 0, 0
    while True:
        cursor, batch = r.scan(cursor, **kw)
        keys.extend(batch)
        calls += 1
        if cursor == 0:
            return keys, calls


# DEL / UNLINK / EXISTS / TOUCH / TYPE


def test_del_and_unlink_count_removed_keys(r):
    for k in ("a", "b", "c"):
        r.set(k, 1)
    assert r.delete("a", "a", "missing") == 1
    assert r.unlink("b", "c", "missing") == 2
    assert r.delete("a") == 0
    assert r.dbsize() == 0


def test_exists_counts_duplicates(r):
    r.set("a", 1)
    r.set("b", 1)
    assert r.exists("a", "a", "b", "missing") == 3
    assert r.exists("missing") == 0


def test_touch_counts_existing(r):
    r.set("a", 1)
    assert r.touch("a", "missing", "a") == 2


def test_type(r):
    r.set("s", "v")
    assert r.type("s") == "string"
    assert r.type("missing") == "none"


def test_type_resp3(resp3):
    resp3.set("s", "v")
    assert resp3.type("s") == "string"
    assert resp3.type("missing") == "none"


@pytest.mark.parametrize("cmd", ["DEL", "UNLINK", "EXISTS", "TOUCH", "TYPE", "TTL", "PTTL",
                                 "EXPIRETIME", "PEXPIRETIME", "PERSIST", "KEYS", "SCAN"])
def test_wrong_arity_one_arg_commands(r, cmd):
    assert cmd_err(r, cmd) == f"wrong number of arguments for '{cmd.lower()}' command"


@pytest.mark.parametrize("argv", [["TYPE", "a", "b"], ["TTL", "a", "b"], ["PERSIST", "a", "b"],
                                  ["KEYS", "a", "b"], ["RENAME", "a"], ["RENAMENX", "a", "b", "c"],
                                  ["RANDOMKEY", "x"], ["COPY", "a"], ["MOVE", "a"],
                                  ["EXPIRE", "a"], ["PEXPIREAT", "a"]])
def test_wrong_arity_other_commands(r, argv):
    assert cmd_err(r, *argv) == f"wrong number of arguments for '{argv[0].lower()}' command"


# EXPIRE family, TTL family, PERSIST


def test_expire_and_ttl(r):
    assert r.expire("missing", 10) is False
    assert r.ttl("missing") == -2
    assert r.pttl("missing") == -2
    assert r.expiretime("missing") == -2
    assert r.pexpiretime("missing") == -2
    r.set("k", "v")
    assert r.ttl("k") == -1
    assert r.pttl("k") == -1
    assert r.expiretime("k") == -1
    assert r.pexpiretime("k") == -1
    assert r.expire("k", 100) is True
    assert 99 <= r.ttl("k") <= 100
    assert 99_000 < r.pttl("k") <= 100_000
    assert r.pexpire("k", 50_000) is True
    assert 49 <= r.ttl("k") <= 50
    now = int(time.time())
    assert r.expireat("k", now + 1000) is True
    assert r.expiretime("k") == now + 1000
    assert r.pexpiretime("k") == (now + 1000) * 1000
    assert r.pexpireat("k", (now + 500) * 1000 + 123) is True
    assert r.pexpiretime("k") == (now + 500) * 1000 + 123
    # EXPIRETIME truncates to seconds.
    assert r.expiretime("k") == now + 500


def test_ttl_rounds_to_nearest_second(r):
    r.set("k", "v", px=1600)
    assert r.ttl("k") == 2
    r.set("k", "v", px=1400)
    assert r.ttl("k") == 1


def test_persist(r):
    r.set("k", "v", ex=100)
    assert r.persist("k") is True
    assert r.ttl("k") == -1
    assert r.persist("k") is False
    assert r.persist("missing") is False


def test_set_clears_ttl(r):
    r.set("k", "v", ex=100)
    r.set("k", "w")
    assert r.ttl("k") == -1


def test_expire_options(r):
    r.set("k", "v")
    assert r.expire("k", 100, xx=True) is False
    assert r.expire("k", 100, gt=True) is False  # no TTL counts as infinite
    assert r.expire("k", 100, lt=True) is True
    assert r.expire("k", 200, nx=True) is False
    assert r.expire("k", 200, lt=True) is False
    assert r.expire("k", 50, gt=True) is False
    assert r.expire("k", 200, gt=True) is True
    assert r.expire("k", 150, xx=True) is True
    assert 149 <= r.ttl("k") <= 150
    r.persist("k")
    assert r.expire("k", 100, nx=True) is True
    assert r.execute_command("EXPIRE", "k", "50", "xx", "lt") == 1
    assert r.execute_command("PEXPIRE", "k", "10", "nx", "nx") == 0


def test_expire_option_errors(r):
    r.set("k", "v")
    nx_err = "NX and XX, GT or LT options at the same time are not compatible"
    for opts in (["NX", "XX"], ["NX", "GT"], ["LT", "NX"]):
        assert cmd_err(r, "EXPIRE", "k", "10", *opts) == nx_err
    assert cmd_err(r, "PEXPIRE", "k", "10", "GT", "LT") == \
        "GT and LT options at the same time are not compatible"
    assert cmd_err(r, "EXPIRE", "k", "10", "FOO") == "Unsupported option FOO"
    # Options are checked before the number.
    assert cmd_err(r, "EXPIRE", "k", "abc", "bar") == "Unsupported option bar"
    assert cmd_err(r, "EXPIRE", "k", "abc") == "value is not an integer or out of range"
    assert cmd_err(r, "EXPIREAT", "k", "1.5") == "value is not an integer or out of range"
    assert r.ttl("k") == -1


@pytest.mark.parametrize("argv", [
    ["EXPIRE", "k", "9223372036854776"],
    ["EXPIRE", "k", "-9223372036854776"],
    ["PEXPIRE", "k", "9223372036854775807"],
    ["EXPIREAT", "k", "9223372036854776"],
])
def test_expire_overflow(r, argv):
    r.set("k", "v")
    assert cmd_err(r, *argv) == f"invalid expire time in '{argv[0].lower()}' command"
    assert r.exists("k") == 1


def test_expire_far_future_is_accepted(r):
    r.set("k", "v")
    assert r.execute_command("PEXPIREAT", "k", "9223372036854775807") == 1
    assert r.pexpiretime("k") == 9223372036854775807


@pytest.mark.parametrize("argv", [["EXPIRE", "k", "0"], ["EXPIRE", "k", "-10"],
                                  ["PEXPIRE", "k", "-1"], ["EXPIREAT", "k", "1"],
                                  ["PEXPIREAT", "k", "0"]])
def test_past_deadline_deletes(r, argv):
    r.set("k", "v")
    assert r.execute_command(*argv) == 1
    assert r.exists("k") == 0
    assert r.ttl("k") == -2


def test_gt_refuses_past_deadline_on_persistent_key(r):
    r.set("k", "v")
    assert r.expire("k", -1, gt=True) is False
    assert r.exists("k") == 1
    assert r.expire("k", -1, lt=True) is True
    assert r.exists("k") == 0


# KEYS and SCAN


def test_keys_patterns(r):
    for k in ["hello", "hallo", "hxllo", "hllo", "heeeello", "h*llo", "other"]:
        r.set(k, 1)
    assert sorted(r.keys("*")) == sorted(["hello", "hallo", "hxllo", "hllo", "heeeello",
                                          "h*llo", "other"])
    assert sorted(r.keys("h?llo")) == ["h*llo", "hallo", "hello", "hxllo"]
    assert sorted(r.keys("h*llo")) == ["h*llo", "hallo", "heeeello", "hello", "hllo", "hxllo"]
    assert sorted(r.keys("h[ae]llo")) == ["hallo", "hello"]
    assert sorted(r.keys("h[^e]llo")) == ["h*llo", "hallo", "hxllo"]
    assert sorted(r.keys("h[a-b]llo")) == ["hallo"]
    assert r.keys("h\\*llo") == ["h*llo"]
    assert r.keys("HELLO") == []
    assert r.keys("nothing*") == []


def test_keys_skips_expired(r):
    r.set("live", 1)
    r.set("dead", 1, px=30)
    time.sleep(0.1)
    assert r.keys("*") == ["live"]


def test_keys_resp3(resp3):
    resp3.set("a", 1)
    assert resp3.keys("*") == ["a"]


def test_scan_full_iteration(r):
    for i in range(1000):
        r.set(f"key:{i}", i)
    keys, calls = scan_all(r)
    assert len(keys) == 1000 and set(keys) == {f"key:{i}" for i in range(1000)}
    assert calls > 10  # the default COUNT of 10 splits the walk
    keys, calls = scan_all(r, count=100)
    assert len(set(keys)) == 1000
    assert calls < 30


def test_scan_match_and_type(r):
    for i in range(100):
        r.set(f"a:{i}", i)
        r.set(f"b:{i}", i)
    keys, _ = scan_all(r, match="a:1*", count=20)
    assert sorted(set(keys)) == sorted(["a:1"] + [f"a:1{i}" for i in range(10)])
    keys, _ = scan_all(r, _type="string", count=50)
    assert len(set(keys)) == 200
    keys, _ = scan_all(r, _type="STRING", match="b:*", count=50)
    assert len(set(keys)) == 100
    # Redis 7.0 filters an unknown type name down to nothing rather than failing.
    keys, _ = scan_all(r, _type="nosuchtype", count=50)
    assert keys == []
    keys, _ = scan_all(r, _type="list", count=50)
    assert keys == []


def test_scan_returns_keys_present_throughout(r):
    for i in range(500):
        r.set(f"stay:{i}", i)
        r.set(f"churn:{i}", i)
    seen, cursor, step = set(), 0, 0
    while True:
        cursor, batch = r.scan(cursor, count=20)
        seen.update(batch)
        if cursor == 0:
            break
        r.delete(f"churn:{step}")
        r.set(f"new:{step}", 1)
        step += 1
    assert step > 5
    assert {f"stay:{i}" for i in range(500)} <= seen


def test_scan_skips_expired(r):
    r.set("live", 1)
    for i in range(20):
        r.set(f"dead:{i}", 1, px=30)
    time.sleep(0.1)
    keys, _ = scan_all(r, count=1000)
    assert keys == ["live"]


def raw_reply(server, *argv):
    """Send one command and return the reply's bytes as the server wrote them."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(encode(*argv))
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data


def test_scan_reply_shape(r, server):
    r.set("k", 1)
    assert r.execute_command("SCAN", "0", "COUNT", "100") == (0, ["k"])
    # The cursor is a bulk string, as in Redis.
    assert raw_reply(server, "SCAN", "0", "COUNT", "100") == b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nk\r\n"


def test_scan_reply_shape_resp3(resp3):
    resp3.set("k", 1)
    assert resp3.scan(0, count=100) == (0, ["k"])


def test_scan_errors(r):
    assert cmd_err(r, "SCAN", "abc") == "invalid cursor"
    assert cmd_err(r, "SCAN", " 0") == "invalid cursor"
    assert cmd_err(r, "SCAN", "1x") == "invalid cursor"
    assert cmd_err(r, "SCAN", "18446744073709551616") == "invalid cursor"
    assert cmd_err(r, "SCAN", "0", "COUNT", "0") == "syntax error"
    assert cmd_err(r, "SCAN", "0", "COUNT", "-3") == "syntax error"
    assert cmd_err(r, "SCAN", "0", "COUNT", "x") == "value is not an integer or out of range"
    assert cmd_err(r, "SCAN", "0", "MATCH") == "syntax error"
    assert cmd_err(r, "SCAN", "0", "TYPE") == "syntax error"
    assert cmd_err(r, "SCAN", "0", "BOGUS", "1") == "syntax error"


def test_scan_accepts_strtoul_cursors(r):
    r.set("k", 1)
    # Redis reads the cursor with strtoul: a sign is accepted, an empty one is 0.
    assert r.execute_command("SCAN", "+0", "COUNT", "100") == (0, ["k"])
    assert r.execute_command("SCAN", "", "COUNT", "100") == (0, ["k"])


# RENAME / RENAMENX


def test_rename(r):
    assert cmd_err(r, "RENAME", "missing", "x") == "no such key"
    assert cmd_err(r, "RENAME", "missing", "missing") == "no such key"
    r.set("a", "1", ex=100)
    r.set("b", "2")
    assert r.rename("a", "b") is True
    assert r.get("b") == "1"
    assert r.exists("a") == 0
    assert 99 <= r.ttl("b") <= 100
    r.set("c", "3", ex=100)
    assert r.rename("b", "c") is True
    assert 99 <= r.ttl("c") <= 100  # the source's TTL, not the overwritten one
    r.persist("c")
    r.set("d", "4", ex=100)
    assert r.rename("c", "d") is True
    assert r.ttl("d") == -1


def test_rename_to_itself(r):
    r.set("a", "1", ex=100)
    assert r.rename("a", "a") is True
    assert r.get("a") == "1"
    assert 99 <= r.ttl("a") <= 100
    assert r.renamenx("a", "a") is False


def test_renamenx(r):
    assert cmd_err(r, "RENAMENX", "missing", "x") == "no such key"
    r.set("a", "1")
    r.set("b", "2")
    assert r.renamenx("a", "b") is False
    assert r.get("a") == "1" and r.get("b") == "2"
    assert r.renamenx("a", "c") is True
    assert r.get("c") == "1" and r.exists("a") == 0


def test_rename_of_expired_key(r):
    r.set("a", "1", px=30)
    time.sleep(0.1)
    assert cmd_err(r, "RENAME", "a", "b") == "no such key"


# RANDOMKEY


def test_randomkey_resp3(resp3):
    assert resp3.randomkey() is None
    resp3.set("k", 1)
    assert resp3.randomkey() == "k"


def test_randomkey(r):
    assert r.randomkey() is None
    names = {f"k{i}" for i in range(5)}
    for k in names:
        r.set(k, 1)
    seen = {r.randomkey() for _ in range(300)}
    assert seen == names


def test_randomkey_skips_expired(r):
    for i in range(50):
        r.set(f"dead{i}", 1, px=30)
    r.set("live", 1)
    time.sleep(0.1)
    for _ in range(20):
        assert r.randomkey() == "live"


# COPY / MOVE


def test_copy(r):
    assert r.copy("missing", "x") is False
    r.set("a", "1", ex=100)
    assert r.copy("a", "b") is True
    assert r.get("b") == "1"
    assert 99 <= r.ttl("b") <= 100
    r.set("b", "2")
    assert r.copy("a", "b") is False
    assert r.get("b") == "2"
    assert r.copy("a", "b", replace=True) is True
    assert r.get("b") == "1"
    r.set("a", "changed")
    assert r.get("b") == "1"


def test_copy_errors(r):
    r.set("a", "1")
    same = "source and destination objects are the same"
    assert cmd_err(r, "COPY", "a", "a") == same
    assert cmd_err(r, "COPY", "a", "a", "DB", "0") == same
    assert cmd_err(r, "COPY", "missing", "missing") == same
    assert cmd_err(r, "COPY", "a", "b", "DB", "16") == "DB index is out of range"
    assert cmd_err(r, "COPY", "a", "b", "DB", "-1") == "DB index is out of range"
    assert cmd_err(r, "COPY", "a", "b", "DB", "x") == "value is not an integer or out of range"
    assert cmd_err(r, "COPY", "a", "b", "DB", "4294967296") == \
        "value is out of range, value must between -2147483648 and 2147483647"
    assert cmd_err(r, "COPY", "a", "b", "DB") == "syntax error"
    assert cmd_err(r, "COPY", "a", "b", "FOO") == "syntax error"


def test_copy_to_other_db(r, server):
    r.set("a", "1", ex=100)
    assert r.copy("a", "a", destination_db=1) is True
    assert r.copy("a", "a", destination_db=1) is False
    assert r.copy("a", "a", destination_db=1, replace=True) is True
    # The key already exists in db 1, so MOVE refuses.
    assert r.move("a", 1) is False
    other = server.client()
    try:
        select_db(other, 1)
        assert other.get("a") == "1"
        assert 99 <= other.ttl("a") <= 100
        other.flushdb()
    finally:
        other.close()


def test_move(r, server):
    r.set("a", "1", ex=100)
    assert r.move("missing", 1) is False
    assert r.move("a", 1) is True
    assert r.exists("a") == 0
    r.set("a", "2")
    assert r.move("a", 1) is False
    assert r.get("a") == "2"
    other = server.client()
    try:
        select_db(other, 1)
        assert other.get("a") == "1"
        assert 99 <= other.ttl("a") <= 100
        assert other.move("a", 0) is False
        assert other.move("a", 2) is True
        other.flushall()
    finally:
        other.close()


def test_move_errors(r):
    r.set("a", "1")
    assert cmd_err(r, "MOVE", "a", "0") == "source and destination objects are the same"
    assert cmd_err(r, "MOVE", "a", "16") == "DB index is out of range"
    assert cmd_err(r, "MOVE", "a", "-1") == "DB index is out of range"
    assert cmd_err(r, "MOVE", "a", "x") == "value is not an integer or out of range"
    assert cmd_err(r, "MOVE", "a", "-2147483649") == \
        "value is out of range, value must between -2147483648 and 2147483647"


# OBJECT


def test_object_encoding_resp3(resp3):
    resp3.set("e", "hello")
    assert resp3.object("encoding", "missing") is None
    assert resp3.object("encoding", "e") == "embstr"
    assert resp3.object("refcount", "e") == 1


def test_object_encoding(r):
    r.set("i", "12345")
    r.set("e", "hello")
    r.set("raw", "x" * 45)
    assert r.object("encoding", "i") == "int"
    assert r.object("encoding", "e") == "embstr"
    assert r.object("encoding", "raw") == "raw"
    assert r.object("encoding", "missing") is None


def test_object_refcount_idletime_freq(r):
    r.set("k", "v")
    assert r.object("refcount", "k") == 1
    assert r.object("refcount", "missing") is None
    assert r.object("idletime", "k") in (0, 1)
    assert r.object("idletime", "missing") is None
    assert r.object("freq", "missing") is None
    assert err(r.object, "freq", "k") == (
        "An LFU maxmemory policy is not selected, access frequency not tracked. Please note "
        "that when switching between policies at runtime LRU and LFU data will take some time "
        "to adjust.")


def test_object_idletime_grows_without_access(r):
    r.set("k", "v")
    time.sleep(2.1)
    assert r.object("idletime", "k") >= 2
    # TTL and OBJECT do not count as accesses.
    r.ttl("k")
    assert r.object("idletime", "k") >= 2
    r.get("k")
    assert r.object("idletime", "k") == 0


def test_object_help_and_errors(r):
    lines = r.execute_command("OBJECT", "HELP")
    assert lines[0].startswith("OBJECT <subcommand>")
    text = "\n".join(lines)
    for word in ("ENCODING", "FREQ", "IDLETIME", "REFCOUNT", "HELP"):
        assert word in text
    assert cmd_err(r, "OBJECT", "foo", "k") == "unknown subcommand 'foo'. Try OBJECT HELP."
    assert cmd_err(r, "OBJECT") == "wrong number of arguments for 'object' command"
    assert cmd_err(r, "OBJECT", "ENCODING") == \
        "wrong number of arguments for 'object|encoding' command"
    assert cmd_err(r, "OBJECT", "REFCOUNT", "a", "b") == \
        "wrong number of arguments for 'object|refcount' command"



def test_object_refcount_of_shared_integers(r):
    r.set("small", "100")
    r.set("big", "100000")
    assert r.object("refcount", "small") == 2147483647
    assert r.object("refcount", "big") == 1


def test_object_encoding_after_in_place_changes(r):
    r.set("k", "1")
    r.append("k", "2")
    assert r.object("encoding", "k") == "raw"
    r.setrange("s", 0, "12345")
    assert r.object("encoding", "s") == "raw"
    r.set("k", "12")
    assert r.object("encoding", "k") == "int"


def test_unknown_command_quotes_at_most_128_bytes_of_arguments(r):
    args = ["a" * 50, "b" * 50, "c" * 50, "d" * 10]
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("NOPE", *args)
    assert str(e.value) == (
        "unknown command 'NOPE', with args beginning with: "
        f"'{'a' * 50}' '{'b' * 50}' '{'c' * 22}' "
    )

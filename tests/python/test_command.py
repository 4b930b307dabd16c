"""The COMMAND family: what clients learn about the server's commands."""

import pytest
import redis

from rawresp import Map, Raw, Set

HELP_SUBS = ("COUNT", "LIST", "INFO", "DOCS", "GETKEYS", "GETKEYSANDFLAGS", "HELP")


def info(r, *names):
    # "COMMAND INFO" as one name keeps redis-py from applying COMMAND's parser.
    return r.execute_command("COMMAND INFO", *names)


def test_command_lists_every_command(r):
    table = r.command()
    assert len(table) == r.command_count()
    for name in ("get", "set", "ping", "client", "command", "multi", "hello", "auth"):
        assert name in table
    get = table["get"]
    assert get["arity"] == 2
    assert get["first_key_pos"] == 1 and get["last_key_pos"] == 1 and get["step_count"] == 1
    assert set(get["flags"]) == {"readonly", "fast"}
    top_level = [n for n in r.command_list() if "|" not in n]
    assert sorted(top_level) == sorted(table)


def test_command_with_resp3(r3):
    table = r3.command()
    assert len(table) == r3.command_count()
    assert table["set"]["arity"] == -3


def test_command_count(r):
    n = r.command_count()
    assert isinstance(n, int) and n > 10
    with pytest.raises(redis.ResponseError,
                       match="^wrong number of arguments for 'command|count' command$"):
        r.execute_command("COMMAND", "COUNT", "x")


def test_command_info_shape(r):
    get, missing, client_list = info(r, "get", "nosuchcommand", "CLIENT|LIST")
    assert missing is None
    assert len(get) == 10
    name, arity, flags, first, last, step, cats, tips, specs, subs = get
    assert (name, arity, first, last, step) == ("get", 2, 1, 1, 1)
    assert flags == ["readonly", "fast"]
    assert cats == ["@read", "@string", "@fast"]
    assert tips == [] and subs == []
    (spec,) = specs
    spec = dict(zip(spec[::2], spec[1::2]))
    assert spec["flags"][0] == "RO"
    assert spec["begin_search"] == ["type", "index", "spec", ["index", 1]]
    assert spec["find_keys"] == ["type", "range", "spec", ["lastkey", 0, "keystep", 1, "limit", 0]]
    assert client_list[0] == "client|list"
    assert client_list[1] == -2
    assert "admin" in client_list[2]
    assert client_list[6] == ["@admin", "@slow", "@dangerous", "@connection"]


def test_command_info_case_and_no_keys(r):
    (ping,) = info(r, "PING")
    assert ping[0] == "ping"
    assert ping[1] == -1
    assert ping[3:6] == [0, 0, 0]
    assert ping[8] == []
    (auth,) = info(r, "auth")
    assert "no_auth" in auth[2]
    (select,) = info(r, "select")
    assert select[6] == ["@fast", "@connection"]


def test_command_info_subcommands(r):
    (client,) = info(r, "client")
    assert client[0] == "client"
    assert client[1] == -2
    assert client[2] == []
    assert client[6] == ["@slow"]
    sub_names = {s[0] for s in client[9]}
    assert {"client|id", "client|list", "client|kill", "client|setname",
            "client|getname", "client|info", "client|no-evict", "client|help"} <= sub_names
    (command,) = info(r, "command")
    assert {s[0] for s in command[9]} >= {f"command|{s.lower()}" for s in HELP_SUBS}


def test_command_info_without_names_is_everything(r):
    assert len(info(r)) == r.command_count()


def test_command_info_resp3_types(raw):
    raw.cmd("HELLO", "3")
    (get,) = raw.cmd("COMMAND", "INFO", "get")
    assert isinstance(get[2], Set) and get[2] == ["readonly", "fast"]
    assert isinstance(get[6], Set)
    assert isinstance(get[7], Set) and get[7] == []
    assert isinstance(get[8], Set) and isinstance(get[8][0], Map)
    assert isinstance(get[9], Set) and get[9] == []
    assert raw.cmd("COMMAND", "INFO", "nosuch") == [None]
    (client,) = raw.cmd("COMMAND", "INFO", "client")
    assert isinstance(client[9], list) and not isinstance(client[9], Set)


def test_command_docs(r, r3):
    docs = r3.execute_command("COMMAND DOCS", "get", "nosuch", "CLIENT")
    assert set(docs) == {"get", "client"}
    get = docs["get"]
    assert get["group"] == "string"
    assert get["since"] == "1.0.0"
    assert get["complexity"] == "O(1)"
    assert get["summary"]
    client = docs["client"]
    assert client["group"] == "connection"
    assert "client|list" in client["subcommands"]
    assert client["subcommands"]["client|list"]["group"] == "connection"
    # RESP2: a flat name, doc, name, doc array.
    flat = r.execute_command("COMMAND DOCS", "ping")
    assert flat[0] == "ping"
    fields = flat[1]
    assert fields[fields.index("group") + 1] == "connection"
    assert r.execute_command("COMMAND DOCS", "nosuch") == []


def test_command_docs_covers_every_command(r3):
    docs = r3.execute_command("COMMAND DOCS")
    assert len(docs) == r3.command_count()
    for name, doc in docs.items():
        # Redis leaves complexity out for a few internal commands.
        for field in ("summary", "since", "group"):
            assert field in doc, (name, field)


def test_command_list(r):
    names = r.command_list()
    assert "get" in names and "client|list" in names and "command|docs" in names
    assert len(names) == len(set(names))
    conn = r.command_list(category="connection")
    assert {"ping", "echo", "auth", "hello", "select", "client|id"} <= set(conn)
    assert "get" not in conn
    assert r.command_list(category="@connection") == []
    assert r.command_list(category="nosuchcategory") == []
    assert r.command_list(pattern="CLIENT|L*") == ["client|list"]
    assert set(r.command_list(pattern="ech?")) == {"echo"}
    assert r.command_list(module="nosuchmodule") == []
    reads = r.command_list(category="read")
    assert "get" in reads and "set" not in reads


def test_command_list_errors(r):
    for args in (("FILTERBY",), ("FILTERBY", "NAME", "x"), ("FILTERBY", "PATTERN"),
                 ("x",), ("FILTERBY", "PATTERN", "a", "b")):
        with pytest.raises(redis.ResponseError, match="^syntax error$"):
            r.execute_command("COMMAND", "LIST", *args)


def test_command_getkeys(r):
    assert r.command_getkeys("SET", "k", "v") == ["k"]
    assert r.command_getkeys("get", "a") == ["a"]
    assert r.execute_command("COMMAND GETKEYS", "WATCH", "a", "b", "c") == ["a", "b", "c"]


def test_command_getkeys_errors(r):
    cases = [
        (("nosuch", "x"), "^Invalid command specified$"),
        (("client", "nosuch", "x"), "^Invalid command specified$"),
        (("ping", "x"), "^The command has no key arguments$"),
        (("client", "kill", "x"), "^The command has no key arguments$"),
        (("get", "a", "b"), "^Invalid number of arguments specified for command$"),
        (("set", "a"), "^Invalid number of arguments specified for command$"),
        (("get",), "^wrong number of arguments for 'command|getkeys' command$"),
    ]
    for args, message in cases:
        with pytest.raises(redis.ResponseError, match=message):
            r.execute_command("COMMAND GETKEYS", *args)


def test_command_getkeysandflags(r):
    assert r.command_getkeysandflags("GET", "k") == [["k", ["RO", "access"]]]
    ((key, flags),) = r.command_getkeysandflags("SET", "k", "v")
    assert key == "k" and "update" in flags
    with pytest.raises(redis.ResponseError, match="^The command has no key arguments$"):
        r.command_getkeysandflags("PING", "x")


def test_command_help_and_unknown(r):
    lines = r.execute_command("COMMAND HELP")
    assert lines[0].startswith("COMMAND <subcommand>")
    text = "\n".join(lines)
    for sub in HELP_SUBS:
        assert sub in text
    with pytest.raises(redis.ResponseError, match=r"^unknown subcommand 'NOPE'. Try COMMAND HELP.$"):
        r.execute_command("COMMAND", "NOPE")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments for 'command|help'"):
        r.execute_command("COMMAND", "HELP", "x")

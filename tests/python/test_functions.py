"""FUNCTION and FCALL: Lua libraries as Redis 7.0.15 keeps and runs them.

Replies are compared byte for byte on a bare connection (see test_scripting.Wire).
"""

import time

import pytest

from conftest import Server
from test_scripting import Wire, bulk


@pytest.fixture
def w(server, r):
    c = Wire(server.port)
    assert c.cmd("FUNCTION", "FLUSH") == b"+OK\r\n"
    yield c
    c.cmd("FUNCTION", "FLUSH")
    c.close()


@pytest.fixture
def w3(server, r):
    c = Wire(server.port, protocol=3)
    assert c.cmd("FUNCTION", "FLUSH") == b"+OK\r\n"
    yield c
    c.cmd("FUNCTION", "FLUSH")
    c.close()


def lib(name, *bodies):
    return f"#!lua name={name}\n" + "\n".join(bodies)


def one(name, fname, ret="1"):
    return lib(name, f"redis.register_function('{fname}', function(keys, args) return {ret} end)")


def fn_err(text, fname, line):
    return f"-{text} script: {fname}, on @user_function:{line}.\r\n".encode()


REGISTER = "ERR Error registering functions: "
NAME_RULES = ("Library names can only contain letters, numbers, or underscores(_) and must be "
              "at least one character long")


# ---------------------------------------------------------------- FUNCTION LOAD


def test_load_returns_the_library_name(w):
    assert w.cmd("FUNCTION", "LOAD", one("mylib", "f")) == bulk("mylib")
    assert w.cmd("FCALL", "f", 0) == b":1\r\n"


@pytest.mark.parametrize("code, error", [
    ("redis.register_function('f', function() return 1 end)", "ERR Missing library metadata"),
    (" #!lua name=b\nredis.register_function('f', function() return 1 end)",
     "ERR Missing library metadata"),
    ("#!lua\nredis.register_function('f', function() return 1 end)",
     "ERR Library name was not given"),
    ("#!lua name=\nredis.register_function('f', function() return 1 end)", f"ERR {NAME_RULES}"),
    ("#!lua name=l-b\nredis.register_function('f', function() return 1 end)", f"ERR {NAME_RULES}"),
    ("#!python name=lib\nredis.register_function('f', function() return 1 end)",
     "ERR Engine 'python' not found"),
    ("#!lua name=lib foo=bar\nredis.register_function('f', function() return 1 end)",
     "ERR Invalid metadata value given: foo=bar"),
    ("#!lua name=lx name=lw\nredis.register_function('f', function() return 1 end)",
     "ERR Invalid metadata value, name argument was given multiple times"),
    ("#!lua name=a", "ERR Invalid library metadata"),
    ("#!lua name=lib\n", "ERR No functions registered"),
    ("#!lua name=lib\nreturn +",
     "ERR Error compiling function: user_function:2: unexpected symbol near '+'"),
])
def test_load_header_and_body_errors(w, code, error):
    assert w.cmd("FUNCTION", "LOAD", code) == f"-{error}\r\n".encode()


def test_load_header_spacing_and_engine_case(w):
    assert w.cmd("FUNCTION", "LOAD", "#!lua  name=lz  \n"
                 "redis.register_function('gz', function() return 1 end)") == bulk("lz")
    assert w.cmd("FUNCTION", "LOAD", "#!LUA name=ly\n"
                 "redis.register_function('gy', function() return 1 end)") == bulk("ly")


@pytest.mark.parametrize("body, error", [
    ("error('boom')",
     "ERR user_function:2: Script attempted to access nonexistent global variable 'error'"),
    ("redis.call('set','x','1')",
     "ERR user_function:2: Script attempted to access nonexistent global variable 'call'"),
    ("redis.register_function('f', function() return 1 end)\nredis.setresp(3)",
     "ERR user_function:3: Script attempted to access nonexistent global variable 'setresp'"),
    ("return math.random()",
     "ERR user_function:2: Script attempted to access nonexistent global variable 'math'"),
    ("x = 1\nredis.register_function('h', function() return 1 end)",
     "ERR user_function:2: Attempt to modify a readonly table"),
    ("redis.register_function('f-1', function() return 1 end)", f"ERR {NAME_RULES}"),
    ("redis.register_function('', function() return 1 end)", f"ERR {NAME_RULES}"),
    ("redis.register_function('f', 'x')",
     "ERR second argument to redis.register_function must be a function"),
    ("redis.register_function('f')",
     "ERR calling redis.register_function with a single argument is only applicable to Lua "
     "table (representing named arguments)."),
    ("redis.register_function()", "ERR wrong number of arguments to redis.register_function"),
    ("redis.register_function('f', function() return 1 end, 'x')",
     "ERR wrong number of arguments to redis.register_function"),
    ("redis.register_function('f', function() return 1 end)\n"
     "redis.register_function('f', function() return 2 end)",
     "ERR Function already exists in the library"),
    ("redis.register_function{function_name='f', callback=function() return 1 end, "
     "flags={'bad-flag'}}", "ERR unknown flag given"),
    ("redis.register_function{function_name='f', callback=function() return 1 end, flags={1}}",
     "ERR unknown flag given"),
    ("redis.register_function{function_name='f', callback=function() return 1 end, "
     "flags='no-writes'}",
     "ERR flags argument to redis.register_function must be a table representing function flags"),
    ("redis.register_function{function_name='f', callback=function() return 1 end, nope=1}",
     "ERR unknown argument given to redis.register_function"),
    ("redis.register_function{function_name='f', callback=function() return 1 end, "
     "description={}}",
     "ERR description argument given to redis.register_function must be a string"),
    ("redis.register_function{callback=function() return 1 end}",
     "ERR redis.register_function must get a function name argument"),
    ("redis.register_function{function_name='f'}",
     "ERR redis.register_function must get a callback argument"),
])
def test_registration_errors(w, body, error):
    assert w.cmd("FUNCTION", "LOAD", lib("lib", body)) == f"-{REGISTER}{error}\r\n".encode()
    assert w.cmd("FUNCTION", "LIST") == b"*0\r\n"


def test_load_that_never_ends_times_out(w):
    code = lib("spin", "redis.register_function('f', function() return 1 end)", "while true do end")
    started = time.time()
    assert w.cmd("FUNCTION", "LOAD", code) == (
        b"-ERR Error registering functions: ERR FUNCTION LOAD timeout\r\n")
    assert time.time() - started < 5
    assert w.cmd("FCALL", "f", 0) == b"-ERR Function not found\r\n"
    assert w.cmd("PING") == b"+PONG\r\n"


def test_load_time_api(w):
    # redis.log and the version constants work while loading; the rest waits for a call.
    code = lib("l", "local v = redis.REDIS_VERSION",
               "redis.log(redis.LOG_NOTICE, 'loading')",
               "redis.register_function('f', function() return v end)")
    assert w.cmd("FUNCTION", "LOAD", code) == bulk("l")
    assert w.cmd("FCALL", "f", 0) == bulk("7.0.15")


def test_duplicates_and_replace(w):
    assert w.cmd("FUNCTION", "LOAD", one("lib", "f")) == bulk("lib")
    assert w.cmd("FUNCTION", "LOAD", one("lib", "g")) == b"-ERR Library 'lib' already exists\r\n"
    assert w.cmd("FUNCTION", "LOAD", one("lib2", "f")) == b"-ERR Function f already exists\r\n"
    assert w.cmd("FUNCTION", "LOAD", "REPLACE", one("lib", "g", "2")) == bulk("lib")
    assert w.cmd("FCALL", "g", 0) == b":2\r\n"
    assert w.cmd("FCALL", "f", 0) == b"-ERR Function not found\r\n"
    # A function of another library cannot be taken over, even with REPLACE.
    assert w.cmd("FUNCTION", "LOAD", one("other", "h")) == bulk("other")
    assert w.cmd("FUNCTION", "LOAD", "REPLACE", one("lib", "h")) == (
        b"-ERR Function h already exists\r\n")
    assert w.cmd("FCALL", "g", 0) == b":2\r\n"
    assert w.cmd("FUNCTION", "LOAD", "replace", one("lib", "g", "3")) == bulk("lib")
    assert w.cmd("FCALL", "g", 0) == b":3\r\n"


def test_function_names_may_be_numbers(w):
    body = "redis.register_function{function_name=1, callback=function() return 'one' end}"
    assert w.cmd("FUNCTION", "LOAD", lib("lnum", body)) == bulk("lnum")
    assert w.cmd("FCALL", "1", 0) == bulk("one")


def test_load_argument_errors(w):
    assert w.cmd("FUNCTION", "LOAD") == (
        b"-ERR wrong number of arguments for 'function|load' command\r\n")
    assert w.cmd("FUNCTION", "LOAD", "bad", "x") == b"-ERR Unknown option given: bad\r\n"
    assert w.cmd("FUNCTION", "LOAD", "REPLACE") == b"-ERR Missing library metadata\r\n"


# ---------------------------------------------------------------- FCALL


FLAGGED = lib(
    "mylib",
    "redis.register_function{function_name='ro', callback=function(keys, args) "
    "return redis.call('get', keys[1]) end, flags={'no-writes'}, description='reads'}",
    "redis.register_function('rw', function(keys, args) return redis.call('set', keys[1], args[1]) end)",
)


def test_fcall_keys_and_args(w):
    code = lib("l", "redis.register_function('f', function(k, a) return {#k, #a, k[1], a[1]} end)")
    w.cmd("FUNCTION", "LOAD", code)
    assert w.cmd("FCALL", "f", 2, "a", "b", "c") == b"*4\r\n:2\r\n:1\r\n$1\r\na\r\n$1\r\nc\r\n"
    assert w.cmd("FCALL", "F", 0) == b"*2\r\n:0\r\n:0\r\n"


def test_function_names_ignore_case_library_names_do_not(w):
    w.cmd("FUNCTION", "LOAD", one("mylib", "Fn"))
    assert w.cmd("FUNCTION", "LOAD", one("MYLIB", "g")) == bulk("MYLIB")
    assert w.cmd("FUNCTION", "LOAD", one("other", "FN")) == b"-ERR Function FN already exists\r\n"
    assert w.cmd("FCALL", "fn", 0) == b":1\r\n"
    assert w.cmd("FCALL_RO", "fN", 0) == (
        b"-ERR Can not execute a script with write flag using *_ro command.\r\n")
    assert w.cmd("FUNCTION", "DELETE", "MYLIB") == b"+OK\r\n"
    assert w.cmd("FCALL", "g", 0) == b"-ERR Function not found\r\n"
    assert w.cmd("FCALL", "FN", 0) == b":1\r\n"


def test_fcall_errors(w):
    w.cmd("FUNCTION", "LOAD", one("l", "g"))
    assert w.cmd("FCALL", "nosuch", 0) == b"-ERR Function not found\r\n"
    assert w.cmd("FCALL_RO", "nosuch", 0) == b"-ERR Function not found\r\n"
    assert w.cmd("FCALL", "g", 1) == b"-ERR Number of keys can't be greater than number of args\r\n"
    assert w.cmd("FCALL", "g", -1) == b"-ERR Number of keys can't be negative\r\n"
    assert w.cmd("FCALL", "g", "x") == b"-ERR Bad number of keys provided\r\n"
    assert w.cmd("FCALL", "g") == b"-ERR wrong number of arguments for 'fcall' command\r\n"


def test_no_writes_and_fcall_ro(w):
    assert w.cmd("FUNCTION", "LOAD", FLAGGED) == bulk("mylib")
    assert w.cmd("FCALL", "rw", 1, "k", "v") == b"+OK\r\n"
    assert w.cmd("FCALL", "ro", 1, "k") == b"$1\r\nv\r\n"
    assert w.cmd("FCALL_RO", "ro", 1, "k") == b"$1\r\nv\r\n"
    assert w.cmd("FCALL_RO", "rw", 1, "k", "w") == (
        b"-ERR Can not execute a script with write flag using *_ro command.\r\n")
    code = lib("l2", "redis.register_function{function_name='ro_writes', callback=function(keys) "
                     "return redis.call('set', keys[1], 'x') end, flags={'no-writes'}}")
    w.cmd("FUNCTION", "LOAD", code)
    for cmd in ("FCALL", "FCALL_RO"):
        assert w.cmd(cmd, "ro_writes", 1, "k") == fn_err(
            "ERR Write commands are not allowed from read-only scripts.", "ro_writes", 2)
    assert w.cmd("GET", "k") == b"$1\r\nv\r\n"


def test_errors_from_functions(w):
    code = lib(
        "errs",
        "redis.register_function('err', function(keys) return redis.call('incr', keys[1]) end)",
        "redis.register_function('rt', function() local a = nil",
        "return a.b end)",
        "redis.register_function('errt', function() error('boom') end)",
        "redis.register_function('tbl', function() error({err='MINE here'}) end)",
        "redis.register_function('pc', function() return redis.pcall('incr', 's') end)",
        "redis.register_function('noglobals', function() return KEYS end)",
        "redis.register_function('noreg', function() return redis.register_function('x', "
        "function() end) end)",
    )
    assert w.cmd("FUNCTION", "LOAD", code) == bulk("errs")
    w.cmd("SET", "s", "abc")
    assert w.cmd("FCALL", "err", 1, "s") == fn_err(
        "ERR value is not an integer or out of range", "err", 2)
    assert w.cmd("FCALL", "rt", 0) == fn_err(
        "ERR user_function:4: attempt to index local 'a' (a nil value)", "rt", 4)
    assert w.cmd("FCALL", "errt", 0) == fn_err("ERR user_function:5: boom", "errt", 5)
    assert w.cmd("FCALL", "tbl", 0) == fn_err("MINE here", "tbl", 6)
    assert w.cmd("FCALL", "pc", 0) == b"-ERR value is not an integer or out of range\r\n"
    assert w.cmd("FCALL", "noglobals", 0) == fn_err(
        "ERR user_function:8: Script attempted to access nonexistent global variable 'KEYS'",
        "noglobals", 8)
    assert w.cmd("FCALL", "noreg", 0) == fn_err(
        "ERR user_function:9: attempt to call field 'register_function' (a nil value)", "noreg", 9)


def test_runtime_api_of_functions(w):
    code = lib("api", "redis.register_function('f', function() return {type(redis.call), "
                      "type(redis.pcall), type(redis.register_function), type(redis.setresp), "
                      "type(redis.log), type(math.random), type(redis.sha1hex), "
                      "type(redis.breakpoint), type(redis.replicate_commands), type(loadstring), "
                      "type(redis.error_reply), type(redis.set_repl), type(redis.debug)} end)")
    w.cmd("FUNCTION", "LOAD", code)
    names = ["function", "function", "nil", "function", "function", "function", "function",
             "nil", "nil", "function", "function", "function", "nil"]
    assert w.cmd("FCALL", "f", 0) == b"*13\r\n" + b"".join(bulk(n) for n in names)


def test_fcall_conversions_follow_the_caller(w, w3):
    code = lib("conv", "redis.register_function('f', function(keys) redis.setresp(3) "
                       "return {redis.call('hgetall', keys[1]), {double=1.5}, true, false} end)")
    w.cmd("FUNCTION", "LOAD", code)
    w.cmd("HSET", "h", "f", "v")
    assert w.cmd("FCALL", "f", 1, "h") == (
        b"*4\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n$3\r\n1.5\r\n:1\r\n:0\r\n")
    assert w3.cmd("FCALL", "f", 1, "h") == (
        b"*4\r\n%1\r\n$1\r\nf\r\n$1\r\nv\r\n,1.5\r\n#t\r\n#f\r\n")


# ---------------------------------------------------------------- LIST, STATS, DELETE, FLUSH


def _list_entries(code=None, resp3=False):
    """FUNCTION LIST of FLAGGED as bytes, in both orders of its two functions
    (Redis lists them in its hash table's order, which varies from run to run)."""
    def m(n):
        return (b"%%%d\r\n" % n) if resp3 else (b"*%d\r\n" % (2 * n))
    s = (lambda n: b"~%d\r\n" % n) if resp3 else (lambda n: b"*%d\r\n" % n)
    null = b"_\r\n" if resp3 else b"$-1\r\n"
    head = m(4 if code else 3) + bulk("library_name") + bulk("mylib") + bulk("engine") + bulk("LUA")
    head += bulk("functions") + b"*2\r\n"
    ro = m(3) + bulk("name") + bulk("ro") + bulk("description") + bulk("reads")
    ro += bulk("flags") + s(1) + b"+no-writes\r\n"
    rw = m(3) + bulk("name") + bulk("rw") + bulk("description") + null + bulk("flags") + s(0)
    tail = bulk("library_code") + bulk(code) if code else b""
    return [b"*1\r\n" + head + a + b + tail for a, b in ((ro, rw), (rw, ro))]


def _sorted_functions(r, *args):
    """FUNCTION LIST through redis-py, with each library's functions in name order
    (Redis lists them in its hash table's order)."""
    libs = r.execute_command("FUNCTION LIST", *args)
    for entry in libs:
        if isinstance(entry, dict):
            entry["functions"].sort(key=lambda f: f["name"])
        else:
            entry[5].sort(key=lambda f: f[1])
    return libs


def test_function_list_shapes(w, w3, r, r3):
    w.cmd("FUNCTION", "LOAD", FLAGGED)
    assert _sorted_functions(r) == [[
        "library_name", "mylib", "engine", "LUA", "functions",
        [["name", "ro", "description", "reads", "flags", ["no-writes"]],
         ["name", "rw", "description", None, "flags", []]]]]
    assert _sorted_functions(r, "WITHCODE")[0][6:] == ["library_code", FLAGGED]
    assert _sorted_functions(r3) == [{
        "library_name": "mylib", "engine": "LUA",
        "functions": [{"name": "ro", "description": "reads", "flags": ["no-writes"]},
                      {"name": "rw", "description": None, "flags": []}]}]
    # Byte for byte.
    for c, resp3 in ((w, False), (w3, True)):
        assert c.cmd("FUNCTION", "LIST") in _list_entries(resp3=resp3)
        assert c.cmd("FUNCTION", "LIST", "WITHCODE") in _list_entries(FLAGGED, resp3)


def test_function_list_filters(w, r):
    w.cmd("FUNCTION", "LOAD", FLAGGED)
    for pattern in ("my*", "*lib", "MY*", "m?lib", "[m]ylib", "mylib"):
        assert len(r.execute_command("FUNCTION LIST", "LIBRARYNAME", pattern)) == 1, pattern
    for pattern in ("my", "zz*", "x"):
        assert r.execute_command("FUNCTION LIST", "LIBRARYNAME", pattern) == [], pattern
    listed = _sorted_functions(r, "libraryname", "mylib", "withcode")
    assert listed[0][:2] == ["library_name", "mylib"] and listed[0][6] == "library_code"
    assert w.cmd("FUNCTION", "LIST", "LIBRARYNAME") == (
        b"-ERR library name argument was not given\r\n")
    assert w.cmd("FUNCTION", "LIST", "BAD") == b"-ERR Unknown argument BAD\r\n"
    assert w.cmd("FUNCTION", "LIST", "WITHCODE", "WITHCODE") == (
        b"-ERR Unknown argument WITHCODE\r\n")
    assert w.cmd("FUNCTION", "LIST", "LIBRARYNAME", "a", "LIBRARYNAME", "b") == (
        b"-ERR Unknown argument LIBRARYNAME\r\n")
    assert w.cmd("FUNCTION", "LIST", "withcode", "WithCode") == (
        b"-ERR Unknown argument WithCode\r\n")


def test_all_flags_listed_in_their_order(r, w):
    body = ("redis.register_function{function_name='f', callback=function() return 1 end, "
            "flags={'no-cluster', 'allow-stale', 'allow-cross-slot-keys', 'allow-oom', "
            "'no-writes', 'no-writes'}}")
    w.cmd("FUNCTION", "LOAD", lib("flags", body))
    (entry,) = r.execute_command("FUNCTION LIST")
    assert entry[5] == [["name", "f", "description", None, "flags",
                         ["no-writes", "allow-oom", "allow-stale", "no-cluster",
                          "allow-cross-slot-keys"]]]


def test_function_stats(w, w3):
    assert w.cmd("FUNCTION", "STATS") == (
        b"*4\r\n" + bulk("running_script") + b"$-1\r\n" + bulk("engines") + b"*2\r\n"
        + bulk("LUA") + b"*4\r\n" + bulk("libraries_count") + b":0\r\n"
        + bulk("functions_count") + b":0\r\n")
    w.cmd("FUNCTION", "LOAD", FLAGGED)
    assert w3.cmd("FUNCTION", "STATS") == (
        b"%2\r\n" + bulk("running_script") + b"_\r\n" + bulk("engines") + b"%1\r\n"
        + bulk("LUA") + b"%2\r\n" + bulk("libraries_count") + b":1\r\n"
        + bulk("functions_count") + b":2\r\n")
    assert w.cmd("FUNCTION", "STATS", "x") == (
        b"-ERR wrong number of arguments for 'function|stats' command\r\n")


def test_delete_and_flush(w):
    w.cmd("FUNCTION", "LOAD", one("a", "fa"))
    w.cmd("FUNCTION", "LOAD", one("b", "fb"))
    assert w.cmd("FUNCTION", "DELETE", "a") == b"+OK\r\n"
    assert w.cmd("FCALL", "fa", 0) == b"-ERR Function not found\r\n"
    assert w.cmd("FCALL", "fb", 0) == b":1\r\n"
    assert w.cmd("FUNCTION", "DELETE", "a") == b"-ERR Library not found\r\n"
    assert w.cmd("FUNCTION", "DELETE") == (
        b"-ERR wrong number of arguments for 'function|delete' command\r\n")
    for mode in ((), ("ASYNC",), ("sync",)):
        w.cmd("FUNCTION", "LOAD", "REPLACE", one("b", "fb"))
        assert w.cmd("FUNCTION", "FLUSH", *mode) == b"+OK\r\n"
        assert w.cmd("FUNCTION", "LIST") == b"*0\r\n"
    assert w.cmd("FUNCTION", "FLUSH", "bad") == (
        b"-ERR FUNCTION FLUSH only supports SYNC|ASYNC option\r\n")


def test_flushall_keeps_functions(w):
    w.cmd("FUNCTION", "LOAD", one("a", "fa"))
    w.cmd("FLUSHALL")
    assert w.cmd("FCALL", "fa", 0) == b":1\r\n"


def test_function_misc_errors(w):
    assert w.cmd("FUNCTION", "NOPE") == b"-ERR unknown subcommand 'NOPE'. Try FUNCTION HELP.\r\n"
    assert w.cmd("FUNCTION", "KILL") == b"-NOTBUSY No scripts in execution right now.\r\n"
    assert w.cmd("FUNCTION", "KILL", "x") == (
        b"-ERR wrong number of arguments for 'function|kill' command\r\n")
    assert w.cmd("FUNCTION", "DUMP", "x") == (
        b"-ERR wrong number of arguments for 'function|dump' command\r\n")
    assert b"\r\n+LOAD [REPLACE] <FUNCTION CODE>\r\n" in w.cmd("FUNCTION", "HELP")


# ---------------------------------------------------------------- DUMP and RESTORE


# FUNCTION DUMP of Redis 7.0.15 holding one library, `dumped` with `dumped_f`.
REDIS_DUMP = (b"\xf5\xc3@Q@W\x1f#!lua name=dumped\nredis.register\n_function('\x80\x1f\x04_f', "
              b"\xe0\x00\x14\x0e) return 'resto ;\x05' end)\n\x00\xe1\xd0\rVu\xb2\xf4\xce")
EMPTY_DUMP = b"\n\x00]\x9b\\@\x0f\x7f\xa2\xda"


def test_dump_of_nothing(w):
    assert w.cmd("FUNCTION", "DUMP") == bulk(EMPTY_DUMP)
    assert w.cmd("FUNCTION", "RESTORE", EMPTY_DUMP) == b"+OK\r\n"
    assert w.cmd("FUNCTION", "LIST") == b"*0\r\n"


def test_restore_a_redis_payload(w):
    assert w.cmd("FUNCTION", "RESTORE", REDIS_DUMP) == b"+OK\r\n"
    assert w.cmd("FCALL", "dumped_f", 0) == bulk("restored")


def test_dump_restore_round_trip(w):
    l1, l1b = one("l1", "f1", "1"), one("l1", "f1", "11")
    w.cmd("FUNCTION", "LOAD", l1)
    reply = w.cmd("FUNCTION", "DUMP")
    payload = reply[reply.index(b"\r\n") + 2:-2]
    assert w.cmd("FUNCTION", "RESTORE", payload) == b"-ERR Library l1 already exists\r\n"
    assert w.cmd("FUNCTION", "RESTORE", payload, "APPEND") == b"-ERR Library l1 already exists\r\n"
    assert w.cmd("FUNCTION", "RESTORE", payload, "REPLACE") == b"+OK\r\n"
    w.cmd("FUNCTION", "FLUSH")
    w.cmd("FUNCTION", "LOAD", l1b)
    assert w.cmd("FUNCTION", "RESTORE", payload, "REPLACE") == b"+OK\r\n"
    assert w.cmd("FCALL", "f1", 0) == b":1\r\n"
    # A function name held by another library refuses the restore, and nothing changes.
    w.cmd("FUNCTION", "FLUSH")
    w.cmd("FUNCTION", "LOAD", one("l3", "f1", "3"))
    assert w.cmd("FUNCTION", "RESTORE", payload, "REPLACE") == b"-ERR Function f1 already exists\r\n"
    assert w.cmd("FUNCTION", "RESTORE", payload, "APPEND") == b"-ERR Function f1 already exists\r\n"
    assert w.cmd("FCALL", "f1", 0) == b":3\r\n"
    # FLUSH drops everything first.
    w.cmd("FUNCTION", "LOAD", one("other", "zz"))
    assert w.cmd("FUNCTION", "RESTORE", payload, "flush") == b"+OK\r\n"
    assert w.cmd("FCALL", "f1", 0) == b":1\r\n"
    assert w.cmd("FCALL", "zz", 0) == b"-ERR Function not found\r\n"


def test_restore_errors(w):
    assert w.cmd("FUNCTION", "RESTORE", "garbage") == (
        b"-ERR DUMP payload version or checksum are wrong\r\n")
    assert w.cmd("FUNCTION", "RESTORE", "") == b"-ERR DUMP payload version or checksum are wrong\r\n"
    assert w.cmd("FUNCTION", "RESTORE", REDIS_DUMP[:-1]) == (
        b"-ERR DUMP payload version or checksum are wrong\r\n")
    assert w.cmd("FUNCTION", "RESTORE", "garbage", "BAD") == (
        b"-ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.\r\n")
    assert w.cmd("FUNCTION", "RESTORE", REDIS_DUMP, "FLUSH", "x") == (
        b"-ERR unknown subcommand or wrong number of arguments for 'RESTORE'. Try FUNCTION HELP.\r\n")
    assert w.cmd("FUNCTION", "LIST") == b"*0\r\n"


# ---------------------------------------------------------------- BUSY


BUSY_FUNCTION = (b"-BUSY Redis is busy running a script. You can only call FUNCTION KILL or "
                 b"SHUTDOWN NOSAVE.\r\n")


def test_busy_function_is_killed_with_function_kill():
    s = Server("--busy-reply-threshold", "200")
    try:
        a, b = Wire(s.port), Wire(s.port)
        code = lib("loops", "redis.register_function('loop', function() while true do end end)",
                   "redis.register_function{function_name='roloop', callback=function() "
                   "while true do end end, flags={'no-writes'}}")
        assert a.cmd("FUNCTION", "LOAD", code) == bulk("loops")
        for cmd, fname, line in (("FCALL", "loop", 2), ("FCALL_RO", "roloop", 3)):
            a.send(cmd, fname, 0)
            deadline = time.time() + 5
            while (reply := b.cmd("PING")) == b"+PONG\r\n":
                assert time.time() < deadline
                time.sleep(0.05)
            assert reply == BUSY_FUNCTION
            assert b.cmd("SCRIPT", "KILL") == BUSY_FUNCTION
            assert b.cmd("FUNCTION", "KILL") == b"+OK\r\n"
            assert a.reply() == fn_err("ERR Script killed by user with SCRIPT KILL...", fname, line)
            assert b.cmd("PING") == b"+PONG\r\n"
        a.close()
        b.close()
    finally:
        s.stop()

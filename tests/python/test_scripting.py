"""EVAL, EVALSHA, their _RO forms and SCRIPT: Lua scripts as Redis 7.0.15 runs them.

Replies are compared byte for byte on a bare connection (`Wire`), so that the
RESP type of every reply (null bulk or RESP3 null, integer or boolean, double
or bulk string) is checked along with its value, and error texts are checked
whole, prefix included.
"""

import glob
import hashlib
import os
import socket
import time

import pytest

from conftest import AGAINST_REDIS, Server, refuses_aof, running_server


class Wire:
    """A bare RESP connection whose replies are the exact bytes the server sent."""

    def __init__(self, port, protocol=2):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.f = self.sock.makefile("rb")
        if protocol == 3:
            assert self.cmd("HELLO", "3").startswith(b"%")

    def send(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)

    def reply(self):
        line = self.f.readline()
        if not line:
            raise ConnectionError("closed by server")
        kind, rest = line[:1], line[1:-2]
        out = line
        if kind in b"$=!" and int(rest) >= 0:
            out += self.f.read(int(rest) + 2)
        elif kind in b"*~>" and int(rest) >= 0:
            out += b"".join(self.reply() for _ in range(int(rest)))
        elif kind in b"%|":
            out += b"".join(self.reply() for _ in range(2 * int(rest)))
        return out

    def cmd(self, *args):
        self.send(*args)
        return self.reply()

    def close(self):
        self.f.close()
        self.sock.close()


@pytest.fixture
def w(server, r):
    c = Wire(server.port)
    yield c
    c.close()


@pytest.fixture
def w3(server, r):
    c = Wire(server.port, protocol=3)
    yield c
    c.close()


def sha(body):
    return hashlib.sha1(body.encode() if isinstance(body, str) else body).hexdigest()


def script_err(text, body, line):
    """The error a script raises, as Redis reports it: where it came from appended."""
    return f"-{text} script: {sha(body)}, on @user_script:{line}.\r\n".encode()


def bulk(s):
    s = s.encode() if isinstance(s, str) else s
    return b"$%d\r\n%s\r\n" % (len(s), s)


def ev(c, body, *keys_then_args, numkeys=0):
    return c.cmd("EVAL", body, numkeys, *keys_then_args)


# ---------------------------------------------------------------- EVAL and friends


def test_numkeys_errors(w):
    assert w.cmd("EVAL", "return 1", 2, "a") == (
        b"-ERR Number of keys can't be greater than number of args\r\n")
    assert w.cmd("EVAL", "return 1", -1) == b"-ERR Number of keys can't be negative\r\n"
    assert w.cmd("EVAL", "return 1", "x") == b"-ERR value is not an integer or out of range\r\n"
    assert w.cmd("EVAL", "return 1", "1.5") == b"-ERR value is not an integer or out of range\r\n"
    assert w.cmd("EVALSHA", sha("return 1"), 3, "a", "b") == (
        b"-ERR Number of keys can't be greater than number of args\r\n")
    assert w.cmd("EVAL", "return 1") == b"-ERR wrong number of arguments for 'eval' command\r\n"
    assert w.cmd("EVALSHA", "x") == b"-ERR wrong number of arguments for 'evalsha' command\r\n"


def test_keys_and_argv(w):
    body = "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}"
    assert w.cmd("EVAL", body, 2, "a", "b", "c", "d") == (
        b"*6\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n:2\r\n:2\r\n")
    assert w.cmd("EVAL", "return {#KEYS, #ARGV}", 0, "x", "y", "z") == b"*2\r\n:0\r\n:3\r\n"
    # KEYS and ARGV are plain tables the script may change.
    assert w.cmd("EVAL", "KEYS[1] = 'x'; return KEYS[1]", 1, "a") == b"$1\r\nx\r\n"


def test_noscript_and_sha_case(w):
    assert w.cmd("EVALSHA", "f" * 40, 0) == b"-NOSCRIPT No matching script. Please use EVAL.\r\n"
    assert w.cmd("EVALSHA", "fff", 0) == b"-NOSCRIPT No matching script. Please use EVAL.\r\n"
    assert w.cmd("EVALSHA_RO", "f" * 40, 0) == (
        b"-NOSCRIPT No matching script. Please use EVAL.\r\n")
    digest = sha("return 'hi'")
    assert w.cmd("SCRIPT", "LOAD", "return 'hi'") == bulk(digest)
    assert w.cmd("EVALSHA", digest.upper(), 0) == b"$2\r\nhi\r\n"
    assert w.cmd("EVALSHA", digest, 0) == b"$2\r\nhi\r\n"
    assert w.cmd("EVALSHA_RO", digest.upper(), 0) == b"$2\r\nhi\r\n"


def test_eval_caches_the_script_for_evalsha(w):
    body = "return 'cached by eval'"
    w.cmd("SCRIPT", "FLUSH")
    assert w.cmd("EVAL", body, 0) == bulk("cached by eval")
    assert w.cmd("SCRIPT", "EXISTS", sha(body)) == b"*1\r\n:1\r\n"
    assert w.cmd("EVALSHA", sha(body), 0) == bulk("cached by eval")


def test_redis_call_error_is_raised_with_its_origin(w):
    w.cmd("SET", "str", "abc")
    body = "return redis.call('incr', KEYS[1])"
    assert w.cmd("EVAL", body, 1, "str") == script_err(
        "ERR value is not an integer or out of range", body, 1)
    body = "\n\nreturn redis.call('lpush', KEYS[1], 'x')"
    assert w.cmd("EVAL", body, 1, "str") == script_err(
        "WRONGTYPE Operation against a key holding the wrong kind of value", body, 3)


def test_redis_pcall_returns_error_tables(w):
    w.cmd("SET", "str", "abc")
    body = "local t = redis.pcall('incr', KEYS[1]); return {type(t), t.err}"
    assert w.cmd("EVAL", body, 1, "str") == (
        b"*2\r\n$5\r\ntable\r\n" + bulk("ERR value is not an integer or out of range"))
    # Returned as it is, the table is an error reply without the script's origin.
    assert w.cmd("EVAL", "return redis.pcall('incr', KEYS[1])", 1, "str") == (
        b"-ERR value is not an integer or out of range\r\n")
    assert ev(w, "return redis.pcall('lpush', 'str', 'x').err") == (
        bulk("WRONGTYPE Operation against a key holding the wrong kind of value"))
    assert ev(w, "return redis.pcall('get').err") == (
        bulk("ERR Wrong number of args calling Redis command from script"))
    assert ev(w, "return redis.pcall('nosuch').err") == (
        bulk("ERR Unknown Redis command called from script"))
    assert ev(w, "return redis.pcall('nosuch')") == (
        b"-ERR Unknown Redis command called from script\r\n")
    assert ev(w, "return redis.pcall()") == (
        b"-ERR Please specify at least one argument for this redis lib call\r\n")
    assert ev(w, "return redis.pcall('set', 'k', {})") == (
        b"-ERR Lua redis lib command arguments must be strings or integers\r\n")
    assert ev(w, "return redis.pcall('eval', 'return 1', 0)") == (
        b"-ERR This Redis command is not allowed from script\r\n")


def test_lua_pcall_catches_errors_as_their_text(w):
    w.cmd("SET", "str", "abc")
    assert ev(w, "local ok, e = pcall(function() redis.call('nosuch') end); "
                 "return {tostring(ok), type(e), e}") == (
        b"*3\r\n$5\r\nfalse\r\n$6\r\nstring\r\n"
        + bulk("ERR Unknown Redis command called from script"))
    assert ev(w, "local ok, e = pcall(redis.call, 'incr', 'str'); return e") == (
        bulk("ERR value is not an integer or out of range"))
    assert ev(w, "local ok, e = pcall(function() error({err='MY x', other=1}) end); return e") == (
        bulk("MY x"))
    assert ev(w, "local ok, e = pcall(function() error('x') end); return e") == (
        bulk("user_script:1: x"))
    # The error text of a raised table is what it carries, even empty.
    assert ev(w, "return {err=''}") == b"-\r\n"
    body = "error({err=''})"
    assert ev(w, body) == script_err("", body, 1)


def test_bad_calls_from_a_script(w):
    cases = [
        ("return redis.call('nosuch')", "ERR Unknown Redis command called from script"),
        ("return redis.call(1)", "ERR Unknown Redis command called from script"),
        ("return redis.call('get')", "ERR Wrong number of args calling Redis command from script"),
        ("return redis.call('set', 'k')",
         "ERR Wrong number of args calling Redis command from script"),
        ("return redis.call()", "ERR Please specify at least one argument for this redis lib call"),
        ("return redis.call('get', {})",
         "ERR Lua redis lib command arguments must be strings or integers"),
        ("return redis.call('set', 'k', true)",
         "ERR Lua redis lib command arguments must be strings or integers"),
        ("return redis.call('set', 'k', nil)",
         "ERR Lua redis lib command arguments must be strings or integers"),
    ]
    for body, text in cases:
        assert ev(w, body) == script_err(text, body, 1), body


def _needs_command(c, name):
    """Skip on a Keel build that lacks the command altogether (Redis has them all)."""
    if not AGAINST_REDIS and c.cmd("COMMAND", "INFO", name) == b"*1\r\n$-1\r\n":
        pytest.skip(f"this build has no {name.upper()} command")


@pytest.mark.parametrize("call", [
    "redis.call('eval', 'return 1', 0)",
    "redis.call('evalsha', 'ffffffffffffffffffffffffffffffffffffffff', 0)",
    "redis.call('fcall', 'f', 0)",
    "redis.call('script', 'load', 'return 1')",
    "redis.call('function', 'list')",
    "redis.call('multi')",
    "redis.call('exec')",
    "redis.call('watch', 'k')",
    "redis.call('subscribe', 'c')",
    "redis.call('blpop', 'l', 0)",
    "redis.call('brpoplpush', 'a', 'b', 0)",
    "redis.call('wait', 0, 0)",
    "redis.call('client', 'list')",
    "redis.call('config', 'get', 'maxmemory')",
    "redis.call('auth', 'x')",
    "redis.call('hello')",
    "redis.call('monitor')",
    "redis.call('shutdown')",
    "redis.call('debug', 'sleep', '0')",
])
def test_commands_refused_inside_scripts(w, call):
    _needs_command(w, call.split("'")[1])
    body = f"return {call}"
    assert ev(w, body) == script_err("ERR This Redis command is not allowed from script", body, 1)


def test_blocking_list_pop_is_refused_even_with_data(w):
    # BLPOP carries the noscript flag in 7.0, so it is refused rather than run as LPOP.
    w.cmd("RPUSH", "l", "a")
    body = "return redis.call('blpop', 'l', 0)"
    assert ev(w, body) == script_err("ERR This Redis command is not allowed from script", body, 1)
    assert w.cmd("LLEN", "l") == b":1\r\n"


def test_xread_block_is_refused(w):
    _needs_command(w, "xread")
    body = "return redis.call('xread', 'block', 0, 'streams', 's', '$')"
    assert ev(w, body) == script_err(
        "ERR xread command is not allowed with BLOCK option from scripts", body, 1)


def test_read_only_scripts_refuse_writes(w):
    body = "return redis.call('set', 'k', 'v')"
    assert w.cmd("EVAL_RO", body, 1, "k") == script_err(
        "ERR Write commands are not allowed from read-only scripts.", body, 1)
    digest = sha(body)
    w.cmd("SCRIPT", "LOAD", body)
    assert w.cmd("EVALSHA_RO", digest, 1, "k") == script_err(
        "ERR Write commands are not allowed from read-only scripts.", body, 1)
    assert w.cmd("EXISTS", "k") == b":0\r\n"
    assert w.cmd("EVAL_RO", "return redis.call('get', 'k')", 1, "k") == b"$-1\r\n"
    body = "return redis.pcall('set', 'k', 'v')"
    assert w.cmd("EVAL_RO", body, 0) == (
        b"-ERR Write commands are not allowed from read-only scripts.\r\n")


def test_shebang_flags(w):
    body = "#!lua flags=no-writes\nreturn redis.call('set','k','v')"
    assert ev(w, body) == script_err(
        "ERR Write commands are not allowed from read-only scripts.", body, 2)
    assert ev(w, "#!lua flags=no-writes\nreturn redis.call('get','k')") == b"$-1\r\n"
    assert w.cmd("EVAL_RO", "#!lua\nreturn 1", 0) == (
        b"-ERR Can not execute a script with write flag using *_ro command.\r\n")
    assert w.cmd("EVAL_RO", "#!lua flags=no-writes\nreturn 1", 0) == b":1\r\n"
    assert ev(w, "#!lua flags=bad\nreturn 1") == b"-ERR Unexpected flag in script shebang: bad\r\n"
    assert ev(w, "#!lua name=x\nreturn 1") == b"-ERR Unknown lua shebang option: name=x\r\n"
    assert ev(w, "#!luax\nreturn 1") == b"-ERR Unexpected engine in script shebang: #!luax\r\n"
    assert ev(w, "#!lua") == b"-ERR Invalid script shebang\r\n"
    flags = "no-writes,allow-oom,allow-stale,no-cluster,allow-cross-slot-keys"
    assert ev(w, f"#!lua flags={flags}\nreturn 1") == b":1\r\n"
    # The shebang line still counts, so errors name the line as written.
    body = "#!lua\nerror('x')"
    assert ev(w, body) == script_err("ERR user_script:2: x", body, 2)


def test_compile_errors(w):
    assert ev(w, "return +") == (
        b"-ERR Error compiling script (new function): user_script:1: unexpected symbol near '+'\r\n")
    assert ev(w, "\nlocal x = (") == (
        b"-ERR Error compiling script (new function): user_script:2: unexpected symbol near "
        b"'<eof>'\r\n")
    assert w.cmd("SCRIPT", "LOAD", "return +") == (
        b"-ERR Error compiling script (new function): user_script:1: unexpected symbol near '+'\r\n")


def test_runtime_errors_name_the_line(w):
    body = "local a = nil\nreturn a.b"
    assert ev(w, body) == script_err(
        "ERR user_script:2: attempt to index local 'a' (a nil value)", body, 2)
    body = "local t = {}\n\nreturn t.x.y"
    assert ev(w, body) == script_err(
        "ERR user_script:3: attempt to index field 'x' (a nil value)", body, 3)
    body = "return 1 + {}"
    assert ev(w, body) == script_err(
        "ERR user_script:1: attempt to perform arithmetic on a table value", body, 1)


def test_error_with_a_string_and_a_table(w):
    body = "error('boom')"
    assert ev(w, body) == script_err("ERR user_script:1: boom", body, 1)
    body = "error('boom', 0)"
    assert ev(w, body) == script_err("ERR boom", body, 1)
    body = "error(12)"
    assert ev(w, body) == script_err("ERR user_script:1: 12", body, 1)
    body = "error(nil)"
    assert ev(w, body) == script_err("ERR nil", body, 1)
    # Other values as Lua's tostring writes them.
    for value, text in (("true", "true"), ("false", "false"), ("0.1, 0", "0.1"),
                        ("123456789012345678, 0", "1.2345678901235e+17")):
        body = f"error({value})"
        assert ev(w, body) == script_err(f"ERR {text}", body, 1), body
    body = "error({err='My Error'})"
    assert ev(w, body) == script_err("My Error", body, 1)
    body = "\nerror({err='WRONG my'})"
    assert ev(w, body) == script_err("WRONG my", body, 2)
    body = "error(redis.error_reply('CUSTOM thing'))"
    assert ev(w, body) == script_err("CUSTOM thing", body, 1)


@pytest.mark.skipif(AGAINST_REDIS, reason="Redis 7.0.15 crashes on error() with a table "
                    "that has no err field; Keel reports it instead")
def test_error_with_a_table_without_err_does_not_crash(w):
    reply = ev(w, "error({})")
    assert reply.startswith(b"-")
    assert w.cmd("PING") == b"+PONG\r\n"


def test_error_and_status_replies(w):
    assert ev(w, "return redis.error_reply('My Err')") == b"-My Err\r\n"
    assert ev(w, "return redis.error_reply('-My Err')") == b"-My Err\r\n"
    assert ev(w, "return redis.error_reply('')") == b"-ERR \r\n"
    assert ev(w, "return redis.error_reply('x')") == b"-ERR x\r\n"
    assert ev(w, "return redis.error_reply('-x')") == b"-ERR x\r\n"
    assert ev(w, "return redis.error_reply('WRONGTYPE x')") == b"-WRONGTYPE x\r\n"
    assert ev(w, "return redis.status_reply('FINE')") == b"+FINE\r\n"
    assert ev(w, "local t = redis.error_reply('My Err'); return {type(t), t.err}") == (
        b"*2\r\n$5\r\ntable\r\n$6\r\nMy Err\r\n")
    assert ev(w, "local t = redis.status_reply('FINE'); return {type(t), t.ok}") == (
        b"*2\r\n$5\r\ntable\r\n$4\r\nFINE\r\n")
    for body in ("return redis.status_reply()", "return redis.error_reply()",
                 "return redis.error_reply(1)", "return redis.status_reply({})"):
        assert ev(w, body) == b"-ERR wrong number or type of arguments\r\n", body


def test_err_and_ok_tables(w):
    assert ev(w, "return {err='x y'}") == b"-x y\r\n"
    assert ev(w, "return {err='-x y'}") == b"--x y\r\n"
    assert ev(w, "return {ok='fine'}") == b"+fine\r\n"
    assert ev(w, "return {ok='-fine'}") == b"+-fine\r\n"
    # Line breaks cannot go into a status or error line: they become spaces.
    assert ev(w, "return {ok='a\\r\\nb'}") == b"+a  b\r\n"
    assert ev(w, "return {err='a\\r\\nb'}") == b"-a  b\r\n"
    # err wins over ok; a field of another type makes it a plain (empty) array.
    assert ev(w, "return {err='x', ok='y'}") == b"-x\r\n"
    assert ev(w, "return {err=1}") == b"*0\r\n"
    assert ev(w, "return {ok=1}") == b"*0\r\n"


def test_select_inside_a_script_does_not_change_the_callers_db(w):
    assert ev(w, "redis.call('select', 1); return redis.call('set', 'x', '1')") == b"+OK\r\n"
    assert w.cmd("EXISTS", "x") == b":0\r\n"
    assert w.cmd("SELECT", "1") == b"+OK\r\n"
    assert w.cmd("EXISTS", "x") == b":1\r\n"
    w.cmd("DEL", "x")


# ---------------------------------------------------------------- conversions


def test_lua_to_resp2(w):
    assert ev(w, "return 3.99") == b":3\r\n"
    assert ev(w, "return -3.5") == b":-3\r\n"
    assert ev(w, "return 9007199254740993") == b":9007199254740992\r\n"
    assert ev(w, "return true") == b":1\r\n"
    assert ev(w, "return false") == b"$-1\r\n"
    assert ev(w, "return nil") == b"$-1\r\n"
    assert ev(w, "") == b"$-1\r\n"
    assert ev(w, "return {1, 2, 3, 'ciao', {1, 2}}") == (
        b"*5\r\n:1\r\n:2\r\n:3\r\n$4\r\nciao\r\n*2\r\n:1\r\n:2\r\n")
    assert ev(w, "return {1, 2, nil, 4}") == b"*2\r\n:1\r\n:2\r\n"
    assert ev(w, "return {1, {2, nil, 3}, 4}") == b"*3\r\n:1\r\n*1\r\n:2\r\n:4\r\n"
    assert ev(w, "return {true, false, 1}") == b"*3\r\n:1\r\n$-1\r\n:1\r\n"
    assert ev(w, "return {1, 'a', 2.7, true, false}") == b"*5\r\n:1\r\n$1\r\na\r\n:2\r\n:1\r\n$-1\r\n"
    assert ev(w, "return {a=1, b=2}") == b"*0\r\n"
    assert ev(w, "return 'a\\0b\\255'") == b"$4\r\na\x00b\xff\r\n"


def test_lua_numbers_out_of_integer_range(w):
    # Redis casts the double to long long as x86 does: anything out of range is the minimum.
    assert ev(w, "return 1e20") == b":-9223372036854775808\r\n"
    assert ev(w, "return -1e20") == b":-9223372036854775808\r\n"
    assert ev(w, "return 0/0") == b":-9223372036854775808\r\n"


def test_lua_to_resp3(w3):
    assert ev(w3, "return 3.99") == b":3\r\n"
    assert ev(w3, "return true") == b":1\r\n"
    assert ev(w3, "return false") == b"_\r\n"
    assert ev(w3, "return nil") == b"_\r\n"
    assert ev(w3, "return {true, false}") == b"*2\r\n:1\r\n_\r\n"
    assert ev(w3, "return {1, 2, nil, 4}") == b"*2\r\n:1\r\n:2\r\n"


def test_binary_strings_round_trip(rb, server):
    value = bytes(range(256))
    rb.set(b"bin", value)
    assert rb.eval("return redis.call('get', KEYS[1])", 1, b"bin") == value
    assert rb.eval("return ARGV[1]", 0, value) == value
    assert rb.eval("return #ARGV[1]", 0, value) == 256


def test_resp2_replies_into_lua(w):
    w.cmd("SET", "str", "abc")
    w.cmd("SET", "k", "v")
    assert ev(w, "local t = redis.call('set', 'k', 'v'); return {type(t), t.ok}") == (
        b"*2\r\n$5\r\ntable\r\n$2\r\nOK\r\n")
    assert ev(w, "return redis.call('ping').ok") == b"$4\r\nPONG\r\n"
    assert ev(w, "return type(redis.call('get', 'nokey'))") == b"$7\r\nboolean\r\n"
    assert ev(w, "return redis.call('get', 'nokey')") == b"$-1\r\n"
    assert ev(w, "return redis.call('mget', 'str', 'nokey', 'k')") == (
        b"*3\r\n$3\r\nabc\r\n$-1\r\n$1\r\nv\r\n")
    body = "local t = redis.call('mget', 'str', 'nokey', 'k'); return {type(t[2]), tostring(t[2]), #t}"
    assert ev(w, body) == b"*3\r\n$7\r\nboolean\r\n$5\r\nfalse\r\n:3\r\n"
    assert ev(w, "local n = redis.call('incr', 'cnt'); return {type(n), n + 0.5}") == (
        b"*2\r\n$6\r\nnumber\r\n:1\r\n")


def test_resp2_caller_sees_false_as_null_in_resp3_too(w3):
    w3.cmd("SET", "str", "abc")
    assert ev(w3, "return redis.call('mget', 'str', 'nokey')") == b"*2\r\n$3\r\nabc\r\n_\r\n"


def test_numbers_as_command_arguments(w):
    # Numbers go on as C's %.17g writes them.
    cases = [("3.0", b"3"), ("0.1", b"0.10000000000000001"), ("1e20", b"1e+20"),
             ("123456789012", b"123456789012"), ("1/0", b"inf"), ("1.5", b"1.5"),
             ("1e16", b"10000000000000000"), ("1e17", b"1e+17"), ("-1e17", b"-1e+17"),
             ("123456789012345678", b"1.2345678901234568e+17"), ("2^53", b"9007199254740992")]
    for lua, stored in cases:
        assert ev(w, f"redis.call('set', 'k', {lua}); return redis.call('get', 'k')") == (
            bulk(stored)), lua
    assert ev(w, "return redis.sha1hex(1e17)") == bulk(sha("1e+17"))


@pytest.mark.skipif(not AGAINST_REDIS, reason="known difference: Keel's Lua binding reads a number "
                    "within 2^-52 of an integer as that integer, so -0.0 reaches redis.call as 0")
def test_negative_zero_as_a_command_argument(w):
    assert ev(w, "redis.call('set', 'k', -0.0); return redis.call('get', 'k')") == bulk("-0")


def _setup_types(c):
    c.cmd("HSET", "h", "f", "v")
    c.cmd("SADD", "s", "m")
    c.cmd("ZADD", "z", "1.5", "a")


def test_setresp3_maps_sets_doubles_to_resp2_client(w):
    _setup_types(w)
    assert ev(w, "redis.setresp(3); return redis.call('hgetall', 'h')") == (
        b"*2\r\n$1\r\nf\r\n$1\r\nv\r\n")
    assert ev(w, "redis.setresp(3); return redis.call('smembers', 's')") == b"*1\r\n$1\r\nm\r\n"
    assert ev(w, "redis.setresp(3); return redis.call('zscore', 'z', 'a')") == b"$3\r\n1.5\r\n"
    assert ev(w, "redis.setresp(3); return redis.call('zrange', 'z', 0, -1, 'withscores')") == (
        b"*1\r\n*2\r\n$1\r\na\r\n$3\r\n1.5\r\n")
    assert ev(w, "redis.setresp(3); return redis.call('get', 'nokey')") == b"$-1\r\n"
    assert ev(w, "redis.setresp(3); return true") == b":1\r\n"
    assert ev(w, "redis.setresp(3); return false") == b":0\r\n"
    assert ev(w, "redis.setresp(3); return {true, false, nil}") == b"*2\r\n:1\r\n:0\r\n"


def test_setresp3_maps_sets_doubles_to_resp3_client(w3):
    _setup_types(w3)
    assert ev(w3, "redis.setresp(3); return redis.call('hgetall', 'h')") == (
        b"%1\r\n$1\r\nf\r\n$1\r\nv\r\n")
    assert ev(w3, "redis.setresp(3); return redis.call('smembers', 's')") == b"~1\r\n$1\r\nm\r\n"
    assert ev(w3, "redis.setresp(3); return redis.call('zscore', 'z', 'a')") == b",1.5\r\n"
    assert ev(w3, "redis.setresp(3); return redis.call('zrange', 'z', 0, -1, 'withscores')") == (
        b"*1\r\n*2\r\n$1\r\na\r\n,1.5\r\n")
    assert ev(w3, "redis.setresp(3); return redis.call('get', 'nokey')") == b"_\r\n"
    assert ev(w3, "redis.setresp(3); return true") == b"#t\r\n"
    assert ev(w3, "redis.setresp(3); return false") == b"#f\r\n"
    assert ev(w3, "redis.setresp(3); return {true, false, nil}") == b"*2\r\n#t\r\n#f\r\n"
    # Without setresp(3) the script sees RESP2 replies, whatever the caller speaks.
    assert ev(w3, "return redis.call('hgetall', 'h')") == b"*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
    assert ev(w3, "return redis.call('zscore', 'z', 'a')") == b"$3\r\n1.5\r\n"
    assert ev(w3, "redis.setresp(2); return redis.call('hgetall', 'h')") == (
        b"*2\r\n$1\r\nf\r\n$1\r\nv\r\n")


def test_resp3_replies_as_lua_values(w):
    _setup_types(w)
    w.cmd("HSET", "h", "g", "w")
    w.cmd("SET", "str", "abc")
    assert ev(w, "redis.setresp(3); return type(redis.call('hgetall', 'h').map)") == bulk("table")
    assert ev(w, "redis.setresp(3); return redis.call('hgetall', 'h').map.g") == bulk("w")
    assert ev(w, "return redis.call('hgetall', 'h')[4]") == bulk("w")
    body = "redis.setresp(3); local t = redis.call('smembers', 's'); return {type(t.set), t.set.m}"
    assert ev(w, body) == b"*2\r\n$5\r\ntable\r\n:1\r\n"
    body = ("redis.setresp(3); local d = redis.call('zscore', 'z', 'a'); "
            "return {type(d), type(d.double), tostring(d.double)}")
    assert ev(w, body) == b"*3\r\n$5\r\ntable\r\n$6\r\nnumber\r\n$3\r\n1.5\r\n"
    body = "redis.setresp(3); local t = redis.call('get', 'nokey'); return {type(t), tostring(t)}"
    assert ev(w, body) == b"*2\r\n$3\r\nnil\r\n$3\r\nnil\r\n"
    body = "redis.setresp(3); local t = redis.call('mget', 'str', 'nokey', 'str'); return {type(t[2]), #t}"
    assert ev(w, body) == b"*2\r\n$3\r\nnil\r\n:1\r\n"
    body = ("redis.setresp(3); local v = redis.call('info', 'server'); "
            "return {type(v.verbatim_string), v.verbatim_string.format, "
            "string.sub(v.verbatim_string.string, 1, 9)}")
    assert ev(w, body) == b"*3\r\n$5\r\ntable\r\n$3\r\ntxt\r\n$9\r\n# Server\r\r\n"
    assert ev(w, "redis.setresp(3); return redis.call('ping').ok") == bulk("PONG")


def test_resp3_tables_returned_to_both_protocols(w, w3):
    cases = [
        ("return {double=3.14}", b"$18\r\n3.1400000000000001\r\n", b",3.1400000000000001\r\n"),
        ("return {double=1}", b"$1\r\n1\r\n", b",1\r\n"),
        ("return {double=0.1}", b"$19\r\n0.10000000000000001\r\n", b",0.10000000000000001\r\n"),
        ("return {double=-1e300}", b"$24\r\n-1.0000000000000001e+300\r\n",
         b",-1.0000000000000001e+300\r\n"),
        ("return {double=1/0}", b"$3\r\ninf\r\n", b",inf\r\n"),
        ("return {double=-1/0}", b"$4\r\n-inf\r\n", b",-inf\r\n"),
        ("return {double='3.14'}", b"*0\r\n", b"*0\r\n"),
        ("return {map={a=1}}", b"*2\r\n$1\r\na\r\n:1\r\n", b"%1\r\n$1\r\na\r\n:1\r\n"),
        ("return {map={}}", b"*0\r\n", b"%0\r\n"),
        ("return {set={a=true}}", b"*1\r\n$1\r\na\r\n", b"~1\r\n$1\r\na\r\n"),
        ("return {set={}}", b"*0\r\n", b"~0\r\n"),
        ("return {big_number='123456789012345678901234567890'}",
         b"$30\r\n123456789012345678901234567890\r\n", b"(123456789012345678901234567890\r\n"),
        ("return {big_number='12a'}", b"$3\r\n12a\r\n", b"(12a\r\n"),
        ("return {big_number=123}", b"*0\r\n", b"*0\r\n"),
        ("return {verbatim_string={format='txt', string='hi'}}", b"$2\r\nhi\r\n",
         b"=6\r\ntxt:hi\r\n"),
        ("return {1, {double=2.5}, {map={k={set={x=true}}}}}",
         b"*3\r\n:1\r\n$3\r\n2.5\r\n*2\r\n$1\r\nk\r\n*1\r\n$1\r\nx\r\n",
         b"*3\r\n:1\r\n,2.5\r\n%1\r\n$1\r\nk\r\n~1\r\n$1\r\nx\r\n"),
    ]
    for body, two, three in cases:
        assert ev(w, body) == two, body
        assert ev(w3, body) == three, body


def test_map_with_two_fields(w, w3):
    # The order of fields is the Lua table's own, so each field is looked for on its own.
    body = "return {map={a=1, b={1, 2}}}"
    two, three = ev(w, body), ev(w3, body)
    assert two.startswith(b"*4\r\n") and three.startswith(b"%2\r\n")
    for reply in (two, three):
        assert b"$1\r\na\r\n:1\r\n" in reply
        assert b"$1\r\nb\r\n*2\r\n:1\r\n:2\r\n" in reply
    assert len(two) == len(three) == 4 + 11 + 19


def test_nan_double(w, w3):
    assert ev(w, "return {double=0/0}") == b"$4\r\n-nan\r\n"
    assert ev(w3, "return {double=0/0}") == b",-nan\r\n"


def test_setresp_errors(w):
    for body, text in [("redis.setresp(4)", "ERR RESP version must be 2 or 3."),
                       ("redis.setresp('a')", "ERR RESP version must be 2 or 3."),
                       ("redis.setresp()", "ERR redis.setresp() requires one argument.")]:
        assert ev(w, body) == script_err(text, body, 1), body
    assert ev(w, "return redis.setresp(2)") == b"$-1\r\n"


# ---------------------------------------------------------------- globals and libraries


def test_globals_are_protected(w):
    body = "x = 1"
    assert ev(w, body) == script_err("ERR user_script:1: Attempt to modify a readonly table", body, 1)
    body = "return x"
    assert ev(w, body) == script_err(
        "ERR user_script:1: Script attempted to access nonexistent global variable 'x'", body, 1)
    body = "local a = 1\nreturn undefined_thing"
    assert ev(w, body) == script_err(
        "ERR user_script:2: Script attempted to access nonexistent global variable "
        "'undefined_thing'", body, 2)


@pytest.mark.parametrize("name", ["dofile", "print", "loadfile", "setfenv", "getfenv",
                                  "require", "module", "os", "io", "debug"])
def test_unavailable_globals(w, name):
    body = f"return type({name})"
    assert ev(w, body) == script_err(
        f"ERR user_script:1: Script attempted to access nonexistent global variable '{name}'",
        body, 1)


def test_available_libraries(w):
    assert ev(w, "return type(loadstring)") == bulk("function")
    assert ev(w, "return loadstring('return 1')()") == b":1\r\n"
    assert ev(w, "return type(cjson)..type(cmsgpack)..type(bit)..type(struct)") == (
        bulk("tabletabletabletable"))
    assert ev(w, "return cjson.encode({1, 2, {a=1}})") == bulk('[1,2,{"a":1}]')
    assert ev(w, "return cjson.decode('[1,2,3]')") == b"*3\r\n:1\r\n:2\r\n:3\r\n"
    assert ev(w, "return string.len(cmsgpack.pack({1, 2, 3}))") == b":4\r\n"
    assert ev(w, "return bit.band(0xff, 0x0f)") == b":15\r\n"
    assert ev(w, "return struct.pack('>I2', 258)") == b"$2\r\n\x01\x02\r\n"
    assert ev(w, "return tostring(0.1)") == bulk("0.1")
    assert ev(w, "return tostring(1e100)") == bulk("1e+100")


def test_math_random_is_deterministic_per_server():
    """The generator is seeded once when the server starts and not reseeded per script:
    a fresh server gives the same numbers, and a second call goes on with the sequence."""
    with running_server() as s:
        c = Wire(s.port)
        try:
            body = "return {math.random(100), math.random(100), math.random(100)}"
            assert ev(c, body) == b"*3\r\n:40\r\n:85\r\n:36\r\n"
            assert ev(c, body) == b"*3\r\n:45\r\n:32\r\n:89\r\n"
            assert ev(c, "return string.format('%.17g', math.random())") == (
                bulk("0.015582849278851807"))
            assert ev(c, "math.randomseed(42); return {math.random(1000), math.random(1000)}") == (
                b"*2\r\n:745\r\n:343\r\n")
            body = "return math.random(0)"
            assert ev(c, body) == script_err(
                "ERR user_script:1: bad argument #1 to 'random' (interval is empty)", body, 1)
            body = "return math.random(1, 2, 3)"
            assert ev(c, body) == script_err("ERR user_script:1: wrong number of arguments",
                                             body, 1)
        finally:
            c.close()


def test_redis_version_constants(w):
    info = w.cmd("INFO", "server")
    version = info.split(b"redis_version:")[1].split(b"\r\n")[0].decode()
    assert version == "7.0.15"
    assert ev(w, "return redis.REDIS_VERSION") == bulk(version)
    major, minor, patch = (int(x) for x in version.split("."))
    assert ev(w, "return redis.REDIS_VERSION_NUM") == b":%d\r\n" % (
        (major << 16) | (minor << 8) | patch)
    assert ev(w, "return redis.REDIS_VERSION_NUM") == b":458767\r\n"


def test_redis_helpers(w):
    assert ev(w, "return redis.sha1hex('')") == bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709")
    assert ev(w, "return redis.sha1hex('abc')") == bulk("a9993e364706816aba3e25717850c26c9cd0d89d")
    assert ev(w, "return redis.sha1hex(1)") == bulk(sha("1"))
    body = "return redis.sha1hex()"
    assert ev(w, body) == script_err("ERR wrong number of arguments", body, 1)
    assert ev(w, "return redis.breakpoint()") == b"$-1\r\n"
    assert ev(w, "return redis.breakpoint() == false") == b":1\r\n"
    assert ev(w, "return redis.replicate_commands()") == b":1\r\n"
    assert ev(w, "return redis.set_repl(redis.REPL_ALL)") == b"$-1\r\n"
    assert ev(w, "return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, "
                 "redis.REPL_ALL}") == b"*5\r\n:0\r\n:1\r\n:2\r\n:2\r\n:3\r\n"
    body = "return redis.set_repl(99)"
    assert ev(w, body) == script_err(
        "ERR Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
        body, 1)
    body = "return redis.set_repl()"
    assert ev(w, body) == script_err("ERR redis.set_repl() requires two arguments.", body, 1)


def test_redis_log(w):
    assert ev(w, "return redis.log(redis.LOG_WARNING, 'hello from a script')") == b"$-1\r\n"
    assert ev(w, "return redis.log(redis.LOG_DEBUG, 'a', 'b', 1)") == b"$-1\r\n"
    assert ev(w, "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, "
                 "redis.LOG_WARNING}") == b"*4\r\n:0\r\n:1\r\n:2\r\n:3\r\n"
    body = "return redis.log(99, 'x')"
    assert ev(w, body) == script_err("ERR Invalid debug level.", body, 1)
    body = "return redis.log(redis.LOG_WARNING)"
    assert ev(w, body) == script_err("ERR redis.log() requires two arguments or more.", body, 1)


# ---------------------------------------------------------------- SCRIPT


def test_script_load_exists_flush(w):
    digest = sha("return 1")
    assert w.cmd("SCRIPT", "LOAD", "return 1") == bulk(digest)
    assert w.cmd("SCRIPT", "EXISTS", digest, digest.upper(), "ffff") == (
        b"*3\r\n:1\r\n:1\r\n:0\r\n")
    assert w.cmd("SCRIPT", "FLUSH") == b"+OK\r\n"
    assert w.cmd("SCRIPT", "EXISTS", digest) == b"*1\r\n:0\r\n"
    assert w.cmd("EVALSHA", digest, 0) == b"-NOSCRIPT No matching script. Please use EVAL.\r\n"
    w.cmd("SCRIPT", "LOAD", "return 1")
    assert w.cmd("SCRIPT", "FLUSH", "ASYNC") == b"+OK\r\n"
    assert w.cmd("SCRIPT", "EXISTS", digest) == b"*1\r\n:0\r\n"
    w.cmd("SCRIPT", "LOAD", "return 1")
    assert w.cmd("SCRIPT", "FLUSH", "sync") == b"+OK\r\n"
    assert w.cmd("SCRIPT", "EXISTS", digest) == b"*1\r\n:0\r\n"


def test_flushall_keeps_scripts(w):
    digest = sha("return 'kept'")
    w.cmd("SCRIPT", "LOAD", "return 'kept'")
    w.cmd("FLUSHALL")
    assert w.cmd("EVALSHA", digest, 0) == bulk("kept")


def test_script_errors(w):
    assert w.cmd("SCRIPT", "FLUSH", "bad") == b"-ERR SCRIPT FLUSH only support SYNC|ASYNC option\r\n"
    assert w.cmd("SCRIPT", "FLUSH", "sync", "async") == (
        b"-ERR SCRIPT FLUSH only support SYNC|ASYNC option\r\n")
    assert w.cmd("SCRIPT", "KILL") == b"-NOTBUSY No scripts in execution right now.\r\n"
    assert w.cmd("SCRIPT", "KILL", "x") == (
        b"-ERR wrong number of arguments for 'script|kill' command\r\n")
    assert w.cmd("SCRIPT", "EXISTS") == (
        b"-ERR wrong number of arguments for 'script|exists' command\r\n")
    assert w.cmd("SCRIPT", "LOAD") == b"-ERR wrong number of arguments for 'script|load' command\r\n"
    assert w.cmd("SCRIPT", "NOPE") == b"-ERR unknown subcommand 'NOPE'. Try SCRIPT HELP.\r\n"
    assert w.cmd("SCRIPT", "HELP").startswith(
        b"*17\r\n+SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n")


# ---------------------------------------------------------------- COMMAND


def test_command_getkeys_for_scripts(r):
    def keys(*args):
        return r.execute_command("COMMAND GETKEYS", *args)

    assert keys("EVAL", "return 1", 2, "a", "b", "c") == ["a", "b"]
    assert keys("EVALSHA", "abc", 1, "a") == ["a"]
    assert keys("EVAL_RO", "x", 1, "a") == ["a"]
    assert keys("EVALSHA_RO", "x", 1, "a", "b") == ["a"]
    assert keys("FCALL", "f", 2, "a", "b") == ["a", "b"]
    assert keys("FCALL_RO", "f", 1, "a", "b") == ["a"]
    assert keys("EVAL", "return 1", 0, "c") == []


def _notes(rw):
    if rw:
        return ["notes", "We cannot tell how the keys will be used so we assume the worst, "
                "RW and UPDATE", "flags", ["RW", "access", "update"]]
    return ["notes", "We cannot tell how the keys will be used so we assume the worst, "
            "RO and ACCESS", "flags", ["RO", "access"]]


def _info(name, readonly, notes):
    flags = (["readonly"] if readonly else []) + [
        "noscript", "stale", "skip_monitor", "no_mandatory_keys", "movablekeys"]
    spec = _notes(not readonly) if notes else _notes(not readonly)[2:]
    spec = spec + ["begin_search", ["type", "index", "spec", ["index", 2]],
                   "find_keys", ["type", "keynum", "spec",
                                 ["keynumidx", 0, "firstkey", 1, "keystep", 1]]]
    return [name, -3, flags, 0, 0, 0, ["@slow", "@scripting"], [], [spec], []]


def test_command_info_for_scripts(r):
    got = r.execute_command("COMMAND INFO", "eval", "evalsha", "eval_ro", "evalsha_ro",
                            "fcall", "fcall_ro")
    assert got == [_info("eval", False, True), _info("evalsha", False, False),
                   _info("eval_ro", True, True), _info("evalsha_ro", True, False),
                   _info("fcall", False, True), _info("fcall_ro", True, True)]


def test_command_info_script_subcommands(r):
    (script,) = r.execute_command("COMMAND INFO", "script")
    assert script[:8] == ["script", -2, [], 0, 0, 0, ["@slow"], []]
    subs = {s[0]: s for s in script[9]}
    assert set(subs) == {"script|help", "script|exists", "script|debug", "script|flush",
                         "script|kill", "script|load"}
    assert subs["script|kill"][1:3] == [2, ["noscript", "allow_busy"]]
    assert subs["script|load"][1:3] == [3, ["noscript", "stale"]]
    assert subs["script|exists"][1:3] == [-3, ["noscript"]]
    assert subs["script|flush"][1:3] == [-2, ["noscript"]]


# ---------------------------------------------------------------- effects on the AOF


def _aof_commands(path):
    """The commands in an AOF, as lists of bytes, ignoring #TS annotations."""
    data = open(path, "rb").read()
    out, i = [], 0
    while i < len(data):
        if data[i:i + 1] == b"#":
            i = data.index(b"\n", i) + 1
            continue
        assert data[i:i + 1] == b"*", data[i:i + 40]
        end = data.index(b"\r\n", i)
        n = int(data[i + 1:end])
        i = end + 2
        cmd = []
        for _ in range(n):
            end = data.index(b"\r\n", i)
            size = int(data[i + 1:end])
            cmd.append(data[end + 2:end + 2 + size])
            i = end + 2 + size + 2
        out.append(cmd)
    return out


def test_aof_holds_the_scripts_effects_not_the_script(tmp_path):
    if not AGAINST_REDIS:
        why = refuses_aof()
        if why:
            pytest.skip(f"this build refuses appendonly yes: {why}")
    args = ("--dir", str(tmp_path), "--appendonly", "yes", "--appendfsync", "always")
    with running_server(*args) as s:
        c = Wire(s.port)
        try:
            assert c.cmd("SET", "before", "1") == b"+OK\r\n"
            assert ev(c, "redis.call('set', KEYS[1], 'v'); redis.call('incr', 'n'); return 1",
                      "k", numkeys=1) == b":1\r\n"
            assert ev(c, "redis.call('get', KEYS[1]); return 1", "k", numkeys=1) == b":1\r\n"
            assert ev(c, "return redis.call('spop', 'nokey')") == b"$-1\r\n"
            assert ev(c, "redis.call('set', 'e', '1', 'EX', 100); return 1") == b":1\r\n"
            assert ev(c, "redis.set_repl(redis.REPL_NONE); redis.call('set', 'hidden', '1'); "
                         "redis.set_repl(redis.REPL_ALL); redis.call('set', 'shown', '1')") == (
                b"$-1\r\n")
            assert c.cmd("SET", "after", "1") == b"+OK\r\n"
        finally:
            c.close()
        (incr,) = glob.glob(os.path.join(tmp_path, "appendonlydir", "*.incr.aof"))
        cmds = _aof_commands(incr)
    assert cmds[0] == [b"SELECT", b"0"]
    assert cmds[1] == [b"SET", b"before", b"1"]
    # Several writes go in as one transaction, each command as the script called it.
    assert cmds[2:6] == [[b"MULTI"], [b"set", b"k", b"v"], [b"incr", b"n"], [b"EXEC"]]
    # A single write is not wrapped; relative expiry is logged as absolute.
    assert cmds[6][:4] == [b"SET", b"e", b"1", b"PXAT"]
    assert abs(int(cmds[6][4]) - (time.time() + 100) * 1000) < 10_000
    # What the script asked to keep out of the log stays out.
    assert cmds[7:] == [[b"set", b"shown", b"1"], [b"SET", b"after", b"1"]]


# ---------------------------------------------------------------- BUSY


BUSY_EVAL = b"-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
UNKILLABLE = (b"-UNKILLABLE Sorry the script already executed write commands against the dataset. "
              b"You can either wait the script termination or kill the server in a hard way using "
              b"the SHUTDOWN NOSAVE command.\r\n")


def _busy_server():
    s = Server("--busy-reply-threshold", "200")
    return s


def _wait_busy(c, expected=BUSY_EVAL, timeout=5):
    deadline = time.time() + timeout
    while True:
        reply = c.cmd("PING")
        if reply == expected:
            return
        assert reply == b"+PONG\r\n", reply
        assert time.time() < deadline, "the script never made the server busy"
        time.sleep(0.05)


def test_busy_script_can_be_killed():
    s = _busy_server()
    try:
        a, b = Wire(s.port), Wire(s.port)
        assert a.cmd("CONFIG", "SET", "lua-time-limit", "200") == b"+OK\r\n"
        body = "while true do end"
        a.send("EVAL", body, 0)
        _wait_busy(b)
        assert b.cmd("GET", "x") == BUSY_EVAL
        assert b.cmd("FUNCTION", "KILL") == BUSY_EVAL
        assert b.cmd("SCRIPT", "KILL") == b"+OK\r\n"
        assert a.reply() == script_err("ERR Script killed by user with SCRIPT KILL...", body, 1)
        assert b.cmd("PING") == b"+PONG\r\n"
        assert a.cmd("SCRIPT", "KILL") == b"-NOTBUSY No scripts in execution right now.\r\n"
        a.close()
        b.close()
    finally:
        s.stop()


def test_busy_read_only_script_can_be_killed():
    s = _busy_server()
    try:
        a, b = Wire(s.port), Wire(s.port)
        body = "#!lua flags=no-writes\nwhile true do end"
        a.send("EVAL", body, 0)
        _wait_busy(b)
        assert b.cmd("SCRIPT", "KILL") == b"+OK\r\n"
        assert a.reply() == script_err("ERR Script killed by user with SCRIPT KILL...", body, 2)
        a.close()
        b.close()
    finally:
        s.stop()


def test_script_that_wrote_is_unkillable_until_shutdown_nosave():
    s = _busy_server()
    try:
        a, b = Wire(s.port), Wire(s.port)
        a.send("EVAL", "redis.call('set', 'x', '1') while true do end", 0)
        _wait_busy(b)
        assert b.cmd("SCRIPT", "KILL") == UNKILLABLE
        assert b.cmd("SHUTDOWN") == BUSY_EVAL
        b.send("SHUTDOWN", "NOSAVE")
        with pytest.raises(ConnectionError):
            b.reply()
        with pytest.raises(ConnectionError):
            a.reply()
        s.proc.wait(timeout=10)
        a.close()
        b.close()
    finally:
        s.stop()


def test_busy_while_another_script_was_loaded_first():
    """The second connection opened before the script starts still gets BUSY for a
    command that would have been fine, and scripts queued behind are refused too."""
    s = _busy_server()
    try:
        a, b = Wire(s.port), Wire(s.port)
        a.send("EVAL", "while true do end", 0)
        _wait_busy(b)
        assert b.cmd("EVAL", "return 1", 0) == BUSY_EVAL
        assert b.cmd("SCRIPT", "KILL") == b"+OK\r\n"
        a.reply()
        assert b.cmd("EVAL", "return 1", 0) == b":1\r\n"
        a.close()
        b.close()
    finally:
        s.stop()

"""The bitmap index, Keel's IDX.* commands: IDX.CREATE, IDX.ADD, IDX.DEL, IDX.SEARCH,
IDX.INFO and IDX.DROP, their replies and errors, how an index looks to TYPE, OBJECT,
MEMORY, DUMP/RESTORE, COPY, RENAME and MOVE, that it survives DEBUG RELOAD, a restart and
an AOF rewrite, and that searches on other threads never see half an update."""

import threading

import pytest
import redis

from conftest import AGAINST_REDIS, running_server
from test_persistence import info as persistence_info, wait_for

pytestmark = pytest.mark.skipif(AGAINST_REDIS, reason="the bitmap index is Keel's own")

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def arity(name):
    return f"wrong number of arguments for '{name}' command"


def fill(r, key="i"):
    assert r.execute_command("IDX.CREATE", key) == "OK"
    rows = [
        ("a", "red", "s", "pa"),
        ("b", "red", "m", None),
        ("c", "blue", "m", "pc"),
        ("d", "red", "l", "pd"),
    ]
    for id_, colour, size, payload in rows:
        extra = ["PAYLOAD", payload] if payload is not None else []
        assert r.execute_command("IDX.ADD", key, id_, "colour", colour, "size", size, *extra) == 1


def search(r, *args):
    return r.execute_command("IDX.SEARCH", *args)


def index_info(r, key):
    flat = r.execute_command("IDX.INFO", key)
    return dict(zip(flat[::2], flat[1::2]))


def test_create_add_search(r):
    fill(r)
    assert search(r, "i", "colour", "red") == ["a", "b", "d"]
    assert search(r, "i", "colour", "red", "size", "m") == ["b"]
    assert search(r, "i", "size", "m", "colour", "blue") == ["c"]
    assert search(r, "i", "colour", "green") == []
    assert search(r, "i", "shape", "round") == []
    # DEFAULT narrows only several candidates, possibly to none.
    assert search(r, "i", "colour", "red", "DEFAULT", "size", "m") == ["b"]
    assert search(r, "i", "colour", "blue", "DEFAULT", "size", "s") == ["c"]
    assert search(r, "i", "colour", "red", "DEFAULT", "size", "xl") == []
    assert search(r, "i", "colour", "red", "LIMIT", "2") == ["a", "b"]
    assert search(r, "i", "colour", "red", "limit", "0") == []
    assert search(r, "i", "colour", "red", "WITHPAYLOAD") == ["a", "pa", "b", None, "d", "pd"]
    assert search(r, "i", "colour", "red", "withpayload", "LIMIT", "1", "DEFAULT", "size", "l") == ["d", "pd"]


def test_add_replaces_whole_and_del_removes(r):
    fill(r)
    assert r.execute_command("IDX.ADD", "i", "a", "colour", "blue") == 0
    assert search(r, "i", "size", "s") == []
    assert search(r, "i", "colour", "blue", "WITHPAYLOAD") == ["a", None, "c", "pc"]
    assert r.execute_command("IDX.DEL", "i", "a") == 1
    assert r.execute_command("IDX.DEL", "i", "a") == 0
    assert search(r, "i", "colour", "blue") == ["c"]
    # Repeated pairs count once; an attribute may hold several values.
    assert r.execute_command("IDX.ADD", "i", "e", "tag", "x", "tag", "y", "tag", "x") == 1
    assert search(r, "i", "tag", "x", "tag", "y") == ["e"]
    # Empty strings are ordinary ids, attributes and values.
    assert r.execute_command("IDX.ADD", "i", "", "", "", "PAYLOAD", "") == 1
    assert search(r, "i", "", "", "WITHPAYLOAD") == ["", ""]


def test_binary_safe(rb):
    assert rb.execute_command("IDX.CREATE", b"\x00i") == b"OK"
    assert rb.execute_command("IDX.ADD", b"\x00i", b"\xff\x00", b"a\r\n", b"\x01", "PAYLOAD", b"\x00\xfe") == 1
    assert rb.execute_command("IDX.SEARCH", b"\x00i", b"a\r\n", b"\x01", "WITHPAYLOAD") == [b"\xff\x00", b"\x00\xfe"]


def test_info_and_drop(r, r3):
    fill(r)
    figures = index_info(r, "i")
    assert {k: figures[k] for k in ("entities", "pairs", "attributes", "payload_bytes")} == {
        "entities": 4, "pairs": 5, "attributes": 2, "payload_bytes": 6}
    assert figures["memory_bytes"] > 0
    assert list(figures) == ["entities", "pairs", "attributes", "payload_bytes", "memory_bytes"]
    resp3 = r3.execute_command("IDX.INFO", "i")
    assert isinstance(resp3, dict) and resp3["entities"] == 4
    r.execute_command("IDX.CREATE", "empty")
    assert index_info(r, "empty")["entities"] == 0
    assert r.execute_command("IDX.DROP", "i") == "OK"
    assert r.exists("i") == 0
    assert err(r, "IDX.DROP", "i") == "no such index"
    # An index emptied by IDX.DEL stays until dropped.
    r.execute_command("IDX.ADD", "empty", "x", "a", "v")
    r.execute_command("IDX.DEL", "empty", "x")
    assert r.exists("empty") == 1
    assert r.delete("empty") == 1


def test_errors(r):
    fill(r)
    assert err(r, "IDX.CREATE", "i") == "index already exists"
    for args in (("IDX.ADD", "nope", "x", "a", "v"), ("IDX.DEL", "nope", "x"),
                 ("IDX.SEARCH", "nope", "a", "v"), ("IDX.INFO", "nope"), ("IDX.DROP", "nope")):
        assert err(r, *args) == "no such index", args
    r.set("s", "x")
    for args in (("IDX.CREATE", "s"), ("IDX.ADD", "s", "x", "a", "v"), ("IDX.DEL", "s", "x"),
                 ("IDX.SEARCH", "s", "a", "v"), ("IDX.INFO", "s"), ("IDX.DROP", "s")):
        assert err(r, *args) == WRONGTYPE, args
    assert err(r, "IDX.ADD", "i", "x", "a") == arity("idx.add")
    assert err(r, "IDX.ADD", "i", "x", "a", "v", "b") == arity("idx.add")
    assert err(r, "IDX.ADD", "i", "x", "PAYLOAD", "p") == arity("idx.add")
    assert err(r, "IDX.ADD", "i", "x", "PAYLOAD", "p", "a", "v") == "syntax error"
    assert err(r, "IDX.CREATE") == arity("idx.create")
    assert err(r, "IDX.SEARCH", "i", "a") == arity("idx.search")
    assert err(r, "IDX.DEL", "i") == arity("idx.del")
    assert err(r, "IDX.INFO", "i", "x") == arity("idx.info")
    assert err(r, "IDX.DROP") == arity("idx.drop")
    assert err(r, "IDX.SEARCH", "i", "a", "v", "b") == "syntax error"
    assert err(r, "IDX.SEARCH", "i", "LIMIT", "1") == "syntax error"
    assert err(r, "IDX.SEARCH", "i", "a", "v", "DEFAULT", "a") == "syntax error"
    assert err(r, "IDX.SEARCH", "i", "a", "v", "WITHPAYLOAD", "x") == "syntax error"
    assert err(r, "IDX.SEARCH", "i", "a", "v", "LIMIT", "-1") == "value is not an integer or out of range"
    assert err(r, "IDX.SEARCH", "i", "a", "v", "LIMIT", "ten") == "value is not an integer or out of range"
    assert search(r, "i", "colour", "red") == ["a", "b", "d"]


def test_command_metadata(r):
    info = r.execute_command("COMMAND", "INFO", "IDX.ADD", "IDX.SEARCH", "IDX.DROP")
    add, srch, drop = info["idx.add"], info["idx.search"], info["idx.drop"]
    assert add["arity"] == -5 and "write" in add["flags"]
    assert (add["first_key_pos"], add["last_key_pos"], add["step_count"]) == (1, 1, 1)
    assert srch["arity"] == -4 and "readonly" in srch["flags"]
    assert drop["arity"] == 2 and "write" in drop["flags"]
    text = str(r.execute_command("COMMAND DOCS", "IDX.INFO"))
    for field in ("entities", "pairs", "attributes", "payload_bytes", "memory_bytes"):
        assert field in text


def test_type_object_memory(r):
    fill(r)
    assert r.type("i") == "keelindex"
    assert r.object("encoding", "i") == "raw"
    small = r.memory_usage("i")
    for n in range(2000):
        r.execute_command("IDX.ADD", "i", f"id-{n}", "n", str(n % 7), "PAYLOAD", "x" * 50)
    assert r.memory_usage("i") > small + 2000 * 50
    assert r.scan(0, _type="keelindex")[1] == ["i"]


def test_dump_restore_copy_rename_move(r):
    fill(r)
    want = search(r, "i", "colour", "red", "WITHPAYLOAD")
    dump = r.dump("i")
    r.restore("j", 0, dump)
    assert search(r, "j", "colour", "red", "WITHPAYLOAD") == want
    assert err(r, "RESTORE", "j", "0", dump) == "BUSYKEY Target key name already exists."
    assert r.copy("i", "k")
    r.execute_command("IDX.DEL", "k", "a")
    # A copy is independent of its source.
    assert search(r, "i", "colour", "red") == ["a", "b", "d"]
    assert search(r, "k", "colour", "red") == ["b", "d"]
    assert r.rename("k", "k2")
    assert search(r, "k2", "colour", "red") == ["b", "d"]
    assert r.move("k2", 1)
    r.execute_command("SELECT", 1)
    try:
        assert search(r, "k2", "colour", "red") == ["b", "d"]
    finally:
        r.execute_command("SELECT", 0)
    # A damaged payload is refused, not loaded.
    bad = bytearray(dump)
    bad[12] ^= 0xFF
    with pytest.raises(redis.ResponseError):
        r.restore("bad", 0, bytes(bad))


def snapshot(r):
    return {
        key: (search(r, key, "colour", "red", "WITHPAYLOAD"), search(r, key, "size", "m"), index_info(r, key)["entities"])
        for key in ("i", "empty")
    }


def test_debug_reload_and_restart(tmp_path):
    args = ("--dir", str(tmp_path), "--save", "")
    with running_server(*args) as s:
        r = s.client()
        fill(r)
        r.execute_command("IDX.DEL", "i", "b")
        r.execute_command("IDX.CREATE", "empty")
        before = snapshot(r)
        assert r.execute_command("DEBUG", "RELOAD") == "OK"
        assert snapshot(r) == before
        assert r.type("i") == "keelindex"
        assert r.save()
    with running_server(*args) as s:
        assert snapshot(s.client()) == before


def test_aof_replay_and_rewrite(tmp_path):
    args = ("--dir", str(tmp_path), "--appendonly", "yes", "--appendfsync", "always",
            "--aof-use-rdb-preamble", "no")
    with running_server(*args) as s:
        r = s.client()
        fill(r)
        r.execute_command("IDX.CREATE", "empty")
        r.execute_command("IDX.ADD", "i", "a", "colour", "blue", "PAYLOAD", "new")
        r.execute_command("IDX.DEL", "i", "b")
        r.execute_command("IDX.CREATE", "gone")
        r.execute_command("IDX.DROP", "gone")
        before = snapshot(r)
    # Replayed from the incremental file.
    with running_server(*args) as s:
        r = s.client()
        assert snapshot(r) == before
        assert r.exists("gone") == 0
        assert r.bgrewriteaof()
        wait_for(lambda: persistence_info(r, "aof_rewrite_in_progress") == 0)
        assert persistence_info(r, "aof_last_bgrewrite_status") == "ok"
        base = [p for p in (tmp_path / "appendonlydir").iterdir() if ".base." in p.name]
        assert len(base) == 1 and base[0].name.endswith(".base.aof")
        text = base[0].read_bytes()
        assert b"IDX.CREATE" in text and b"IDX.ADD" in text
    # Rebuilt from the rewritten base.
    with running_server(*args) as s:
        assert snapshot(s.client()) == before


def test_updates_are_atomic_to_searches_on_other_threads():
    """Writers on several connections move entities between two colours (IDX.ADD replaces
    the entity whole, payload included) and in and out of the index; readers on other
    connections check each search sees whole updates only."""
    n_fixed, n_moving = 40, 40
    with running_server("--threads", "4") as s:
        setup = s.client()
        setup.execute_command("IDX.CREATE", "i")
        for n in range(n_fixed):
            setup.execute_command("IDX.ADD", "i", f"f{n}", "kind", "k", "colour", "red", "PAYLOAD", "red")
        stop = threading.Event()
        failures = []

        def writer(seed):
            c = s.client()
            try:
                for round_ in range(400):
                    n = (round_ * 13 + seed * 7) % n_fixed
                    colour = "red" if (round_ + seed) % 2 else "blue"
                    c.execute_command("IDX.ADD", "i", f"f{n}", "kind", "k", "colour", colour, "PAYLOAD", colour)
                    m = (round_ * 5 + seed) % n_moving
                    if round_ % 3 == 0:
                        c.execute_command("IDX.DEL", "i", f"m{m}")
                    else:
                        c.execute_command("IDX.ADD", "i", f"m{m}", "kind", "k", "colour", colour, "PAYLOAD", colour)
            except Exception as e:  # noqa: BLE001 - reported below
                failures.append(repr(e))
            finally:
                c.close()

        def reader():
            c = s.client()
            checks = 0
            try:
                while not stop.is_set() or checks < 20:
                    for colour in ("red", "blue"):
                        flat = c.execute_command("IDX.SEARCH", "i", "colour", colour, "kind", "k", "WITHPAYLOAD")
                        payloads = set(flat[1::2])
                        if payloads - {colour}:
                            failures.append(f"{colour} search saw payloads {payloads}")
                    p = c.pipeline(transaction=True)
                    p.execute_command("IDX.SEARCH", "i", "colour", "red")
                    p.execute_command("IDX.SEARCH", "i", "colour", "blue")
                    p.execute_command("IDX.SEARCH", "i", "kind", "k")
                    red, blue, everyone = p.execute()
                    if set(red) & set(blue):
                        failures.append(f"under both colours: {set(red) & set(blue)}")
                    if len(red) + len(blue) != len(everyone):
                        failures.append("counts not conserved")
                    fixed = [x for x in everyone if x.startswith("f")]
                    if len(fixed) != n_fixed:
                        failures.append(f"{len(fixed)} fixed entities")
                    checks += 1
            except Exception as e:  # noqa: BLE001 - reported below
                failures.append(repr(e))
            finally:
                c.close()

        writers = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
        readers = [threading.Thread(target=reader) for _ in range(3)]
        for t in writers + readers:
            t.start()
        for t in writers:
            t.join()
        stop.set()
        for t in readers:
            t.join()
        assert failures == []
        info = index_info(setup, "i")
        assert info["entities"] == len(search(setup, "i", "kind", "k"))
        assert info["entities"] >= n_fixed


def test_writes_invalidate_watch(server, r):
    fill(r)
    other = server.client()
    try:
        for write in (("IDX.ADD", "i", "z", "colour", "red"), ("IDX.DEL", "i", "z"), ("IDX.DROP", "i")):
            with r.pipeline() as p:
                p.watch("i")
                other.execute_command(*write)
                p.multi()
                p.exists("i")
                with pytest.raises(redis.WatchError):
                    p.execute()
        # A removal that removes nothing changes nothing.
        other.execute_command("IDX.CREATE", "i")
        with r.pipeline() as p:
            p.watch("i")
            other.execute_command("IDX.DEL", "i", "nobody")
            p.multi()
            p.exists("i")
            assert p.execute() == [1]
    finally:
        other.close()


def test_restore_refuses_inconsistent_images(rb):
    from test_dump_restore import payload

    rb.execute_command("IDX.CREATE", "i")
    rb.execute_command("IDX.ADD", "i", "idA1", "colour", "pink")
    rb.execute_command("IDX.ADD", "i", "idB1", "colour", "blue")
    body = rb.dump("i")[:-10]
    assert rb.restore("ok", 0, payload(body)) == b"OK"
    for bad in (body.replace(b"idB1", b"idA1"),  # an id twice
                body.replace(b"blue", b"pink"),  # a pair twice
                body[:-1]):  # no end of the module value
        with pytest.raises(redis.ResponseError) as e:
            rb.restore("bad", 0, payload(bad))
            pytest.fail(f"restored {bad!r}")
        assert "Bad data format" in str(e.value)
    assert rb.exists("bad") == 0

"""The crash test (tests/crash/crash_test.py) in short: three kill -9 rounds with appendfsync always;
and checks that the crash test itself notices lost, reordered and half-applied writes."""

import os
import random
import shutil
import sys

import pytest

from conftest import AGAINST_REDIS, BINARY, ROOT, refuses_aof

sys.path.insert(0, os.path.join(ROOT, "tests", "crash"))
import crash_test  # noqa: E402

SERVER = shutil.which("redis-server") if AGAINST_REDIS else BINARY


def short_run(**kw):
    seed = int(os.environ.get("KEEL_CRASH_SEED", random.randrange(1 << 32)))
    lines = []
    test = crash_test.CrashTest(SERVER, seed=seed, out=lines.append, **kw)
    reports = test.run()
    return reports, "\n".join(lines)


def test_crash_always_loses_nothing():
    refused = refuses_aof()
    if refused and not AGAINST_REDIS:
        pytest.skip("persistence not served yet")
    assert refused is None, refused
    reports, log = short_run(fsync="always", rounds=3, seconds_per_round=1.0)
    assert len(reports) == 3, log
    assert all(r.acked > 0 for r in reports), log
    assert not any(r.problems for r in reports), log


def test_crash_everysec_kill_of_the_process_loses_nothing():
    # A kill -9 keeps the page cache: with every write in the file before
    # its reply, nothing acknowledged may be missing, even under everysec.
    # redis-server postpones its write while a background fsync runs, so
    # against it only the 2 s promise is checked.
    refused = refuses_aof()
    if refused and not AGAINST_REDIS:
        pytest.skip("persistence not served yet")
    window = crash_test.EVERYSEC_WINDOW_S if AGAINST_REDIS else 0.0
    reports, log = short_run(fsync="everysec", rounds=3, seconds_per_round=1.0,
                             everysec_window=window)
    assert len(reports) == 3, log
    assert all(r.acked > 0 for r in reports), log
    assert not any(r.problems for r in reports), log
    if not AGAINST_REDIS:
        assert sum(r.late_lost for r in reports) == 0, log


def test_crash_test_notices_a_server_without_a_log():
    # With the AOF off, a kill -9 loses everything: the crash test must say so.
    reports, log = short_run(rounds=1, seconds_per_round=0.3, connections=4, keep_dir=False,
                             server_args=["--save", "", "--appendonly", "no"])
    assert reports[0].acked > 0, log
    assert any(p.startswith("connection ") and "LOST" in p for p in reports[0].problems), log


# --- the judging, without a server -------------------------------------------------------------

def ops_of(kinds, acked=None, t=100.0):
    """Ops numbered from 0, all acknowledged at time t except the indices not in acked."""
    ops = []
    for n, kind in enumerate(kinds):
        op = crash_test.Op(n, kind, f"v{n}.".encode() if kind == "set" else b"")
        if acked is None or n in acked:
            op.status, op.acked_at = "acked", t
        else:
            op.status = "unknown"
        ops.append(op)
    return ops


def empty_state():
    return {"str": None, "ctr": None, "h": {}, "s": set(), "l": [], "z": [], "bf": {}, "m:ctr": None,
            "m:str": None, "m:l": [], "m:h": {}, "m:s": set(), "m:z": [], "m:bf": {}}


def problems(ops, state, fsync="always", kill_at=101.0, bloom=False):
    ev = crash_test.judge(ops, state, bloom)
    return crash_test.check_connection(ops, ev, fsync, kill_at).problems


def test_judge_accepts_everything_applied():
    ops = ops_of(["set", "incr", "hset", "sadd", "rpush", "zadd", "incr"])
    state = empty_state() | {"str": b"v0.", "ctr": b"2", "h": {b"f2": b"v2"}, "s": {b"m3"},
                             "l": [b"e4"], "z": [(b"m5", 5.0)]}
    assert problems(ops, state) == []


def test_judge_allows_the_write_in_flight_to_be_missing():
    ops = ops_of(["rpush", "rpush"], acked={0})
    assert problems(ops, empty_state() | {"l": [b"e0"]}) == []
    assert problems(ops, empty_state() | {"l": [b"e0", b"e1"]}) == []


def test_judge_reports_an_acknowledged_write_missing():
    ops = ops_of(["rpush", "incr", "sadd"])
    found = problems(ops, empty_state() | {"l": [b"e0"], "ctr": b"1"})
    assert any("LOST: #2 sadd" in p for p in found), found


def test_judge_everysec_allows_recent_loss_only():
    ops = ops_of(["incr", "incr"])
    ops[0].acked_at, ops[1].acked_at = 90.0, 100.5
    assert problems(ops, empty_state() | {"ctr": b"1"}, fsync="everysec") == []
    found = problems(ops, empty_state(), fsync="everysec")
    assert any("LOST: #0 incr" in p for p in found), found
    assert not any("#1" in p for p in found), found


def test_judge_bloom_absent_item_is_missing_and_present_proves_nothing():
    ops = ops_of(["bf", "bf", "rpush"])
    state = empty_state() | {"bf": {"i0": 1, "i1": 0}, "l": [b"e2"]}
    found = problems(ops, state, bloom=True)
    assert any("LOST: #1 bf" in p for p in found), found
    assert not any("#0" in p for p in found), found


def test_judge_reports_a_gap():
    # A later write survived an earlier one that did not: the log was not replayed in order.
    ops = ops_of(["hset", "hset", "hset"], acked={0, 1})
    found = problems(ops, empty_state() | {"h": {b"f0": b"v0", b"f2": b"v2"}})
    assert any("not a prefix" in p for p in found), found


def test_judge_reports_a_half_applied_multi_block():
    ops = ops_of(["multi"], acked=set())
    state = empty_state() | {"m:ctr": b"1", "m:str": b"b0", "m:l": [b"b0"], "m:h": {b"b0": b"0"},
                             "m:s": {b"b0"}, "m:z": []}
    found = problems(ops, state)
    assert any("MULTI block #0 partly applied" in p for p in found), found
    state["m:z"] = [(b"b0", 0.0)]
    assert problems(ops, state) == []


def test_judge_reports_values_never_written():
    ops = ops_of(["set", "zadd", "rpush"])
    state = empty_state() | {"str": b"v7.", "z": [(b"m1", 2.0)], "l": [b"e9"], "s": {b"m99"}}
    found = problems(ops, state)
    assert any("SADD: unexpected member b'm99'" in p for p in found), found
    assert any("SET: value" in p for p in found), found
    assert any("ZADD: wrong value" in p for p in found), found
    assert any("RPUSH: list is not a prefix" in p for p in found), found

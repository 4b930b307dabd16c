"""redis-py's Lua-backed helpers, used unchanged: `Lock` (release, extend and reacquire
are scripts run through EVALSHA) and `register_script` (EVALSHA, falling back to EVAL
on NOSCRIPT)."""

import hashlib
import threading
import time

import pytest
import redis
from redis.exceptions import LockError, LockNotOwnedError


@pytest.fixture
def scripts_flushed(r):
    """Each test starts with an empty script cache, so the first call of every script
    takes the NOSCRIPT path, whatever ran before."""
    r.script_flush()
    yield r


def test_lock_acquire_and_release(scripts_flushed):
    r = scripts_flushed
    lock = r.lock("res", timeout=10)
    assert lock.acquire(blocking=False) is True
    assert lock.locked() and lock.owned()
    token = lock.local.token.decode()
    assert r.get("res") == token
    assert 9000 < r.pttl("res") <= 10000
    # A second lock on the same name cannot take it while it is held.
    assert r.lock("res").acquire(blocking=False) is False
    lock.release()
    assert r.exists("res") == 0
    assert not lock.locked()
    with pytest.raises(LockError, match="Cannot release an unlocked lock"):
        lock.release()


def test_lock_as_context_manager(scripts_flushed):
    r = scripts_flushed
    with r.lock("res", timeout=5) as lock:
        assert lock.owned()
        assert r.exists("res") == 1
    assert r.exists("res") == 0


def test_lock_without_timeout_has_no_ttl(scripts_flushed):
    r = scripts_flushed
    lock = r.lock("res")
    assert lock.acquire(blocking=False)
    assert r.ttl("res") == -1
    with pytest.raises(LockError, match="Cannot extend a lock with no timeout"):
        lock.extend(1)
    lock.release()
    assert r.exists("res") == 0


def test_blocking_acquire_gives_up_after_its_timeout(scripts_flushed):
    r = scripts_flushed
    holder = r.lock("res", timeout=10)
    assert holder.acquire(blocking=False)
    waiter = r.lock("res", sleep=0.02, blocking_timeout=0.3)
    start = time.monotonic()
    assert waiter.acquire() is False
    waited = time.monotonic() - start
    assert 0.2 <= waited < 2.0
    with pytest.raises(LockError, match="Unable to acquire lock"):
        with r.lock("res", sleep=0.02, blocking_timeout=0.1):
            pass
    holder.release()
    assert waiter.acquire(blocking=False) is True
    waiter.release()


def test_blocking_acquire_succeeds_once_the_holder_releases(scripts_flushed, server):
    r = scripts_flushed
    # Not thread-local: the thread below releases what this one acquired.
    holder = r.lock("res", timeout=10, thread_local=False)
    assert holder.acquire(blocking=False)

    def release_later():
        time.sleep(0.2)
        holder.release()

    t = threading.Thread(target=release_later)
    t.start()
    other = server.client()
    waiter = other.lock("res", timeout=10, sleep=0.02, blocking_timeout=5)
    start = time.monotonic()
    assert waiter.acquire() is True
    t.join()
    assert 0.1 <= time.monotonic() - start < 5
    assert r.get("res") == waiter.local.token.decode()
    waiter.release()
    other.close()


def test_extend_adds_to_or_replaces_the_ttl(scripts_flushed):
    r = scripts_flushed
    lock = r.lock("res", timeout=2)
    assert lock.acquire(blocking=False)
    assert lock.extend(3) is True
    # Added to what was left: about 5 s now.
    assert 4000 < r.pttl("res") <= 5000
    assert lock.extend(1, replace_ttl=True) is True
    assert 0 < r.pttl("res") <= 1000
    lock.release()


def test_extend_by_a_lock_that_lost_ownership(scripts_flushed):
    r = scripts_flushed
    lock = r.lock("res", timeout=10)
    assert lock.acquire(blocking=False)
    r.set("res", "someone-else", px=10000)
    with pytest.raises(LockNotOwnedError, match="Cannot extend a lock that's no longer owned"):
        lock.extend(5)
    with pytest.raises(LockNotOwnedError, match="Cannot reacquire a lock that's no longer owned"):
        lock.reacquire()
    # The other owner's key and TTL are untouched.
    assert r.get("res") == "someone-else"
    assert 9000 < r.pttl("res") <= 10000


def test_extend_of_a_key_without_ttl_fails(scripts_flushed):
    r = scripts_flushed
    lock = r.lock("res", timeout=10)
    assert lock.acquire(blocking=False)
    # The script refuses to extend a key that has lost its TTL (PTTL -1).
    r.persist("res")
    with pytest.raises(LockNotOwnedError):
        lock.extend(5)
    assert r.ttl("res") == -1


def test_reacquire_resets_the_ttl(scripts_flushed):
    r = scripts_flushed
    lock = r.lock("res", timeout=1)
    assert lock.acquire(blocking=False)
    time.sleep(0.3)
    assert r.pttl("res") <= 750
    assert lock.reacquire() is True
    assert 800 < r.pttl("res") <= 1000
    lock.release()


def test_lock_expires_and_is_taken_by_another(scripts_flushed):
    r = scripts_flushed
    first = r.lock("res", timeout=0.2)
    assert first.acquire(blocking=False)
    time.sleep(0.4)
    assert not first.locked()
    second = r.lock("res", timeout=10)
    assert second.acquire(blocking=False)
    # The first holder's release must not delete the second's lock.
    with pytest.raises(LockNotOwnedError, match="Cannot release a lock that's no longer owned"):
        first.release()
    assert r.get("res") == second.local.token.decode()
    second.release()


def test_release_by_a_non_owner(scripts_flushed):
    r = scripts_flushed
    owner = r.lock("res", timeout=10)
    assert owner.acquire(blocking=False, token="owner-token")
    intruder = r.lock("res", timeout=10)
    intruder.local.token = b"intruder-token"
    with pytest.raises(LockNotOwnedError, match="Cannot release a lock that's no longer owned"):
        intruder.release()
    assert r.get("res") == "owner-token"
    # Releasing a lock whose key is gone is also refused.
    owner.release()
    stale = r.lock("res")
    stale.local.token = b"owner-token"
    with pytest.raises(LockNotOwnedError):
        stale.release()


def test_threads_contending_on_one_lock_count_exactly(server):
    setup = server.client()
    setup.flushall()
    setup.script_flush()
    threads_n, rounds = 8, 40
    errors = []

    def work():
        c = server.client()
        lock = c.lock("counter-lock", timeout=10, sleep=0.002)
        try:
            for _ in range(rounds):
                with lock:
                    # A read-modify-write that loses updates unless the lock excludes.
                    value = int(c.get("counter") or 0)
                    c.set("counter", value + 1)
        except Exception as e:  # reported below, so a failing thread fails the test
            errors.append(e)
        finally:
            c.close()

    threads = [threading.Thread(target=work) for _ in range(threads_n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert setup.get("counter") == str(threads_n * rounds)
    assert setup.exists("counter-lock") == 0
    setup.close()


INCRBY_SCRIPT = "return redis.call('INCRBY', KEYS[1], ARGV[1])"


def test_register_script_loads_on_noscript(scripts_flushed):
    r = scripts_flushed
    script = r.register_script(INCRBY_SCRIPT)
    assert script.sha == hashlib.sha1(INCRBY_SCRIPT.encode()).hexdigest()
    assert r.script_exists(script.sha) == [False]
    assert script(keys=["n"], args=[5]) == 5
    assert r.script_exists(script.sha) == [True]
    assert script(keys=["n"], args=[2]) == 7
    r.script_flush()
    assert r.script_exists(script.sha) == [False]
    assert script(keys=["n"], args=[3]) == 10
    assert r.script_exists(script.sha) == [True]


def test_register_script_in_a_pipeline(scripts_flushed):
    r = scripts_flushed
    script = r.register_script(INCRBY_SCRIPT)
    for transaction in (False, True):
        r.script_flush()
        p = r.pipeline(transaction=transaction)
        script(keys=["n"], args=[1], client=p)
        p.get("n")
        script(keys=["n"], args=[10], client=p)
        results = p.execute()
        assert results[1] == str(results[0])
        assert results[2] == results[0] + 10
    assert r.get("n") == "22"


def test_register_script_reply_types_and_errors(scripts_flushed):
    r = scripts_flushed
    multi = r.register_script(
        "return {KEYS[1], ARGV[1], 3, 3.9, {'nested', false}, redis.status_reply('FINE')}"
    )
    assert multi(keys=["k"], args=["v"]) == ["k", "v", 3, 3, ["nested", None], "FINE"]
    failing = r.register_script("return redis.error_reply('MYERR went wrong')")
    with pytest.raises(redis.ResponseError, match="^MYERR went wrong$"):
        failing()
    wrongtype = r.register_script("return redis.call('LPUSH', KEYS[1], 'x')")
    r.set("s", "v")
    with pytest.raises(redis.ResponseError, match="^WRONGTYPE Operation against a key"):
        wrongtype(keys=["s"])

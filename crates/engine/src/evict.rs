//! `maxmemory` and eviction: before a command runs while the allocator counts
//! more than `maxmemory`, keys are evicted by `maxmemory-policy` until it
//! counts less; if none can go, commands that may grow memory are refused.
//!
//! The policies are Redis's approximations. Each round samples
//! `maxmemory-samples` keys from a few shards, starting at a random one
//! (every key, or only keys with a TTL for the volatile policies), into an
//! eviction pool of the best [`POOL_SIZE`] candidates kept across rounds, and
//! evicts the best one still present, scored again when it is taken: the
//! longest idle (LRU), the least frequently used (LFU, see
//! `keel_store::access`), the nearest deadline (volatile-ttl), or a random
//! key. An eviction is a deletion seen like any other: logged as `DEL`,
//! announced with the `evicted` keyspace event, invalidating watchers and
//! tracked reads, and counted in INFO `evicted_keys`.
//!
//! Nothing here runs while `maxmemory` is 0: the executor tests one atomic.

use crate::declare::Flags;
use crate::error::CmdError;
use crate::kernel::CommandSpec;
use crate::kernel::Engine;
use crate::session::Session;
use bytes::Bytes;
use keel_store::Sample;
use std::sync::atomic::Ordering;
use std::time::Instant;

pub(crate) mod state;
use self::state::SHARDS_PER_ROUND;
pub use self::state::{Evictor, Limits, Policy, Pool, OOM, POOL_SIZE};

/// Bytes not counted against `maxmemory`; Keel's AOF buffer is written out
/// by its own thread at once, so there is nothing to leave out.
pub fn not_counted(_engine: &Engine) -> u64 {
    0
}

/// Evict as the policy allows, then say whether the command must be refused
/// with [`OOM`]: Redis refuses commands that may grow memory (`denyoom`),
/// an EXEC whose queue holds one, and, inside MULTI, anything but EXEC,
/// DISCARD, QUIT and RESET (queueing grows memory too).
pub(crate) fn refuses(engine: &Engine, session: &Session, spec: &CommandSpec) -> bool {
    if !over_limit(engine) || session.master {
        return false;
    }
    if spec.flags.contains(Flags::DENYOOM) {
        return true;
    }
    let Some(queue) = session.multi.as_ref() else {
        return false;
    };
    match spec.name {
        "EXEC" => queue.iter().any(|argv| {
            engine
                .resolve(argv)
                .is_ok_and(|id| engine.commands.specs[id].flags.contains(Flags::DENYOOM))
        }),
        "DISCARD" | "QUIT" | "RESET" => false,
        _ => true,
    }
}

/// The refusal for a command [`refuses`] turned down, with what it does to
/// a transaction (see [`crate::transaction::refuse`]).
pub(crate) fn refusal(engine: &Engine, session: &mut Session, spec: &CommandSpec) -> CmdError {
    crate::transaction::refuse(engine, session, spec, OOM)
}

/// CONFIG SET maxmemory: like Redis, start evicting down to the new limit
/// at once rather than at the next command. Inside EXEC the transaction's
/// shards are held, so this waits for the next command instead.
pub fn maxmemory_changed(ctx: &crate::kernel::Ctx<'_>) {
    // As in Redis, setting 0 does nothing more: not even closing the
    // eviction_exceeded_time period, which the next limit's check does.
    if ctx.engine.config.ops.evict.maxmemory() != 0 && ctx.guards.indices().is_empty() {
        evict_down(ctx.engine, true);
    }
}

/// The server's cron: finish evicting what the last command ran out of
/// time for (Redis's eviction time event). One load when nothing lags.
pub fn cron(engine: &Engine) {
    if engine.evictor.lagging.load(Ordering::Relaxed) {
        evict_down(engine, false);
    }
}

/// Whether memory is over `maxmemory` now, without evicting: what scripts
/// check before their first write that may grow memory.
pub fn still_over(engine: &Engine) -> bool {
    let max = engine.config.ops.evict.maxmemory();
    max != 0 && (engine.used_memory)().saturating_sub(not_counted(engine)) > max
}

/// Whether memory is over `maxmemory` after evicting what the policy allows:
/// true when the command should be refused if it may grow memory. The
/// caller checked that `maxmemory` is set.
pub(crate) fn over_limit(engine: &Engine) -> bool {
    evict_down(engine, false)
}

/// Evict toward `maxmemory`; within the tenacity's time budget unless
/// `unbounded`. True if memory is still over and nothing more can go.
fn evict_down(engine: &Engine, unbounded: bool) -> bool {
    // As Redis's replicas under `replica-ignore-maxmemory yes` (the only
    // value Keel takes): a replica evicts nothing and refuses nothing for
    // memory; its master's DELs keep it in step.
    if engine.follow.following() {
        return false;
    }
    let outcome = evict_within(engine, unbounded);
    let ev = &engine.evictor;
    ev.lagging
        .store(outcome == Outcome::Running, Ordering::Relaxed);
    // Redis's eviction_exceeded_time: from when eviction first could not
    // bring memory under the limit until it does.
    let now_us = engine.started.elapsed().as_micros() as u64 + 1;
    if outcome == Outcome::Done {
        let since = ev.exceeded_since_us.swap(0, Ordering::Relaxed);
        if since != 0 {
            ev.exceeded_total_us
                .fetch_add(now_us.saturating_sub(since), Ordering::Relaxed);
        }
    } else if ev.exceeded_since_us.load(Ordering::Relaxed) == 0 {
        ev.exceeded_since_us.store(now_us, Ordering::Relaxed);
    }
    outcome == Outcome::Failed
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Under the limit (or nothing to do).
    Done,
    /// Out of time while still making progress: Redis lets the command run
    /// and goes on evicting later (here: the next command or the cron).
    Running,
    /// Over the limit with nothing the policy lets go.
    Failed,
}

fn evict_within(engine: &Engine, unbounded: bool) -> Outcome {
    let limits = &engine.config.ops.evict;
    let max = limits.maxmemory();
    let used = || (engine.used_memory)().saturating_sub(not_counted(engine));
    if max == 0 || used() <= max {
        return Outcome::Done;
    }
    // A paused dataset stays as it is, and a log being loaded is replayed
    // whole: Redis neither evicts nor refuses then.
    if engine.persist.loading.load(Ordering::Relaxed) || engine.pause.holds_expiry(engine.now_ms())
    {
        return Outcome::Done;
    }
    let policy = limits.policy();
    if policy == Policy::NoEviction {
        return Outcome::Failed;
    }
    // Redis's tenacity: 500us of eviction at 10, growing by 15% per step;
    // 100 means no limit.
    let tenacity = limits.tenacity.load(Ordering::Relaxed);
    let budget_us = if tenacity >= 100 || unbounded {
        u64::MAX
    } else {
        (500.0 * 1.15f64.powi(tenacity as i32 - 10)) as u64
    };
    let start = Instant::now();
    let mut failures = 0;
    while used() > max {
        if evict_one(engine, policy) {
            failures = 0;
        } else {
            failures += 1;
            // Rounds start at random shards, so enough of them failing does
            // not mean every shard was seen: give up only when no shard
            // holds a key the policy may take (or after very many rounds).
            let shards = engine.keyspace.shard_count();
            if failures * SHARDS_PER_ROUND > shards
                && (failures > 64 * shards || !anything_to_evict(engine, policy))
            {
                return Outcome::Failed;
            }
        }
        if start.elapsed().as_micros() as u64 > budget_us {
            return Outcome::Running;
        }
    }
    Outcome::Done
}

/// Whether some database of some shard holds a key `policy` may evict.
fn anything_to_evict(engine: &Engine, policy: Policy) -> bool {
    let ks = &engine.keyspace;
    (0..ks.shard_count()).any(|i| {
        let mut shard = ks.lock(i);
        (0..shard.databases()).any(|db| {
            let t = shard.db(db);
            if policy.volatile() {
                t.volatile_len() > 0
            } else {
                !t.is_empty()
            }
        })
    })
}

/// INFO stats `total_eviction_exceeded_time` and
/// `current_eviction_exceeded_time`, in ms.
pub fn exceeded_times_ms(engine: &Engine) -> (u64, u64) {
    let ev = &engine.evictor;
    let since = ev.exceeded_since_us.load(Ordering::Relaxed);
    let current_us = if since == 0 {
        0
    } else {
        (engine.started.elapsed().as_micros() as u64 + 1).saturating_sub(since)
    };
    let total_us = ev.exceeded_total_us.load(Ordering::Relaxed) + current_us;
    (total_us / 1000, current_us / 1000)
}

/// CONFIG RESETSTAT.
pub fn reset_stats(engine: &Engine) {
    let ev = &engine.evictor;
    ev.evicted_keys.store(0, Ordering::Relaxed);
    ev.exceeded_total_us.store(0, Ordering::Relaxed);
    ev.exceeded_since_us.store(0, Ordering::Relaxed);
}

/// Evict one key by `policy`; false if the sampled shards had none to give.
fn evict_one(engine: &Engine, policy: Policy) -> bool {
    let ev = &engine.evictor;
    let now = engine.now_ms();
    let samples = engine.config.ops.evict.samples.load(Ordering::Relaxed);
    let mut pick = |n: usize| (engine.rng.next_u64() % n.max(1) as u64) as usize;
    let mut pool = ev.pool.lock();
    if ev.pool_policy.swap(policy as u8, Ordering::Relaxed) != policy as u8 {
        pool.clear();
    }
    let ks = &engine.keyspace;
    if let Some((db, key)) = sample_round(ks, &mut pool, policy, samples, now, &mut pick) {
        // Random policies evict the first key drawn, at once.
        drop(pool);
        let mut shard = ks.lock(ks.shard_of(key.as_slice()));
        return remove(engine, &mut shard, db, &key, now);
    }
    take_best(ks, &mut pool, policy, now, |shard, db, key| {
        remove(engine, shard, db, key, now)
    })
}

/// One round of sampling: `maxmemory-samples` keys of each database of
/// [`SHARDS_PER_ROUND`] shards go into the pool. The round starts at a
/// random shard: the pool keeps the first of equally good candidates, and
/// under LFU most keys share one counter value, so rounds that always
/// started at the same shards evicted only from those, until they held
/// little but keys written a moment before. Random policies return the first
/// key drawn instead.
fn sample_round(
    ks: &keel_store::Keyspace,
    pool: &mut Pool,
    policy: Policy,
    samples: usize,
    now: u64,
    pick: &mut dyn FnMut(usize) -> usize,
) -> Option<(usize, keel_store::CompactBytes)> {
    let shards = ks.shard_count();
    let first = pick(shards);
    let mut drawn: Vec<Sample> = Vec::new();
    for i in 0..SHARDS_PER_ROUND.min(shards) {
        let mut shard = ks.lock((first + i) % shards);
        for db in 0..shard.databases() {
            let t = shard.db(db);
            if t.is_empty() || (policy.volatile() && t.volatile_len() == 0) {
                continue;
            }
            drawn.clear();
            t.sample(samples, policy.volatile(), now, pick, &mut drawn);
            if policy.random() {
                if let Some(s) = drawn.first() {
                    return Some((db, s.key.clone()));
                }
                continue;
            }
            for s in &drawn {
                pool.offer(policy.score(s), db, &s.key);
            }
        }
    }
    None
}

/// Evict the best candidate of the pool that is still there, through
/// `evict`. A candidate read or written since it was sampled is scored
/// again and put back rather than evicted on its old score: a key that
/// was idle when sampled may be one of the hottest by now.
fn take_best(
    ks: &keel_store::Keyspace,
    pool: &mut Pool,
    policy: Policy,
    now: u64,
    mut evict: impl FnMut(&mut keel_store::Shard, usize, &keel_store::CompactBytes) -> bool,
) -> bool {
    while let Some(c) = pool.pop_best() {
        let mut shard = ks.lock(ks.shard_of(c.key.as_slice()));
        if c.db >= shard.databases() {
            continue;
        }
        if policy != Policy::VolatileTtl {
            let Some(e) = shard.db(c.db).find_for_hint(c.key.as_slice()) else {
                continue;
            };
            let score = policy.score(&Sample {
                key: c.key.clone(),
                idle_s: e.idle_seconds(now),
                freq: e.frequency(now),
                expires_at_ms: 0,
            });
            // Each time a candidate goes back its score is lower, so this ends.
            if score < c.score {
                pool.offer(score, c.db, &c.key);
                continue;
            }
        }
        if evict(&mut shard, c.db, &c.key) {
            return true;
        }
    }
    false
}

/// Evict `key` from `db` if it is still there, with everything a deletion
/// owes: watchers, tracking, the `evicted` event, the log, the counter.
fn remove(
    engine: &Engine,
    shard: &mut keel_store::Shard,
    db: usize,
    key: &keel_store::CompactBytes,
    now: u64,
) -> bool {
    if db >= shard.databases() || shard.db(db).evict(key.as_slice()).is_none() {
        return false;
    }
    let k = key.as_slice();
    engine.watches.touch(db, k);
    crate::notify::evicted(engine, db, k);
    if engine.tracking.active() {
        crate::tracking::expired(engine, std::slice::from_ref(key));
    }
    if engine.logging() {
        let del = vec![(
            db,
            vec![Bytes::from_static(b"DEL"), Bytes::copy_from_slice(k)],
        )];
        if engine.persist.aof.on() {
            engine.persist.aof.append(&del, now);
        }
        if engine.repl.active() {
            engine.repl.feed(&del);
        }
        if let Some(sink) = engine.sink.as_ref() {
            sink.append(db, &del[0].1);
        }
    }
    engine.evictor.evicted_keys.fetch_add(1, Ordering::Relaxed);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> keel_store::CompactBytes {
        keel_store::CompactBytes::new(s.as_bytes())
    }

    #[test]
    fn the_pool_keeps_the_best_sixteen_best_last() {
        let mut p = Pool::default();
        for i in 0..40u64 {
            // Scores in a scrambled order.
            let score = (i * 17) % 40;
            p.offer(score, 0, &key(&format!("k{score}")));
        }
        assert_eq!(p.items.len(), POOL_SIZE);
        let scores: Vec<u64> = p.items.iter().map(|c| c.score).collect();
        assert_eq!(scores, (24..40).collect::<Vec<_>>());
        let best = p.pop_best().unwrap();
        assert_eq!((best.score, best.key.as_slice()), (39, &b"k39"[..]));
    }

    #[test]
    fn a_key_offered_again_is_held_once_with_its_new_score() {
        let mut p = Pool::default();
        p.offer(5, 0, &key("a"));
        p.offer(9, 0, &key("b"));
        p.offer(1, 0, &key("a"));
        p.offer(3, 1, &key("a"));
        let held: Vec<(u64, usize)> = p.items.iter().map(|c| (c.score, c.db)).collect();
        assert_eq!(held, vec![(1, 0), (3, 1), (9, 0)]);
    }

    #[test]
    fn a_full_pool_refuses_worse_candidates() {
        let mut p = Pool::default();
        for i in 0..POOL_SIZE as u64 {
            p.offer(100 + i, 0, &key(&format!("k{i}")));
        }
        p.offer(50, 0, &key("low"));
        assert!(p.items.iter().all(|c| c.key.as_slice() != b"low"));
        p.offer(1000, 0, &key("high"));
        assert_eq!(p.items.last().unwrap().key.as_slice(), b"high");
        assert_eq!(p.items.len(), POOL_SIZE);
    }

    /// A deterministic draw below `n` for sampling tests.
    fn picker(mut seed: u64) -> impl FnMut(usize) -> usize {
        move |n: usize| {
            seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) % n.max(1) as u64) as usize
        }
    }

    fn put(ks: &keel_store::Keyspace, key: &str, now: u64) {
        let mut shard = ks.lock(ks.shard_of(key.as_bytes()));
        shard
            .db(0)
            .insert(key.as_bytes(), keel_store::Value::str(b"v"), 0, now);
    }

    #[test]
    fn equally_good_candidates_are_evicted_from_every_shard_alike() {
        // Every key has the same LFU counter, as most keys do under LFU: the
        // pool keeps the first of equals, so the round's first shard wins.
        let ks = keel_store::Keyspace::new(1, 6);
        let held = 64 * 300;
        for i in 0..held {
            put(&ks, &format!("k{i}"), 1000);
        }
        let mut pick = picker(7);
        let mut pool = Pool::default();
        let mut shards_hit = std::collections::BTreeSet::new();
        let (rounds, newest) = (6000, 50);
        let mut evicted_new = 0;
        for n in held..held + rounds {
            assert!(sample_round(&ks, &mut pool, Policy::AllKeysLfu, 5, 1000, &mut pick).is_none());
            let done = take_best(
                &ks,
                &mut pool,
                Policy::AllKeysLfu,
                1000,
                |shard, db, key| {
                    let i: usize = std::str::from_utf8(&key.as_slice()[1..])
                        .ok()
                        .and_then(|d| d.parse().ok())
                        .unwrap_or(0);
                    evicted_new += usize::from(i + newest >= n);
                    shards_hit.insert(ks.shard_of(key.as_slice()));
                    shard.db(db).evict(key.as_slice()).is_some()
                },
            );
            assert!(done);
            // The key written after each eviction, as a SET of a missing key.
            put(&ks, &format!("k{n}"), 1000);
        }
        assert_eq!(shards_hit.len(), 64);
        // Uniform choice: about rounds * newest / held = 15 of them.
        assert!(evicted_new < 60, "{evicted_new} of the newest keys evicted");
    }

    #[test]
    fn a_candidate_used_since_it_was_sampled_is_not_evicted_on_its_old_score() {
        let ks = keel_store::Keyspace::new(1, 6);
        put(&ks, "cold", 0);
        put(&ks, "hot", 0);
        let now = 100_000;
        let mut pool = Pool::default();
        pool.offer(99, 0, &key("cold"));
        pool.offer(100, 0, &key("hot"));
        // Read after it was sampled: idle 0 now.
        {
            let mut shard = ks.lock(ks.shard_of(b"hot"));
            assert!(shard.db(0).get(b"hot", now).is_some());
        }
        let mut gone = Vec::new();
        assert!(take_best(
            &ks,
            &mut pool,
            Policy::AllKeysLru,
            now,
            |shard, db, k| {
                gone.push(k.as_slice().to_vec());
                shard.db(db).evict(k.as_slice()).is_some()
            }
        ));
        assert_eq!(gone, vec![b"cold".to_vec()]);
        // The read key stays a candidate, with its new score.
        let held: Vec<(u64, &[u8])> = pool
            .items
            .iter()
            .map(|c| (c.score, c.key.as_slice()))
            .collect();
        assert_eq!(held, vec![(0, &b"hot"[..])]);
    }

    #[test]
    fn policies_parse_and_round_trip() {
        for name in [
            "noeviction",
            "allkeys-lru",
            "allkeys-lfu",
            "allkeys-random",
            "volatile-lru",
            "volatile-lfu",
            "volatile-random",
            "volatile-ttl",
        ] {
            let p = Policy::parse(name);
            assert_eq!(Policy::from_u8(p as u8), p);
        }
        assert_eq!(Policy::parse("ALLKEYS-LFU"), Policy::AllKeysLfu);
        assert!(Policy::parse("volatile-lfu").is_lfu());
    }
}

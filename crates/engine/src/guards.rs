//! The shard locks a command holds while it runs, owned by its [`crate::Ctx`].

use keel_store::Shard;
use keel_store::{ShardGuard, ShardReadGuard};

pub enum Guards<'a> {
    None,
    One(usize, ShardGuard<'a>),
    /// One shard held shared, by a read-only command (see [`Ctx::must_write`]).
    Read(usize, ShardReadGuard<'a>),
    /// Sorted by shard index; every shard when the command takes the whole keyspace.
    Many(Vec<(usize, ShardGuard<'a>)>),
}

impl<'a> Guards<'a> {
    pub(crate) fn find(&mut self, shard: usize) -> Option<&mut Shard> {
        match self {
            Guards::None => None,
            Guards::One(i, g) => (*i == shard).then_some(&mut **g),
            Guards::Read(..) => None,
            Guards::Many(v) => {
                let pos = v.binary_search_by_key(&shard, |(i, _)| *i).ok()?;
                Some(&mut *v[pos].1)
            }
        }
    }

    /// The shard if it is held, shared or exclusively, for reading.
    pub fn find_ref(&self, shard: usize) -> Option<&Shard> {
        match self {
            Guards::None => None,
            Guards::One(i, g) => (*i == shard).then_some(&**g),
            Guards::Read(i, g) => (*i == shard).then_some(&**g),
            Guards::Many(v) => {
                let pos = v.binary_search_by_key(&shard, |(i, _)| *i).ok()?;
                Some(&*v[pos].1)
            }
        }
    }

    /// Whether the command holds its shard shared.
    #[inline]
    pub(crate) fn shared(&self) -> bool {
        matches!(self, Guards::Read(..))
    }

    /// Run `f` on every shard held exclusively; a shared one is skipped: a
    /// command holding it changes nothing.
    pub(crate) fn for_each(&mut self, mut f: impl FnMut(&mut Shard)) {
        match self {
            Guards::None | Guards::Read(..) => {}
            Guards::One(_, g) => f(g),
            Guards::Many(v) => v.iter_mut().for_each(|(_, g)| f(g)),
        }
    }

    /// Add the guard of a shard not held yet, keeping the order by index.
    pub(crate) fn insert(&mut self, shard: usize, guard: ShardGuard<'a>) {
        let mut list = match std::mem::replace(self, Guards::None) {
            Guards::None => Vec::with_capacity(2),
            Guards::Read(..) => {
                // Only scripts add shards as they run, and they never hold one
                // shared: dropping it here would lose a lock still relied on.
                debug_assert!(false, "a shard added to a shared hold");
                Vec::with_capacity(2)
            }
            Guards::One(i, g) => vec![(i, g)],
            Guards::Many(v) => v,
        };
        let at = list.partition_point(|(i, _)| *i < shard);
        list.insert(at, (shard, guard));
        *self = Guards::Many(list);
    }

    /// The indices of the shards held, ascending.
    pub fn indices(&self) -> Vec<usize> {
        match self {
            Guards::None => Vec::new(),
            Guards::One(i, _) | Guards::Read(i, _) => vec![*i],
            Guards::Many(v) => v.iter().map(|(i, _)| *i).collect(),
        }
    }

    pub(crate) fn holds(&self, shard: usize) -> bool {
        match self {
            Guards::None => false,
            Guards::One(i, _) | Guards::Read(i, _) => *i == shard,
            Guards::Many(v) => v.binary_search_by_key(&shard, |(i, _)| *i).is_ok(),
        }
    }
}

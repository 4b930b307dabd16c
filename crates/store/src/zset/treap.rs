//! The general form of a sorted set (`Value::ZSet`): a treap over (score,
//! member) with subtree sizes, in a dense arena, and a hash table of arena
//! indexes by member. Knows nothing of `Value`; `zset` holds the operations
//! on sorted-set values, whichever their encoding.

use crate::bytes::CompactBytes;
use std::cmp::Ordering;
use std::hash::BuildHasher;
use std::sync::OnceLock;

const NIL: u32 = u32::MAX;

static HASHER: OnceLock<foldhash::fast::FixedState> = OnceLock::new();

pub(super) fn member_hash(member: &[u8]) -> u64 {
    HASHER
        .get_or_init(|| {
            foldhash::fast::FixedState::with_seed(crate::hashing::process_seed(
                0x2545_f491_4f6c_dd1d,
            ))
        })
        .hash_one(member)
}

/// Redis's order: by score, then by member bytes. Scores are never NaN.
pub(super) fn key_cmp(a_score: f64, a_member: &[u8], b_score: f64, b_member: &[u8]) -> Ordering {
    a_score
        .partial_cmp(&b_score)
        .unwrap_or(Ordering::Equal)
        .then_with(|| a_member.cmp(b_member))
}

#[derive(Clone, Debug)]
pub(super) struct Node {
    pub(super) member: CompactBytes,
    pub(super) score: f64,
    left: u32,
    right: u32,
    /// Nodes in the subtree rooted here, this one included.
    size: u32,
    /// Heap priority: a parent's is never below its children's.
    prio: u32,
}

/// The general form of a sorted set.
#[derive(Clone)]
pub struct ZSetIndex {
    pub(super) nodes: Vec<Node>,
    root: u32,
    by_member: hashbrown::HashTable<u32>,
}

impl std::fmt::Debug for ZSetIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter_from(0, false)).finish()
    }
}

impl PartialEq for ZSetIndex {
    fn eq(&self, other: &ZSetIndex) -> bool {
        self.len() == other.len()
            && self
                .nodes
                .iter()
                .all(|n| other.score(n.member.as_slice()) == Some(n.score))
    }
}

impl Default for ZSetIndex {
    fn default() -> ZSetIndex {
        ZSetIndex::new()
    }
}

impl ZSetIndex {
    pub fn new() -> ZSetIndex {
        ZSetIndex {
            nodes: Vec::new(),
            root: NIL,
            by_member: hashbrown::HashTable::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.by_member.capacity() * (std::mem::size_of::<u32>() + 1)
            + self
                .nodes
                .iter()
                .map(|n| n.member.heap_bytes())
                .sum::<usize>()
    }

    fn size(&self, t: u32) -> u32 {
        if t == NIL {
            0
        } else {
            self.nodes[t as usize].size
        }
    }

    fn fix(&mut self, t: u32) {
        let n = &self.nodes[t as usize];
        let size = 1 + self.size(n.left) + self.size(n.right);
        self.nodes[t as usize].size = size;
    }

    /// The tree's invariants, for tests: every node reached once, sizes
    /// right, in order, and no child above its parent in priority.
    #[cfg(test)]
    pub(super) fn check_tree(&self) {
        fn walk(z: &ZSetIndex, t: u32, seen: &mut Vec<u32>) -> u32 {
            if t == NIL {
                return 0;
            }
            let n = &z.nodes[t as usize];
            for c in [n.left, n.right] {
                if c != NIL {
                    assert!(z.nodes[c as usize].prio <= n.prio, "heap order broken");
                }
            }
            let l = walk(z, n.left, seen);
            seen.push(t);
            let r = walk(z, n.right, seen);
            assert_eq!(n.size, l + r + 1, "subtree size");
            n.size
        }
        let mut seen = Vec::new();
        assert_eq!(walk(self, self.root, &mut seen) as usize, self.nodes.len());
        for w in seen.windows(2) {
            assert!(self.before(w[0], w[1]), "in-order walk out of order");
        }
    }

    fn find(&self, member: &[u8]) -> Option<u32> {
        self.by_member
            .find(member_hash(member), |&i| {
                self.nodes[i as usize].member.as_slice() == member
            })
            .copied()
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.find(member).map(|i| self.nodes[i as usize].score)
    }

    /// Join two trees where every node of `a` orders before every node of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            let m = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = m;
            self.fix(a);
            a
        } else {
            let m = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = m;
            self.fix(b);
            b
        }
    }

    /// Add a member known to be absent.
    pub(super) fn insert_new(&mut self, member: &[u8], score: f64) {
        let h = member_hash(member);
        let idx = self.nodes.len() as u32;
        self.nodes.push(Node {
            member: CompactBytes::new(member),
            score,
            left: NIL,
            right: NIL,
            size: 1,
            prio: (h >> 32) as u32,
        });
        let nodes = &self.nodes;
        self.by_member.insert_unique(h, idx, |&i| {
            member_hash(nodes[i as usize].member.as_slice())
        });
        self.link(idx);
    }

    /// Whether node `a` orders before node `b` (as `key_cmp` orders them:
    /// by score, members breaking ties, the scores' comparison first since
    /// ties are rare).
    #[inline(always)]
    fn before(&self, a: u32, b: u32) -> bool {
        let (a, b) = (&self.nodes[a as usize], &self.nodes[b as usize]);
        if a.score < b.score {
            return true;
        }
        if a.score > b.score {
            return false;
        }
        a.member.as_slice() < b.member.as_slice()
    }

    /// Make `child` the subtree below `parent` on the side `left` says (the
    /// root when `parent` is NIL).
    fn attach(&mut self, parent: u32, left: bool, child: u32) {
        if parent == NIL {
            self.root = child;
        } else if left {
            self.nodes[parent as usize].left = child;
        } else {
            self.nodes[parent as usize].right = child;
        }
    }

    /// Split subtree `t` into the nodes ordering before detached node `idx`
    /// and those after it.
    fn split_around(&mut self, t: u32, idx: u32) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.before(t, idx) {
            let (a, b) = self.split_around(self.nodes[t as usize].right, idx);
            self.nodes[t as usize].right = a;
            self.fix(t);
            (t, b)
        } else {
            let (a, b) = self.split_around(self.nodes[t as usize].left, idx);
            self.nodes[t as usize].left = b;
            self.fix(t);
            (a, t)
        }
    }

    /// Put node `idx` (detached, size 1) into the tree at its place: down
    /// from the root past every node that outranks it in priority, each
    /// subtree on the way growing by one, then it takes the place of the
    /// subtree it reached, split around it into its two children.
    fn link(&mut self, idx: u32) {
        let prio = self.nodes[idx as usize].prio;
        let (mut parent, mut left) = (NIL, false);
        let mut t = self.root;
        while t != NIL && self.nodes[t as usize].prio > prio {
            self.nodes[t as usize].size += 1;
            left = self.before(idx, t);
            parent = t;
            let n = &self.nodes[t as usize];
            t = if left { n.left } else { n.right };
        }
        let (l, r) = self.split_around(t, idx);
        let n = &mut self.nodes[idx as usize];
        n.left = l;
        n.right = r;
        self.fix(idx);
        self.attach(parent, left, idx);
    }

    /// Take node `idx`, which is in the tree, out of it (it stays in the
    /// arena): down to it from the root, each subtree on the way shrinking
    /// by one, then its children merged take its place.
    fn unlink(&mut self, idx: u32) {
        let (mut parent, mut left) = (NIL, false);
        let mut t = self.root;
        while t != idx {
            debug_assert!(t != NIL, "unlinking a node that is not in the tree");
            if t == NIL {
                return;
            }
            self.nodes[t as usize].size -= 1;
            left = self.before(idx, t);
            parent = t;
            let n = &self.nodes[t as usize];
            t = if left { n.left } else { n.right };
        }
        let n = &self.nodes[idx as usize];
        let m = self.merge(n.left, n.right);
        self.attach(parent, left, m);
        let n = &mut self.nodes[idx as usize];
        n.left = NIL;
        n.right = NIL;
        n.size = 1;
    }

    /// Set a member's score, adding it if absent. Returns the previous score.
    pub fn set(&mut self, member: &[u8], score: f64) -> Option<f64> {
        match self.find(member) {
            None => {
                self.insert_new(member, score);
                None
            }
            Some(i) => {
                let old = self.nodes[i as usize].score;
                if old != score || old.to_bits() != score.to_bits() {
                    self.unlink(i);
                    self.nodes[i as usize].score = score;
                    self.link(i);
                }
                Some(old)
            }
        }
    }

    /// Remove a member; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let i = self.find(member)?;
        let score = self.nodes[i as usize].score;
        self.unlink(i);
        self.free(i);
        Some(score)
    }

    /// Drop detached node `i` from the arena, moving the last node into its
    /// slot so the arena stays dense (random picks index it directly).
    fn free(&mut self, i: u32) {
        let h = member_hash(self.nodes[i as usize].member.as_slice());
        if let Ok(e) = self.by_member.find_entry(h, |&x| x == i) {
            e.remove();
        }
        let last = (self.nodes.len() - 1) as u32;
        if i != last {
            let (score, member) = {
                let n = &self.nodes[last as usize];
                (n.score, n.member.clone())
            };
            if self.root == last {
                self.root = i;
            } else {
                let mut t = self.root;
                while t != NIL {
                    let n = &self.nodes[t as usize];
                    let go_left = key_cmp(score, member.as_slice(), n.score, n.member.as_slice())
                        == Ordering::Less;
                    let child = if go_left { n.left } else { n.right };
                    if child == last {
                        let n = &mut self.nodes[t as usize];
                        if go_left {
                            n.left = i;
                        } else {
                            n.right = i;
                        }
                        break;
                    }
                    t = child;
                }
            }
            if let Some(slot) = self
                .by_member
                .find_mut(member_hash(member.as_slice()), |&x| x == last)
            {
                *slot = i;
            }
        }
        self.nodes.swap_remove(i as usize);
        if self.nodes.len() * 4 < self.nodes.capacity() && self.nodes.capacity() > 64 {
            self.nodes.shrink_to(self.nodes.len() * 2);
        }
    }

    /// Ascending rank of a member and its score.
    pub fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        let score = self.score(member)?;
        let mut rank = 0usize;
        let mut t = self.root;
        while t != NIL {
            let n = &self.nodes[t as usize];
            match key_cmp(score, member, n.score, n.member.as_slice()) {
                Ordering::Less => t = n.left,
                Ordering::Greater => {
                    rank += self.size(n.left) as usize + 1;
                    t = n.right;
                }
                Ordering::Equal => return Some((rank + self.size(n.left) as usize, score)),
            }
        }
        None
    }

    /// How many nodes satisfy `below`, which must hold for a prefix of the order.
    pub(super) fn count_prefix(&self, below: impl Fn(&Node) -> bool) -> usize {
        let mut count = 0usize;
        let mut t = self.root;
        while t != NIL {
            let n = &self.nodes[t as usize];
            if below(n) {
                count += self.size(n.left) as usize + 1;
                t = n.right;
            } else {
                t = n.left;
            }
        }
        count
    }

    /// Walk members in order from ascending rank `rank` (forwards), or from
    /// `rank` down to the first (`rev`).
    pub(super) fn iter_from(&self, rank: usize, rev: bool) -> RankIter<'_> {
        let mut stack = Vec::new();
        let mut t = self.root;
        let mut k = rank;
        while t != NIL {
            let n = &self.nodes[t as usize];
            let ls = self.size(n.left) as usize;
            match k.cmp(&ls) {
                Ordering::Less => {
                    if !rev {
                        stack.push(t);
                    }
                    t = n.left;
                }
                Ordering::Equal => {
                    stack.push(t);
                    break;
                }
                Ordering::Greater => {
                    if rev {
                        stack.push(t);
                    }
                    k -= ls + 1;
                    t = n.right;
                }
            }
        }
        RankIter {
            index: self,
            stack,
            rev,
        }
    }

    /// Walk members in ascending order from the first for which `below`
    /// (true for a prefix of the order) is false: one descent, no ranks.
    pub(super) fn iter_after(&self, below: impl Fn(&Node) -> bool) -> RankIter<'_> {
        let mut stack = Vec::new();
        let mut t = self.root;
        while t != NIL {
            let n = &self.nodes[t as usize];
            if below(n) {
                t = n.right;
            } else {
                stack.push(t);
                t = n.left;
            }
        }
        RankIter {
            index: self,
            stack,
            rev: false,
        }
    }

    /// The member at arena slot `i` (an arbitrary but uniform choice for random picks).
    pub(super) fn slot(&self, i: usize) -> Option<(&[u8], f64)> {
        self.nodes.get(i).map(|n| (n.member.as_slice(), n.score))
    }
}

pub(super) struct RankIter<'a> {
    index: &'a ZSetIndex,
    stack: Vec<u32>,
    rev: bool,
}

impl<'a> Iterator for RankIter<'a> {
    type Item = (&'a [u8], f64);
    fn next(&mut self) -> Option<Self::Item> {
        let t = self.stack.pop()?;
        let nodes = &self.index.nodes;
        let n = &nodes[t as usize];
        let mut c = if self.rev { n.left } else { n.right };
        while c != NIL {
            self.stack.push(c);
            let cn = &nodes[c as usize];
            c = if self.rev { cn.right } else { cn.left };
        }
        Some((n.member.as_slice(), n.score))
    }
}

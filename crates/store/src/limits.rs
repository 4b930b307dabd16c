//! The compact-encoding limits every collection type consults: a leaf, so
//! the type modules and `value` can all name it without naming each other.

/// When a small collection leaves its compact form: the `*-max-listpack-*`,
/// `set-max-intset-entries` and `list-max-listpack-size` settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactLimits {
    pub hash_entries: usize,
    pub hash_value: usize,
    pub set_intset_entries: usize,
    pub set_entries: usize,
    pub set_value: usize,
    pub zset_entries: usize,
    pub zset_value: usize,
    /// Positive: elements per node; -1 to -5: 4 KiB to 64 KiB per node.
    pub list_size: i64,
}

impl Default for CompactLimits {
    /// Redis's defaults.
    fn default() -> Self {
        CompactLimits {
            hash_entries: 512,
            hash_value: 64,
            set_intset_entries: 512,
            set_entries: 128,
            set_value: 64,
            zset_entries: 128,
            zset_value: 64,
            list_size: -2,
        }
    }
}

//! Consumer groups of a stream: each group's last delivered id, its pending
//! entries list (PEL) and its consumers.
//!
//! Fields are public so that loaders (RDB, RESTORE) can rebuild a group
//! exactly as it was written; the operations the commands need live here too.

use std::collections::{BTreeMap, BTreeSet};

use super::id::StreamId;

/// A stream's consumer groups, by name in byte order (the order XINFO GROUPS lists).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Groups {
    pub groups: BTreeMap<Vec<u8>, Group>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Group {
    /// The last id delivered to any consumer of the group.
    pub last_id: StreamId,
    /// How many entries the group has read (Redis 7's `entries-read`); `None` when unknown.
    pub entries_read: Option<u64>,
    /// Delivered but unacknowledged entries, in id order.
    pub pel: BTreeMap<StreamId, Pending>,
    pub consumers: BTreeMap<Vec<u8>, Consumer>,
}

/// One entry of a group's PEL.
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    /// Name of the consumer that owns the entry.
    pub consumer: Vec<u8>,
    /// Unix time in milliseconds of the last delivery.
    pub delivery_time: i64,
    pub delivery_count: u64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Consumer {
    /// Unix time in milliseconds of the consumer's last attempted interaction.
    pub seen_time: i64,
    /// Unix time in milliseconds of the consumer's last successful interaction.
    pub active_time: i64,
    /// The ids of the group's PEL that this consumer owns.
    pub pending: BTreeSet<StreamId>,
}

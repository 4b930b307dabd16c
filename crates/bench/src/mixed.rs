//! memtier-like mixed workloads.

//! RDB.

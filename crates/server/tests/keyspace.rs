//! The tests of `keel-keyspace`'s commands, run on the engine the server
//! assembles: a test of one family's command sets up keys with another's, and
//! no family depends on another to do it.

#[path = "keyspace/dump.rs"]
mod dump;
#[path = "keyspace/keys.rs"]
mod keys;

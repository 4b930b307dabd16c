//! The tests of `keel-collections`'s commands, run on the engine the server
//! assembles: a test of one family's command sets up keys with another's, and
//! no family depends on another to do it.

#[path = "collections/blocking.rs"]
mod blocking;
#[path = "collections/hashes.rs"]
mod hashes;
#[path = "collections/lists.rs"]
mod lists;
#[path = "collections/sets.rs"]
mod sets;
#[path = "collections/sort.rs"]
mod sort;
#[path = "collections/zsets.rs"]
mod zsets;

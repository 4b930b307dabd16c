//! The tests of `keel-roaring`'s commands, run on the engine the server
//! assembles: a test of one family's command sets up keys with another's, and
//! no family depends on another to do it.

#[path = "roaring/index.rs"]
mod index;
#[path = "roaring/roaring.rs"]
mod roaring;

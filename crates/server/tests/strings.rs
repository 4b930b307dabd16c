//! The tests of `keel-strings`'s commands, run on the engine the server
//! assembles: a test of one family's command sets up keys with another's, and
//! no family depends on another to do it.

#[path = "strings/bitmap.rs"]
mod bitmap;
#[path = "strings/hll.rs"]
mod hll;
#[path = "strings/strings.rs"]
mod strings;

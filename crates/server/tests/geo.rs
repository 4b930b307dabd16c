//! The tests of `keel-geo`'s commands, run on the engine the server
//! assembles: a test of one family's command sets up keys with another's, and
//! no family depends on another to do it.

#[path = "geo/geo.rs"]
mod geo;

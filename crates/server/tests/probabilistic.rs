//! The tests of `keel-probabilistic`'s commands, run on the engine the server
//! assembles: a test of one family's command sets up keys with another's, and
//! no family depends on another to do it.

#[path = "probabilistic/bloom.rs"]
mod bloom;
#[path = "probabilistic/cms.rs"]
mod cms;
#[path = "probabilistic/cuckoo.rs"]
mod cuckoo;

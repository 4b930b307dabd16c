//! The engine as the server assembles it: the kernel's behaviour under real
//! commands (`kernel/`) and each command family's tests (`<family>/`). They
//! need the full command table, which only the server builds, and they share
//! one test binary so that a change to one family relinks one binary, not one
//! per family.

// Each family's tests sit under its crate's name and then its module's
// (`strings::strings`), as the code they test does.
#![allow(clippy::module_inception)]

mod kernel {
    mod acl_rules;
    mod blocking;
    mod evict;
    mod exec;
    mod expire;
    mod monitor;
    mod notify;
    mod pause;
    mod pubsub;
    mod session;
    mod table;
    mod tracking;
}

mod keyspace {
    mod dump;
    mod keys;
}

mod strings {
    mod bitmap;
    mod hll;
    mod strings;
}

mod collections {
    mod blocking;
    mod hashes;
    mod lists;
    mod sets;
    mod sort;
    mod zsets;
}

mod geo {
    mod geo;
}

mod streams {
    mod streams;
    mod xgroups;
}

mod probabilistic {
    mod bloom;
    mod cms;
    mod cuckoo;
}

mod roaring {
    mod index;
    mod roaring;
}

mod admin {
    mod connection;
    mod introspection;
    mod operator;
    mod pubsub;
    mod server;
    mod transactions;
}

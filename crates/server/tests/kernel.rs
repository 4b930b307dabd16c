//! The kernel's behaviour under the commands of every family: these tests need
//! a full command table, which only the server assembles, so they live here
//! rather than in the kernel crate, which builds and tests without families.

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

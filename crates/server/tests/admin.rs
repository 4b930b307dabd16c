//! The tests of `keel-admin`'s commands, run on the engine the server
//! assembles: a test of one family's command sets up keys with another's, and
//! no family depends on another to do it.

#[path = "admin/connection.rs"]
mod connection;
#[path = "admin/introspection.rs"]
mod introspection;
#[path = "admin/operator.rs"]
mod operator;
#[path = "admin/pubsub.rs"]
mod pubsub;
#[path = "admin/server.rs"]
mod server;
#[path = "admin/transactions.rs"]
mod transactions;

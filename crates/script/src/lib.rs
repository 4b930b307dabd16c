//! The Lua script host. The engine declares what a host must provide
//! (`keel_engine::scripting::ScriptHost`); this crate provides it with Lua 5.1.

pub mod libs;

//! The Lua script host. The engine declares what a host must provide
//! (`keel_engine::scripting::ScriptHost`); this crate provides it with Lua 5.1:
//! one VM per thread, Redis's `redis` API, its conversions and its libraries.

pub mod api;
pub mod convert;
pub mod host;
pub mod libs;

pub use host::LuaHost;

//! The Lua script host. The engine declares what a host must provide
//! (`keel_engine::scripting::ScriptHost`); this crate provides it with Lua 5.1:
//! one VM per thread, Redis's `redis` API, its conversions and its libraries.
//!
//! Must not: be named by the kernel or a family, which see only the
//! `ScriptHost` trait; its calls into Redis commands go back through the one
//! execution path.

pub mod api;
pub mod convert;
mod current;
pub mod host;
pub mod libs;

pub use host::LuaHost;

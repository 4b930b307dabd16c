//! Libraries Redis preloads into its Lua VM, written for Keel: `cjson`,
//! `cmsgpack`, `bit` and `struct`.

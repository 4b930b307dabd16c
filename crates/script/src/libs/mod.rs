//! Libraries Redis preloads into its Lua VM, written for Keel: `cjson`,
//! `cmsgpack`, `bit` and `struct`.

/// Install the libraries (filled in by each library's module).
pub fn open_all(_lua: &mlua::Lua) -> mlua::Result<()> {
    Ok(())
}

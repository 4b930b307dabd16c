//! stub
use super::Installer;
use mlua::Table;

pub(super) fn open(lib: &Installer<'_>) -> mlua::Result<Table> {
    lib.lua().create_table()
}

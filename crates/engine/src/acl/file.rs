//! The ACL file (`aclfile`): parsed into users at start-up and by ACL LOAD,
//! all or nothing. Its format is one `user <name> <rule> ...` line per user,
//! the rules those of ACL SETUSER; `#` starts a comment line.

use crate::acl::rules::UserState;
use bytes::Bytes;
use std::collections::BTreeMap;

/// Parse an ACL file's text into users; `Err` is Redis's message naming the
/// file and line.
pub fn parse_acl_file(
    engine: &crate::kernel::Engine,
    path: &str,
    text: &str,
) -> Result<BTreeMap<String, UserState>, String> {
    let info = engine.acl.info();
    let all = engine.config.get("acl-pubsub-default") == "allchannels";
    let mut users: BTreeMap<String, UserState> = BTreeMap::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() != Some(&"user") || words.len() < 2 {
            errors.push(format!(
                "{path}:{}: should start with user keyword. ",
                i + 1
            ));
            continue;
        }
        let name = words[1];
        if users.contains_key(name) {
            errors.push(format!("{path}:{}: Duplicate user '{name}' found. ", i + 1));
            continue;
        }
        let ops: Vec<Bytes> = words[2..]
            .iter()
            .map(|w| Bytes::copy_from_slice(w.as_bytes()))
            .collect();
        let mut state = UserState::new(info.cats.len(), all);
        match crate::acl::rules::apply_all(&mut state, &ops, info, all) {
            Ok(()) => {
                users.insert(name.to_string(), state);
            }
            Err(e) => errors.push(format!(
                "{path}:{}: {}. ",
                i + 1,
                e.strip_prefix("ERR ").unwrap_or(&e)
            )),
        }
    }
    if !errors.is_empty() {
        return Err(errors.concat().trim_end().to_string());
    }
    if !users.contains_key("default") {
        let mut d = UserState::new(info.cats.len(), true);
        d.enabled = true;
        d.nopass = true;
        d.root = crate::acl::rules::Selector::everything(info.cats.len());
        users.insert("default".into(), d);
    }
    Ok(users)
}

/// Load the ACL file at `path`, replacing every user (all or nothing).
pub fn load_file(engine: &crate::kernel::Engine, path: &str) -> Result<(), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("Error loading ACLs, opening file '{path}': {e}"))?;
    let users = parse_acl_file(engine, path, &text)?;
    engine.acl.replace_all(users);
    Ok(())
}

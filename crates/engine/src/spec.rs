//! How a command is declared: one `CommandSpec` per command, next to its handler.
//!
//! Every consumer reads these specs: dispatch, arity errors, key extraction for
//! shard locking, MULTI queueing, effect logging, and the COMMAND family.

use crate::declare::CATEGORY_ORDER;
pub use crate::declare::{Flags, Group, KeyFinder, Keys};
pub use crate::kernel::{CommandSpec, Handler};

impl CommandSpec {
    /// A keyless server-group subcommand of O(1) complexity, the shape most
    /// subcommands of administrative commands (ACL, SLOWLOG, LATENCY) share.
    pub const fn admin_subcommand(
        name: &'static str,
        arity: i32,
        flags: Flags,
        summary: &'static str,
        since: &'static str,
        run: Handler,
    ) -> CommandSpec {
        CommandSpec {
            name,
            group: Group::Server,
            arity,
            flags,
            keys: Keys::None,
            summary,
            since,
            complexity: "O(1)",
            subcommands: &[],
            run,
        }
    }

    pub fn arity_ok(&self, argc: usize) -> bool {
        let argc = argc as i64;
        let arity = i64::from(self.arity);
        if arity >= 0 {
            argc == arity
        } else {
            argc >= -arity
        }
    }

    pub fn is_write(&self) -> bool {
        self.flags.contains(Flags::WRITE)
    }
}

/// The ACL categories of a command: its group's category plus those implied by
/// its flags, as Redis derives them. Containers are only `@slow`, like Redis's.
pub fn acl_categories(spec: &CommandSpec) -> Vec<&'static str> {
    // Redis's own assignment where Redis has the command.
    if let Some(cats) = crate::aclcats::for_command(&spec.name.to_ascii_lowercase()) {
        return cats.to_vec();
    }
    if !spec.subcommands.is_empty() {
        return vec!["@slow"];
    }
    let f = spec.flags;
    let mut cats: Vec<&'static str> = Vec::new();
    if spec.group == Group::Server {
        // Server commands that read or write data (DBSIZE, FLUSHDB) are keyspace
        // commands; the rest are administrative, which the ADMIN flag says.
        if f.contains(Flags::WRITE) || f.contains(Flags::READONLY) {
            cats.push("@keyspace");
        }
    } else if spec.group != Group::Pubsub {
        // Pub/sub commands are @pubsub by their flag (PUBSUB HELP is not).
        cats.push(spec.group.acl_category());
    }
    for (flag, cat) in [
        (Flags::WRITE, "@write"),
        (Flags::READONLY, "@read"),
        (Flags::PUBSUB, "@pubsub"),
        (Flags::BLOCKING, "@blocking"),
        (Flags::ADMIN, "@admin"),
        (Flags::ADMIN, "@dangerous"),
    ] {
        // As in Redis, a read-only scripting command (EVAL_RO) is not @read.
        if f.contains(flag) && !(cat == "@read" && spec.group == Group::Scripting) {
            cats.push(cat);
        }
    }
    cats.push(if f.contains(Flags::FAST) {
        "@fast"
    } else {
        "@slow"
    });
    let rank = |c: &&str| {
        CATEGORY_ORDER
            .iter()
            .position(|o| o == c)
            .unwrap_or(CATEGORY_ORDER.len())
    };
    cats.sort_by_key(rank);
    cats.dedup();
    cats
}

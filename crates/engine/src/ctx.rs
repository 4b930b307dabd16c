//! `Ctx`: what a handler sees while it runs. It owns the shard guards the executor
//! took for the command, so a handler can reach exactly the keys it declared.

use crate::error::CmdError;
pub use crate::guards::Guards;
pub use crate::kernel::{Ctx, Upgrade};
use bytes::{Bytes, BytesMut};
use keel_resp::Protocol;
use keel_store::{Shard, Table};

/// The reply `data` (a bulk string, or nil when absent): a string is encoded
/// straight into `out` when the handler took the connection's output (and
/// the reply is then empty: it is sent already), copied into a frame when not.
#[inline]
pub fn bulk_frame(out: Option<&mut BytesMut>, data: Option<&[u8]>) -> keel_resp::Frame {
    match (out, data) {
        (Some(buf), Some(data)) => {
            keel_resp::put_bulk(buf, data);
            keel_resp::Frame::Encoded(Bytes::new())
        }
        (_, data) => data.map_or(keel_resp::Frame::Null, |d| {
            keel_resp::Frame::Bulk(Bytes::copy_from_slice(d))
        }),
    }
}

impl<'a> Ctx<'a> {
    /// Take the connection's output for a handler that reads a value and
    /// replies with it (see [`bulk_frame`]); the handler gives it back with
    /// [`Ctx::give_out`]. `None` inside EXEC and scripts, and whenever the
    /// reply is not sent as it is.
    #[inline]
    pub fn take_out(&mut self) -> Option<&'a mut BytesMut> {
        if self.nested == 0 {
            self.out.take()
        } else {
            None
        }
    }

    #[inline]
    pub fn give_out(&mut self, out: Option<&'a mut BytesMut>) {
        if out.is_some() {
            self.out = out;
        }
    }

    #[inline]
    pub fn now_ms(&self) -> u64 {
        self.tick.now_ms()
    }

    /// The selected database.
    #[inline]
    pub fn db(&self) -> usize {
        self.session.db
    }

    #[inline]
    pub fn proto(&self) -> Protocol {
        self.session.proto
    }

    #[inline]
    pub fn resp3(&self) -> bool {
        self.session.proto == Protocol::Resp3
    }

    /// The value at `key` for a read command: `None` when the key is absent,
    /// WRONGTYPE when it holds another type than `ty`. A read refreshes the
    /// key's access clock unless the client asked for CLIENT NO-TOUCH.
    pub fn read_value(
        &mut self,
        key: &[u8],
        ty: keel_store::ValueType,
    ) -> Result<Option<&keel_store::Value>, CmdError> {
        let now = self.now_ms();
        let no_touch = self.session.no_touch;
        // One hash finds the shard and the key in its table.
        let hash = keel_store::keyspace::hash_key(key);
        if self.guards.shared() {
            return self.read_shared(key, hash, ty, now, !no_touch);
        }
        let table = self.table_of(self.session.db, hash)?;
        let entry = if no_touch {
            table.peek_hashed(key, hash, now)
        } else {
            table.get_hashed(key, hash, now)
        };
        match entry {
            None => Ok(None),
            Some(e) if e.value.value_type() == ty => Ok(Some(&e.value)),
            Some(_) => Err(CmdError::WrongType),
        }
    }

    /// [`Ctx::read_value`] holding the shard shared.
    fn read_shared(
        &mut self,
        key: &[u8],
        hash: u64,
        ty: keel_store::ValueType,
        now: u64,
        touch: bool,
    ) -> Result<Option<&keel_store::Value>, CmdError> {
        let db = self.session.db;
        let shard = self.engine.keyspace.shard_of_hash(hash);
        let Some(s) = self.guards.find_ref(shard) else {
            return Err(CmdError::Internal(format!(
                "key not declared by the command spec (shard {shard})"
            )));
        };
        if db >= s.databases() {
            return Err(CmdError::DbIndexOutOfRange);
        }
        match s.db_ref(db).read_hashed(key, hash, now, touch) {
            keel_store::Read::Missing => Ok(None),
            keel_store::Read::Expired => {
                self.must_write.get_or_insert(Upgrade::Once);
                Ok(None)
            }
            keel_store::Read::Live(e) if e.value.value_type() == ty => Ok(Some(&e.value)),
            keel_store::Read::Live(_) => Err(CmdError::WrongType),
        }
    }

    /// The command holds its shard shared but needs it exclusively: note it,
    /// and tell the caller, which must then change nothing.
    #[cold]
    pub(crate) fn upgrade(&mut self) -> CmdError {
        self.must_write = Some(Upgrade::Always);
        CmdError::Internal("a read-only command asked to change its shard".into())
    }

    /// When small collections leave their compact encodings (CONFIG).
    pub fn limits(&self) -> keel_store::CompactLimits {
        self.engine.config.compact_limits()
    }

    /// The table holding `key` in the selected database.
    #[inline]
    pub fn table(&mut self, key: &[u8]) -> Result<&mut Table, CmdError> {
        let db = self.session.db;
        self.table_in(db, key)
    }

    /// The table holding `key` in database `db`.
    #[inline]
    pub fn table_in(&mut self, db: usize, key: &[u8]) -> Result<&mut Table, CmdError> {
        self.table_of(db, keel_store::keyspace::hash_key(key))
    }

    /// The table in database `db` holding the key whose hash is `hash`.
    fn table_of(&mut self, db: usize, hash: u64) -> Result<&mut Table, CmdError> {
        let shard = self.engine.keyspace.shard_of_hash(hash);
        if self.guards.shared() {
            return Err(self.upgrade());
        }
        match self.guards.find(shard) {
            Some(s) if db < s.databases() => Ok(s.db(db)),
            Some(_) => Err(CmdError::DbIndexOutOfRange),
            // A handler touched a key it did not declare: a bug in its spec.
            None => Err(CmdError::Internal(format!(
                "key not declared by the command spec (shard {shard})"
            ))),
        }
    }

    /// Run `f` on shard `idx` (SHARD_WALK commands). Outside a transaction the
    /// command holds no locks, so taking this one alone cannot deadlock; inside
    /// EXEC every shard is already held.
    pub fn with_shard<R>(
        &mut self,
        idx: usize,
        f: impl FnOnce(&mut Shard) -> R,
    ) -> Result<R, CmdError> {
        if self.guards.shared() {
            return Err(self.upgrade());
        }
        if let Some(shard) = self.guards.find(idx) {
            return Ok(f(shard));
        }
        if !matches!(self.guards, Guards::None) {
            return Err(CmdError::Internal(format!(
                "shard {idx} walked while other locks are held"
            )));
        }
        let mut guard = self.engine.keyspace.lock(idx);
        Ok(f(&mut guard))
    }

    /// Every locked shard (all of them for ALL_SHARDS commands), in index order.
    pub fn for_each_shard(&mut self, f: impl FnMut(&mut Shard)) {
        if self.guards.shared() {
            self.upgrade();
            return;
        }
        self.guards.for_each(f)
    }

    /// Record `n` changes to the dataset.
    #[inline]
    pub fn dirty(&mut self, n: u64) {
        if self.guards.shared() {
            self.upgrade();
            return;
        }
        self.dirty += n;
    }

    /// Log `argv` as this command's effect instead of the command as sent. Only
    /// needed for commands whose replay would not be deterministic.
    pub fn rewrite(&mut self, argv: Vec<Bytes>) {
        self.rewrite = Some(argv);
    }

    /// Log an additional effect now, in the given database.
    pub fn log_effect(&mut self, db: usize, argv: Vec<Bytes>) {
        if self.guards.shared() {
            self.upgrade();
            return;
        }
        if self.engine.logging() {
            self.effects.push((db, argv));
        }
    }

    /// Name a key this command changed, in database `db`. A write command whose
    /// declared keys include keys it only reads (a COPY source, BITOP sources)
    /// or that live in another database calls this for each key it changed, so
    /// only those keys' WATCHes are invalidated, as in Redis.
    #[inline]
    pub fn modified(&mut self, db: usize, key: &[u8]) {
        let list = self.modified.get_or_insert_with(Vec::new);
        if self.engine.watches.any() || self.engine.tracking.active() {
            list.push((db, Bytes::copy_from_slice(key)));
        }
    }

    /// Count a keyspace hit or miss (INFO stats).
    #[inline]
    pub fn hit(&mut self, found: bool) {
        if found {
            self.hits += 1;
        } else {
            self.misses += 1;
        }
    }

    /// [`Ctx::hit`] for a read of `key`; a miss also publishes `keymiss`
    /// (class `m`), as Redis's read lookups do.
    #[inline]
    pub fn hit_key(&mut self, key: &[u8], found: bool) {
        self.hit(found);
        if !found {
            self.notify(crate::notify::Class::KEY_MISS, "keymiss", key);
        }
    }

    #[inline]
    pub fn random(&self) -> u64 {
        self.engine.rng.next_u64()
    }

    /// Run another command with the locks this one holds (EXEC, scripts). The
    /// nested command's keys must lie in shards already locked.
    pub fn call(&mut self, argv: &[Bytes]) -> keel_resp::Frame {
        crate::exec::call_nested(self, argv)
    }
}

impl Ctx<'_> {
    /// Publish the keyspace event `event` of `class` for `key` in the selected
    /// database (see [`crate::notify`]); nothing but one atomic load when the
    /// class is off.
    #[inline]
    pub fn notify(&mut self, class: crate::notify::Class, event: &str, key: &[u8]) {
        let db = self.session.db;
        self.notify_db(class, event, db, key);
    }

    /// [`Ctx::notify`] for a key of database `db` (MOVE, COPY ... DB).
    #[inline]
    pub fn notify_db(&mut self, class: crate::notify::Class, event: &str, db: usize, key: &[u8]) {
        if self.engine.config.ops.notify.enabled(class) {
            if self.guards.shared() {
                self.must_write.get_or_insert(Upgrade::Once);
                return;
            }
            // Keys found expired while looking this one up were removed
            // before the event, as in Redis: their `expired` goes first.
            let at = self.effects.len();
            crate::exec::drain_expired(self, at);
            // So are the keys the command created so far (`new`).
            crate::notify::publish_created(self, true);
            crate::notify::notify(self.engine, class, event, db, key);
        }
    }

    /// A write made `key` in `db` non-empty: serve the clients blocked on it
    /// once this command finishes. Writes of declared keys are already marked by
    /// the executor; this is for keys a command reaches otherwise.
    pub fn signal_ready(&mut self, _db: usize, key: &[u8]) {
        if self.guards.shared() {
            self.upgrade();
            return;
        }
        if self.engine.blocking.any() {
            self.ready.push(Bytes::copy_from_slice(key));
        }
    }

    /// The key whose write is serving this blocked client's re-run, if this
    /// is one.
    pub fn serving_key(&self) -> Option<&Bytes> {
        self.session.serving.as_ref().map(|s| &s.key)
    }

    /// This command's write serves no blocked client (see `wakes_none`).
    pub fn wake_no_waiter(&mut self) {
        self.wakes_none = true;
    }

    /// Whether a blocking command may block here: not inside EXEC or a script,
    /// and not while serving an already blocked client.
    pub fn may_block(&self) -> bool {
        self.nested == 0 && self.session.serving.is_none()
    }
}

//! Scripts and functions, without a scripting language.
//!
//! The engine owns what every script host shares: the script cache (EVAL
//! bodies by SHA-1), the function libraries, which scripts have been seen to
//! touch keys they did not declare, and the running scripts that passed
//! `busy-reply-threshold`. A host (the Lua one lives in `keel-script`) compiles
//! and runs code; every command a script calls comes back through
//! [`ScriptRun::call`], which runs it on the one execution path with the
//! script's locks. The engine builds and tests without any host.

pub mod functions;
pub(crate) mod locks;
mod run;

pub use functions::{FunctionInfo, Library, LibraryMeta, ScriptFlags};
pub use run::{Running, ScriptRun};

use bytes::Bytes;
use hashbrown::{HashMap, HashSet};
use keel_resp::Frame;
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// A script's id: the SHA-1 of its body.
pub type Sha = [u8; 20];

/// What a scripting language must provide. Errors are whole reply texts
/// (`ERR Error compiling script ...`).
pub trait ScriptHost: Send + Sync {
    /// Compile `body` in this thread's VM and keep it under `sha`.
    fn compile(&self, sha: &Sha, body: &Bytes) -> Result<(), Frame>;
    /// Run the script `sha`, compiled from `body`, with KEYS and ARGV.
    fn eval(
        &self,
        run: &mut ScriptRun<'_, '_>,
        sha: &Sha,
        body: &Bytes,
        keys: &[Bytes],
        args: &[Bytes],
    ) -> Frame;
    /// Run a library's code apart from any data and report the functions it
    /// registers (FUNCTION LOAD, FUNCTION RESTORE, loading a file).
    fn load_library(&self, meta: &LibraryMeta, code: &Bytes) -> Result<Vec<FunctionInfo>, String>;
    /// Call `function` of `library`.
    fn fcall(
        &self,
        run: &mut ScriptRun<'_, '_>,
        library: &Arc<Library>,
        function: &str,
        keys: &[Bytes],
        args: &[Bytes],
    ) -> Frame;
    /// The body of script `sha` if this thread's VM has it compiled for
    /// `generation`: EVALSHA's lookup without touching shared state.
    fn cached_body(&self, _sha: &Sha, _generation: u64) -> Option<Bytes> {
        None
    }
    /// Bytes the calling thread's VM holds (INFO `used_memory_lua`).
    fn vm_memory(&self) -> u64;
}

/// The shared scripting state of an engine.
#[derive(Default)]
pub struct Scripting {
    host: std::sync::OnceLock<Arc<dyn ScriptHost>>,
    /// EVAL bodies by SHA-1 (SCRIPT LOAD, EVAL), for EVALSHA.
    scripts: RwLock<HashMap<Sha, Bytes>>,
    /// Bumped by SCRIPT FLUSH and any change of the libraries: each VM drops
    /// what it compiled when it sees a new value.
    generation: AtomicU64,
    pub functions: RwLock<functions::Registry>,
    /// Scripts (by [`learn_key`]) that touched an undeclared key whose shard
    /// was busy: they take every shard from the start from now on.
    pub learned: RwLock<HashSet<Bytes>>,
    pub learned_count: AtomicUsize,
    /// Scripts waiting for a shard out of order after writing (see `locks`).
    pub(crate) escalating: AtomicUsize,
    pub(crate) token: Mutex<()>,
    /// Scripts running for longer than `busy-reply-threshold`.
    pub busy: Arc<Busy>,
    /// Set by SHUTDOWN NOSAVE while a script is busy: the script stops.
    pub shutdown: Arc<std::sync::atomic::AtomicBool>,
}

/// Scripts past `busy-reply-threshold`: while any is, other clients get -BUSY.
#[derive(Default)]
pub struct Busy {
    count: AtomicUsize,
    list: Mutex<Vec<Arc<Running>>>,
}

impl Busy {
    #[inline]
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    pub(crate) fn enter(&self, r: &Arc<Running>) {
        let mut list = self.list.lock();
        list.push(r.clone());
        self.count.store(list.len(), Ordering::SeqCst);
    }

    pub(crate) fn leave(&self, r: &Running) {
        let mut list = self.list.lock();
        list.retain(|x| !std::ptr::eq(&**x, r));
        self.count.store(list.len(), Ordering::SeqCst);
    }

    /// The scripts running now past the threshold.
    pub fn running(&self) -> Vec<Arc<Running>> {
        self.list.lock().clone()
    }

    /// The -BUSY text for other clients: it names the KILL command that fits.
    pub fn refusal(&self) -> &'static str {
        let eval = self.list.lock().first().is_none_or(|r| r.is_eval);
        if eval {
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
        } else {
            "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
        }
    }
}

/// Lowercase hexadecimal SHA-1, as Redis names scripts.
pub fn sha1_hex(data: &[u8]) -> String {
    sha1_smol::Sha1::from(data).digest().to_string()
}

pub fn sha1(data: &[u8]) -> Sha {
    sha1_smol::Sha1::from(data).digest().bytes()
}

/// Parse a 40-digit hexadecimal id, in either case.
pub fn parse_sha(hex: &[u8]) -> Option<Sha> {
    if hex.len() != 40 {
        return None;
    }
    let mut out = [0u8; 20];
    for (i, pair) in hex.chunks(2).enumerate() {
        let d = |c: u8| (c as char).to_digit(16);
        out[i] = (d(pair[0])? * 16 + d(pair[1])?) as u8;
    }
    Some(out)
}

pub fn hex(sha: &Sha) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(40);
    for b in sha {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

/// What the learned set calls a script: its sha for EVAL, `fn:` and its name
/// for a function.
pub fn learn_key_eval(sha: &Sha) -> Bytes {
    Bytes::from(hex(sha))
}

pub fn learn_key_function(name: &[u8]) -> Bytes {
    let mut v = b"fn:".to_vec();
    v.extend_from_slice(name);
    Bytes::from(v)
}

impl Scripting {
    /// Install the language host (once, at start-up).
    pub fn install(&self, host: Arc<dyn ScriptHost>) {
        let _ = self.host.set(host);
    }

    pub fn host(&self) -> Option<&Arc<dyn ScriptHost>> {
        self.host.get()
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    pub fn bump_generation(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    pub fn script(&self, sha: &Sha) -> Option<Bytes> {
        self.scripts.read().get(sha).cloned()
    }

    pub fn has_script(&self, sha: &Sha) -> bool {
        self.scripts.read().contains_key(sha)
    }

    pub fn remember(&self, sha: Sha, body: Bytes) {
        self.scripts.write().entry(sha).or_insert(body);
    }

    pub fn script_count(&self) -> usize {
        self.scripts.read().len()
    }

    /// Bytes of cached script bodies (INFO `used_memory_scripts_eval`).
    pub fn script_bytes(&self) -> u64 {
        self.scripts
            .read()
            .values()
            .map(|b| b.len() as u64 + 20)
            .sum()
    }

    /// SCRIPT FLUSH.
    pub fn flush_scripts(&self) {
        self.scripts.write().clear();
        self.bump_generation();
    }

    /// Whether any script has been learned (one relaxed load).
    #[inline]
    pub fn any_learned(&self) -> bool {
        self.learned_count.load(Ordering::Relaxed) > 0
    }

    pub fn learned(&self, key: &[u8]) -> bool {
        self.learned_count.load(Ordering::Relaxed) > 0 && self.learned.read().contains(key)
    }

    pub fn learn(&self, key: Bytes) {
        let mut set = self.learned.write();
        set.insert(key);
        self.learned_count.store(set.len(), Ordering::Relaxed);
    }

    /// Check a library's code with the host and build it (FUNCTION LOAD and
    /// RESTORE, loading files). Errors are whole reply texts.
    pub fn build_library(&self, code: Bytes) -> Result<Library, String> {
        let meta = functions::parse_library_header(&code).map_err(|e| format!("ERR {e}"))?;
        let Some(host) = self.host() else {
            return Err("ERR Lua scripting is not available: no script host is installed".into());
        };
        let fns: Vec<FunctionInfo> = host
            .load_library(&meta, &code)
            .map_err(|e| format!("ERR {e}"))?;
        Ok(Library::new(meta, code, fns))
    }
}

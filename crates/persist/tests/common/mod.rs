//! Helpers the persist integration tests share.

#![allow(dead_code)]

/// Reads a reference file from `shared/` beside the checkout, or from `$KEEL_SHARED_DIR` when a
/// checkout lives elsewhere.
pub fn load(path: &str) -> Option<Vec<u8>> {
    let fallback = std::env::var_os("KEEL_SHARED_DIR").and_then(|dir| {
        let name = std::path::Path::new(path).file_name()?.to_owned();
        std::fs::read(
            std::path::Path::new(&dir)
                .join("reference/files")
                .join(name),
        )
        .ok()
    });
    match std::fs::read(path).or_else(|e| fallback.ok_or(e)) {
        Ok(b) => Some(b),
        // CI runs beside shared/: there a missing file is a failure, not a skip.
        Err(e) if std::env::var_os("CI").is_some() => {
            panic!("reference file {path} is not available under CI ({e})")
        }
        Err(e) => {
            eprintln!("SKIPPED: reference file {path} is not available ({e})");
            None
        }
    }
}

/// A reference file's path under `shared/reference/files` beside the checkout.
pub fn reference(name: &str) -> String {
    format!(
        "{}/../../../shared/reference/files/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

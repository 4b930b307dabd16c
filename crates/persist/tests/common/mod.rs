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

use keel_store::Value;
use serde_json::Value as Json;

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The listing's value for a key, in the listing's own form (hex, sorted where unordered).
pub fn listed(v: &Value) -> Json {
    let h = |b: &[u8]| Json::String(hex(b));
    match v.value_type() {
        keel_store::ValueType::String => h(v.as_str().expect("string").as_slice()),
        keel_store::ValueType::List => {
            Json::Array(keel_store::list::to_vec(v).iter().map(|e| h(e)).collect())
        }
        keel_store::ValueType::Set => {
            let mut m = v.set_members();
            m.sort();
            Json::Array(m.iter().map(|e| h(e)).collect())
        }
        keel_store::ValueType::Hash => {
            let mut pairs = Vec::new();
            keel_store::hash::HashRef::of(v)
                .expect("hash")
                .for_each(|f, x| pairs.push((f.to_vec(), x.to_vec())));
            pairs.sort();
            Json::Array(
                pairs
                    .iter()
                    .map(|(f, x)| Json::Array(vec![h(f), h(x)]))
                    .collect(),
            )
        }
        keel_store::ValueType::ZSet => Json::Array(
            keel_store::zset::to_vec(v)
                .iter()
                .map(|(m, s)| Json::Array(vec![h(m), serde_json::json!(s)]))
                .collect(),
        ),
        keel_store::ValueType::Bloom => panic!("no Bloom filters here"),
        keel_store::ValueType::Roaring | keel_store::ValueType::Roaring64 => {
            panic!("no Roaring bitmaps here")
        }
        keel_store::ValueType::Index => panic!("no bitmap indexes here"),
        keel_store::ValueType::Stream => {
            let Value::Stream(s) = v else {
                panic!("stream")
            };
            use keel_store::stream::StreamId;
            Json::Array(
                s.range(StreamId::MIN, StreamId::MAX)
                    .map(|e| {
                        let mut item = vec![Json::String(e.id.to_string())];
                        item.extend(e.fields().flat_map(|(f, x)| [h(f), h(x)]));
                        Json::Array(item)
                    })
                    .collect(),
            )
        }
    }
}

pub fn same_value(got: &Json, want: &Json) -> bool {
    match (got, want) {
        (Json::Array(a), Json::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
        }
        (Json::Number(a), w) => {
            let ws = match w {
                Json::String(t) => t.parse::<f64>().ok(),
                n => n.as_f64(),
            };
            a.as_f64() == ws
        }
        (a, b) => a == b,
    }
}

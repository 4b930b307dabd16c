//! The HTTP API:
//!
//! - `POST /v1/search/{backend}/prices`: one request object; 200 with the
//!   price `{"id","spec","value","currency"}`, 404 `unable find price` when
//!   no price (or several and no default) qualifies, 400 for a body that is
//!   not a request.
//! - `POST /v5/search/{backend}/bulk/prices`: an array of request objects each
//!   with an `id` (0..65535); 200 with `[{"price":{..}|null,"id":n}, ...]` in
//!   request order, 400 `Unable decode body` for anything but such an array.
//! - `GET /stats`: what was loaded and the memory it took, as JSON.
//!
//! `{backend}` is `map`, `bitmap` or `keel`; any other is 404.

use crate::search::{BitmapSearch, FindPriceRequest, FindPriceRequestBulk, KeelSearch, MapSearch};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::sync::Arc;

pub const NOT_FOUND: &str = "unable find price";

/// The largest body taken: room for a bulk request of all 65,536 ids.
pub const MAX_BODY: usize = 32 << 20;

/// Everything the handlers share.
#[derive(Debug)]
pub struct AppState {
    pub map: MapSearch,
    pub bitmap: BitmapSearch,
    pub keel: Option<KeelSearch>,
    /// The `/stats` body.
    pub stats: String,
}

pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/search/{backend}/prices", post(find_price))
        .route("/v5/search/{backend}/bulk/prices", post(find_price_bulk))
        .route("/stats", get(stats))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state)
}

fn text(status: StatusCode, msg: &str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{msg}\n"),
    )
        .into_response()
}

fn json(body: Vec<u8>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn stats(State(s): State<Arc<AppState>>) -> Response {
    json(s.stats.clone().into_bytes())
}

/// The 400 reply for a single request's body, naming what is wrong.
fn bad_request(body: &[u8], e: &serde_json::Error) -> Response {
    use serde_json::error::Category;
    let msg = match e.classify() {
        Category::Eof if body.iter().all(u8::is_ascii_whitespace) => {
            "Request body must not be empty".to_string()
        }
        Category::Eof => "Request body contains badly-formed JSON".to_string(),
        Category::Data => format!(
            "Request body contains an invalid value (line {} column {})",
            e.line(),
            e.column()
        ),
        _ => format!(
            "Request body contains badly-formed JSON (line {} column {})",
            e.line(),
            e.column()
        ),
    };
    text(StatusCode::BAD_REQUEST, &msg)
}

fn unknown_backend() -> Response {
    text(StatusCode::NOT_FOUND, "404 page not found")
}

fn keel_unavailable(e: &str) -> Response {
    text(StatusCode::INTERNAL_SERVER_ERROR, &format!("keel: {e}"))
}

async fn find_price(
    State(s): State<Arc<AppState>>,
    Path(backend): Path<String>,
    body: Bytes,
) -> Response {
    // The first JSON value is the request; whatever follows it is ignored.
    let mut values = serde_json::Deserializer::from_slice(&body).into_iter::<FindPriceRequest>();
    let req = match values.next() {
        Some(Ok(r)) => r,
        Some(Err(e)) => return bad_request(&body, &e),
        None => return text(StatusCode::BAD_REQUEST, "Request body must not be empty"),
    };
    let found = match backend.as_str() {
        "map" => s.map.find(&req).map(|p| p.response_json()),
        "bitmap" => s.bitmap.find(&req),
        "keel" => match &s.keel {
            Some(k) => match k.find(&req).await {
                Ok(f) => f,
                Err(e) => return keel_unavailable(&e.0),
            },
            None => return keel_unavailable("not configured (--keel)"),
        },
        _ => return unknown_backend(),
    };
    match found {
        Some(mut body) => {
            body.push(b'\n');
            json(body)
        }
        None => text(StatusCode::NOT_FOUND, NOT_FOUND),
    }
}

async fn find_price_bulk(
    State(s): State<Arc<AppState>>,
    Path(backend): Path<String>,
    body: Bytes,
) -> Response {
    if !matches!(backend.as_str(), "map" | "bitmap" | "keel") {
        return unknown_backend();
    }
    let mut values =
        serde_json::Deserializer::from_slice(&body).into_iter::<Vec<FindPriceRequestBulk>>();
    let reqs = match values.next() {
        Some(Ok(r)) => r,
        _ => return text(StatusCode::BAD_REQUEST, "Unable decode body"),
    };
    let found: Vec<Option<Vec<u8>>> = match backend.as_str() {
        "map" => reqs
            .iter()
            .map(|r| s.map.find(&r.request).map(|p| p.response_json()))
            .collect(),
        "bitmap" => reqs.iter().map(|r| s.bitmap.find(&r.request)).collect(),
        _ => match &s.keel {
            Some(k) => match k.find_many(&reqs).await {
                Ok(f) => f,
                Err(e) => return keel_unavailable(&e.0),
            },
            None => return keel_unavailable("not configured (--keel)"),
        },
    };
    let mut out = Vec::with_capacity(2 + found.len() * 100);
    out.push(b'[');
    for (i, (r, f)) in reqs.iter().zip(found).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"price\":");
        match f {
            Some(p) => out.extend_from_slice(&p),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(format!(",\"id\":{}}}\n", r.id).as_bytes());
    }
    out.push(b']');
    json(out)
}

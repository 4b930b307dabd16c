//! The three back ends. All answer "which price do these conditions select":
//! every condition must hold; when more than one price qualifies, the default
//! one is taken (the first in catalogue order), and when none of several is a
//! default nothing is found.
//!
//! - [`MapSearch`]: prices grouped by offering, each group scanned in full
//!   with string comparisons per price: the plain approach the index is
//!   measured against.
//! - [`BitmapSearch`]: Keel's `BitmapIndex` in this process, the response
//!   body stored as each entity's payload.
//! - [`KeelSearch`]: the same index inside keel-server, one `IDX.SEARCH ...
//!   WITHPAYLOAD` round trip per request.

use crate::data::Price;
use keel_client::{Client, Frame};
use keel_store::index::{BitmapIndex, Query};
use parking_lot::RwLock;
use serde::{Deserialize, Deserializer};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Index attribute names. Characteristics are `char:<name>` so that no
/// characteristic name can collide with the fixed ones.
pub const ATTR_OFFERING: &str = "offering";
pub const ATTR_GROUP: &str = "group";
pub const ATTR_SPEC: &str = "spec";
pub const ATTR_DEFAULT: &str = "default";
pub const CHAR_PREFIX: &str = "char:";

fn null_as_default<'de, D: Deserializer<'de>, T: Deserialize<'de> + Default>(
    d: D,
) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct CharValue {
    #[serde(default, deserialize_with = "null_as_default")]
    pub char: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub value: String,
}

/// A search request; missing or null fields are empty, unknown ones ignored.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct FindPriceRequest {
    #[serde(rename = "offeringId", default, deserialize_with = "null_as_default")]
    pub offering_id: String,
    #[serde(rename = "groupId", default, deserialize_with = "null_as_default")]
    pub group_id: String,
    #[serde(rename = "priceSpecId", default, deserialize_with = "null_as_default")]
    pub price_spec_id: String,
    #[serde(rename = "charValues", default, deserialize_with = "null_as_default")]
    pub char_values: Vec<CharValue>,
}

/// One item of a bulk request: a request and the id its answer carries.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct FindPriceRequestBulk {
    #[serde(flatten)]
    pub request: FindPriceRequest,
    #[serde(default)]
    pub id: u16,
}

/// The index pairs a price is found by.
pub fn index_pairs(p: &Price) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut pairs = Vec::with_capacity(4 + p.chars.len());
    pairs.push((ATTR_OFFERING.into(), p.offering.as_bytes().to_vec()));
    pairs.push((ATTR_GROUP.into(), p.group.as_bytes().to_vec()));
    pairs.push((ATTR_SPEC.into(), p.spec.as_bytes().to_vec()));
    for (c, v) in p.chars.iter().zip(&p.values) {
        pairs.push((
            format!("{CHAR_PREFIX}{c}").into_bytes(),
            v.as_bytes().to_vec(),
        ));
    }
    if p.is_default {
        pairs.push((ATTR_DEFAULT.into(), b"true".to_vec()));
    }
    pairs
}

/// The request's conditions as (attribute, value) pairs; the characteristic
/// attribute names are built into `names`, which the pairs borrow.
fn conditions<'r>(r: &'r FindPriceRequest, names: &'r [String]) -> Vec<(&'r [u8], &'r [u8])> {
    let mut c = Vec::with_capacity(3 + names.len());
    c.push((ATTR_OFFERING.as_bytes(), r.offering_id.as_bytes()));
    c.push((ATTR_GROUP.as_bytes(), r.group_id.as_bytes()));
    c.push((ATTR_SPEC.as_bytes(), r.price_spec_id.as_bytes()));
    for (name, cv) in names.iter().zip(&r.char_values) {
        c.push((name.as_bytes(), cv.value.as_bytes()));
    }
    c
}

fn char_names(r: &FindPriceRequest) -> Vec<String> {
    r.char_values
        .iter()
        .map(|cv| format!("{CHAR_PREFIX}{}", cv.char))
        .collect()
}

/// Prices grouped by offering, in catalogue order.
#[derive(Debug, Default)]
pub struct MapSearch {
    /// A list of separately allocated prices per offering, as a catalogue of
    /// price objects indexed by offering is: the scan follows one pointer per
    /// price.
    #[allow(clippy::vec_box)]
    by_offering: HashMap<Arc<str>, Vec<Box<Price>>>,
    /// Offerings in first-seen order, so `prices()` keeps catalogue order.
    order: Vec<Arc<str>>,
    len: usize,
}

impl MapSearch {
    pub fn new(prices: Vec<Price>) -> MapSearch {
        let mut m = MapSearch::default();
        for p in prices {
            m.push(p);
        }
        m
    }

    pub fn push(&mut self, p: Price) {
        if !self.by_offering.contains_key(&p.offering) {
            self.order.push(p.offering.clone());
        }
        self.by_offering
            .entry(p.offering.clone())
            .or_default()
            .push(Box::new(p));
        self.len += 1;
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every price in catalogue order.
    pub fn prices(&self) -> impl Iterator<Item = &Price> {
        self.order
            .iter()
            .flat_map(|o| self.by_offering[o].iter().map(|b| &**b))
    }

    /// Scan the offering's prices: compare offering, spec and group, then look
    /// each requested characteristic up among the price's by name and compare
    /// its value. The first matching default wins at once; otherwise a single
    /// match is the answer and several are none.
    pub fn find(&self, r: &FindPriceRequest) -> Option<&Price> {
        let mut found: Option<&Price> = None;
        let mut several = false;
        for p in self.by_offering.get(r.offering_id.as_str())? {
            if *p.offering != *r.offering_id
                || *p.spec != *r.price_spec_id
                || *p.group != *r.group_id
            {
                continue;
            }
            let all_chars =
                r.char_values
                    .iter()
                    .all(|cv| match p.chars.iter().position(|c| **c == *cv.char) {
                        Some(i) => *p.values[i] == *cv.value,
                        None => false,
                    });
            if !all_chars {
                continue;
            }
            if found.is_none() {
                found = Some(p);
            } else {
                several = true;
            }
            if p.is_default {
                return Some(p);
            }
        }
        if several {
            None
        } else {
            found
        }
    }
}

/// Keel's bitmap index in this process, behind a read-write lock as a
/// catalogue that is updated while it serves would be.
#[derive(Debug, Default)]
pub struct BitmapSearch {
    index: RwLock<BitmapIndex>,
}

impl BitmapSearch {
    pub fn new() -> BitmapSearch {
        BitmapSearch::default()
    }

    /// Index `p`, its response body as the payload.
    pub fn add(&self, p: &Price) {
        let pairs = index_pairs(p);
        let refs: Vec<(&[u8], &[u8])> = pairs
            .iter()
            .map(|(a, v)| (a.as_slice(), v.as_slice()))
            .collect();
        let payload = p.response_json();
        // The only error is for malformed input, which generated data is not.
        let _ = self
            .index
            .write()
            .add(p.id.as_bytes(), &refs, Some(&payload));
    }

    pub fn len(&self) -> usize {
        self.index.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.read().is_empty()
    }

    pub fn heap_bytes(&self) -> usize {
        self.index.read().heap_bytes()
    }

    /// Bytes of the payloads (response bodies) among `heap_bytes`.
    pub fn payload_bytes(&self) -> usize {
        self.index.read().payload_bytes()
    }

    /// The selected price's response body.
    pub fn find(&self, r: &FindPriceRequest) -> Option<Vec<u8>> {
        let names = char_names(r);
        let q = Query {
            conditions: conditions(r, &names),
            default: Some((ATTR_DEFAULT.as_bytes(), b"true")),
            limit: Some(1),
        };
        let index = self.index.read();
        let hits = index.search(&q);
        hits.first().and_then(|h| h.payload.map(<[u8]>::to_vec))
    }
}

/// The index inside keel-server under `key`, reached through a few connections taken in
/// turn: one connection is served by one keel-server thread, so a single one would leave
/// the server's other threads idle however many requests are in flight.
#[derive(Debug, Clone)]
pub struct KeelSearch {
    clients: Vec<Client>,
    next: Arc<AtomicUsize>,
    pub key: String,
}

/// What keel-server answered that the service cannot use.
#[derive(Debug)]
pub struct KeelError(pub String);

impl KeelSearch {
    /// `connections` connections (at least one) to the server at `url`.
    pub async fn connect(
        url: &str,
        key: &str,
        connections: usize,
    ) -> Result<KeelSearch, KeelError> {
        let mut clients = Vec::with_capacity(connections.max(1));
        for _ in 0..connections.max(1) {
            clients.push(
                Client::connect(url)
                    .await
                    .map_err(|e| KeelError(e.to_string()))?,
            );
        }
        Ok(KeelSearch {
            clients,
            next: Arc::new(AtomicUsize::new(0)),
            key: key.to_string(),
        })
    }

    /// The next connection in turn.
    pub fn client(&self) -> &Client {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.clients.len();
        &self.clients[i]
    }

    fn search_args<'a>(&'a self, r: &'a FindPriceRequest, names: &'a [String]) -> Vec<&'a [u8]> {
        let mut args: Vec<&[u8]> = Vec::with_capacity(24);
        args.push(b"IDX.SEARCH");
        args.push(self.key.as_bytes());
        for (a, v) in conditions(r, names) {
            args.push(a);
            args.push(v);
        }
        args.extend_from_slice(&[
            b"DEFAULT",
            ATTR_DEFAULT.as_bytes(),
            b"true",
            b"LIMIT",
            b"1",
            b"WITHPAYLOAD",
        ]);
        args
    }

    fn payload_of(reply: Frame) -> Result<Option<Vec<u8>>, KeelError> {
        match reply {
            Frame::Array(items) => match items.into_iter().nth(1) {
                Some(Frame::Bulk(b)) => Ok(Some(b.to_vec())),
                None | Some(Frame::Null) => Ok(None),
                Some(other) => Err(KeelError(format!("unexpected payload {other:?}"))),
            },
            other => Err(KeelError(format!("unexpected reply {other:?}"))),
        }
    }

    /// The selected price's response body: one round trip.
    pub async fn find(&self, r: &FindPriceRequest) -> Result<Option<Vec<u8>>, KeelError> {
        let names = char_names(r);
        let reply = self
            .client()
            .cmd(&self.search_args(r, &names))
            .await
            .map_err(|e| KeelError(e.to_string()))?;
        Self::payload_of(reply)
    }

    /// Every request's answer, the searches sent as one pipeline.
    pub async fn find_many(
        &self,
        rs: &[FindPriceRequestBulk],
    ) -> Result<Vec<Option<Vec<u8>>>, KeelError> {
        let mut p = self.client().pipeline();
        for r in rs {
            let names = char_names(&r.request);
            p.add(&self.search_args(&r.request, &names));
        }
        let replies = p.execute().await.map_err(|e| KeelError(e.to_string()))?;
        replies
            .into_iter()
            .map(|r| {
                r.map_err(|e| KeelError(e.to_string()))
                    .and_then(Self::payload_of)
            })
            .collect()
    }

    /// Replace the index under `key` with `prices`, `batch` IDX.ADDs per
    /// pipeline.
    pub async fn load<'p>(
        &self,
        prices: impl Iterator<Item = &'p Price>,
        batch: usize,
    ) -> Result<usize, KeelError> {
        let err = |e: keel_client::Error| KeelError(e.to_string());
        self.client()
            .cmd(&[b"DEL", self.key.as_bytes()])
            .await
            .map_err(err)?;
        self.client()
            .cmd(&[b"IDX.CREATE", self.key.as_bytes()])
            .await
            .map_err(err)?;
        let mut n = 0;
        let mut pipe = self.client().pipeline();
        let mut queued = 0;
        for p in prices {
            let mut args: Vec<Vec<u8>> = vec![b"IDX.ADD".to_vec(), self.key.clone().into_bytes()];
            args.push(p.id.clone().into_bytes());
            for (a, v) in index_pairs(p) {
                args.push(a);
                args.push(v);
            }
            args.push(b"PAYLOAD".to_vec());
            args.push(p.response_json());
            pipe.add(&args);
            queued += 1;
            if queued == batch {
                n += Self::finish(pipe).await?;
                pipe = self.client().pipeline();
                queued = 0;
            }
        }
        if queued > 0 {
            n += Self::finish(pipe).await?;
        }
        Ok(n)
    }

    async fn finish(pipe: keel_client::Pipeline) -> Result<usize, KeelError> {
        let replies = pipe.execute().await.map_err(|e| KeelError(e.to_string()))?;
        let n = replies.len();
        if let Some(Err(e)) = replies.into_iter().find(|r| r.is_err()) {
            return Err(KeelError(e.to_string()));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{generate, request_json};

    fn request(p: &Price) -> FindPriceRequest {
        serde_json::from_str(&request_json(p, None)).unwrap()
    }

    #[test]
    fn map_and_bitmap_agree_on_defaults_ambiguity_and_misses() {
        let mut prices = generate(1, 5);
        // Two more prices under the conditions of prices[10], one of them the
        // default; and one more under those of prices[20], not a default.
        let mut dup = prices[10].clone();
        dup.id = "dup-plain".into();
        let mut def = prices[10].clone();
        def.id = "dup-default".into();
        def.is_default = true;
        let mut amb = prices[20].clone();
        amb.id = "ambiguous".into();
        prices.extend([dup, def, amb]);
        let map = MapSearch::new(prices.clone());
        let bitmap = BitmapSearch::new();
        for p in map.prices() {
            bitmap.add(p);
        }
        let body = |p: Option<&Price>| p.map(Price::response_json);

        let r = request(&prices[5]);
        assert_eq!(body(map.find(&r)), Some(prices[5].response_json()));
        assert_eq!(bitmap.find(&r), Some(prices[5].response_json()));

        let r = request(&prices[10]);
        let got = map.find(&r).map(|p| p.id.clone());
        assert_eq!(got.as_deref(), Some("dup-default"));
        assert_eq!(bitmap.find(&r), body(map.find(&r)));

        let r = request(&prices[20]);
        assert_eq!(map.find(&r), None);
        assert_eq!(bitmap.find(&r), None);

        let mut r = request(&prices[5]);
        r.char_values[2].value = "no such VPN".into();
        assert_eq!(map.find(&r), None);
        assert_eq!(bitmap.find(&r), None);

        // Fewer characteristics: many match, none default.
        let mut r = request(&prices[5]);
        r.char_values.truncate(2);
        assert_eq!(map.find(&r), None);
        assert_eq!(bitmap.find(&r), None);
    }

    #[test]
    fn bulk_items_take_their_id_and_ignore_unknown_fields() {
        let b: FindPriceRequestBulk = serde_json::from_str(
            r#"{"offeringId":"o","groupId":null,"charValues":[{"char":"Term","value":"12"}],"id":7,"extra":1}"#,
        )
        .unwrap();
        assert_eq!(b.id, 7);
        assert_eq!(b.request.offering_id, "o");
        assert_eq!(b.request.group_id, "");
        assert_eq!(b.request.char_values.len(), 1);
        assert!(serde_json::from_str::<FindPriceRequestBulk>(r#"{"id":70000}"#).is_err());
    }
}

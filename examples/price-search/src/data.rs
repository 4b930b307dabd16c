//! The price catalogue: ~487k prices, each found by eight conditions (offering,
//! group, price spec and five characteristic values), generated
//! deterministically. Strings every price shares (offering ids, groups, specs,
//! characteristic names and values) are allocated once and shared, so the map
//! back end holds what a catalogue held in memory would hold, no more.

use std::sync::Arc;

/// Values each characteristic takes; a price exists for every combination.
pub const CHARS: [(&str, &[&str]); 5] = [
    ("Term", &["12", "18", "24", "36", "48", "60"]),
    (
        "B2B Traffic",
        &["1GB", "2GB", "5GB", "10GB", "20GB", "50GB", "100GB"],
    ),
    (
        "VPN",
        &[
            "ad796998-f1c7-4fcc-9a6b-1b33042fb375",
            "5739614e-6c52-402c-ba3a-534c51b3201a",
            "a2fe7f64-405b-44be-93e2-04b803373582",
            "170954ea-687d-42d2-9c04-7807845c66ee",
        ],
    ),
    (
        "B2B Bandwidth",
        &[
            "1Mbps", "5Mbps", "10Mbps", "20Mbps", "25Mbps", "30Mbps", "50Mbps", "75Mbps",
            "100Mbps", "125Mbps", "150Mbps", "175Mbps", "200Mbps", "250Mbps", "300Mbps", "350Mbps",
            "400Mbps", "450Mbps", "500Mbps", "550Mbps", "600Mbps", "650Mbps", "700Mbps", "750Mbps",
            "800Mbps", "850Mbps", "900Mbps", "950Mbps", "1Gbps",
        ],
    ),
    ("Router", &["Included", "Not Included"]),
];

/// Prices per offering: the product of the value counts (6*7*4*29*2).
pub const PRICES_PER_OFFERING: usize = 9744;

/// Offering ids of the standard data set (50 offerings); more are generated.
pub const OFFERINGS: [&str; 50] = [
    "a38e432c-3965-4c74-8251-aa640002d2b2",
    "b56d4089-2b29-4453-a2e3-5df95f4f093b",
    "3a83444a-2fbb-4e31-9c1c-a6e60be13a84",
    "cdf8e7f7-1483-426c-9963-dfc848a235d8",
    "00d3a020-08c4-4c94-be0a-e29794756f9e",
    "0957cf06-7ea3-46ac-a971-df4515f6b207",
    "5d4b8249-0415-467e-b34c-9e9b0f52ddf2",
    "f335c67e-42d7-419e-8e34-8787f6ede049",
    "a9a226ae-69ae-4bae-bfe0-448529f0b9f3",
    "a4f9fb39-e56b-403b-a892-07bf9a73540b",
    "a5ec1eb7-073f-4399-9071-ae4a40636f98",
    "1212717d-4650-4acd-9cd4-1e76896c9048",
    "163932ce-24af-4284-b58c-3d5221ee4442",
    "bb23aeba-dd18-4a83-92e7-fc60cc74051f",
    "2c2103f7-a4d4-4b4c-ad92-85f82c5646f6",
    "17fd7812-2c80-494f-8983-430a2800bdf3",
    "8f8030ed-6864-45bb-be8f-d291825a5db8",
    "6ea4e5f3-d747-4fa9-9b83-a88c2562cd0e",
    "c235e849-afd7-4f46-8dcd-90a0e611f925",
    "7575a5b1-eafd-47b8-9bd4-2b3e0bd0c4b6",
    "699c4b09-dab0-429b-a27b-b8b898744620",
    "2ebaa34c-6d81-43de-8047-ca16b1711b90",
    "aa7949f7-57ee-4496-af08-be9ed55ac486",
    "c28d3369-91cb-4e8a-8fc2-e0f8bab9ec96",
    "a6cae282-a564-4a1e-9bff-189743e9d8dd",
    "88bff6f1-effc-45d8-85f6-ffea7f6f8c3e",
    "7473d2d3-2b4e-47de-a054-94b3ce6293b7",
    "f5c56b5a-49de-4d50-bb66-12b685f562c6",
    "a4e12f41-3e99-4165-aba4-c242d583504b",
    "eecff436-e525-48d4-806b-cd42a8f40bce",
    "92d005e7-b8e3-4631-ad25-b0e8d6fb5aef",
    "b694c4a9-345f-4d07-a37e-eabebd2195b8",
    "26296cab-a3de-4104-a458-2a548c8973bd",
    "afab959f-7366-4859-a152-7a46fd53c0df",
    "e27b07ee-3a2c-41e9-86e1-932c804b6c07",
    "5995c13b-82f5-4daf-aa4b-a77a735243e7",
    "970a4374-e158-4758-b9cd-817980ff67b0",
    "5aafedcd-f3a9-4987-af24-5fa49ee0861a",
    "314b2348-4db6-44ce-98d0-6388a2d202c9",
    "e720cca1-567e-4710-8097-9b655cc42e8b",
    "2557c91e-a3e7-4c15-9cf0-f44e3c133d0e",
    "c6e9a5dc-821c-4899-b069-7191fa781498",
    "61e9c254-f164-472f-bd9f-1b0bdc91b6b9",
    "85dc39cd-52dc-49fa-9d00-051a1ff15cd6",
    "67ebe8f2-a17b-44a7-a6e1-3b3ceb86e723",
    "144f119b-1f4c-4f06-a7cf-aa6e9e73c67a",
    "45dd65ee-74db-42ba-9ddc-ec31b496e9d4",
    "136c984f-2465-4608-9d6f-abc44e317c28",
    "072d595b-4256-402e-b717-3a8df1b2dfe6",
    "87f4da45-9eb9-4b58-91aa-c2ca00e7bb9e",
];

/// Groups, drawn uniformly at random per price (five groups of ~97k each).
pub const GROUPS: [&str; 5] = ["group1", "group2", "group3", "group4", "group5"];
/// Price specs, alternating.
pub const SPECS: [&str; 2] = ["MRC", "NRC"];

/// The seed every data set and sample list is drawn from by default.
pub const DEFAULT_SEED: u64 = 3197;

/// One price with the conditions it is found by.
#[derive(Debug, Clone, PartialEq)]
pub struct Price {
    pub id: String,
    pub offering: Arc<str>,
    pub group: Arc<str>,
    pub spec: Arc<str>,
    /// Characteristic names, shared by every price of a catalogue.
    pub chars: Arc<[Arc<str>]>,
    /// `values[i]` is the value of `chars[i]`.
    pub values: Vec<Arc<str>>,
    pub value: f64,
    pub currency: Arc<str>,
    /// The price to take when a search finds several.
    pub is_default: bool,
}

impl Price {
    /// The search response body: `{"id":..,"spec":..,"value":..,"currency":..}`.
    pub fn response_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(96);
        out.extend_from_slice(b"{\"id\":");
        push_json_str(&mut out, &self.id);
        out.extend_from_slice(b",\"spec\":");
        push_json_str(&mut out, &self.spec);
        out.extend_from_slice(b",\"value\":");
        // Display prints whole numbers without a fraction, as JSON encoders do.
        out.extend_from_slice(format!("{}", self.value).as_bytes());
        out.extend_from_slice(b",\"currency\":");
        push_json_str(&mut out, &self.currency);
        out.push(b'}');
        out
    }
}

/// Append `s` as a JSON string.
pub fn push_json_str(out: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// splitmix64: small, fast, and the same sequence on every platform.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0; the modulo bias is immaterial here).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    /// A random version-4 UUID in its usual text form.
    pub fn uuid(&mut self) -> String {
        let hi = self.next_u64();
        let lo = self.next_u64();
        let hi = (hi & !0xF000) | 0x4000;
        let lo = (lo & !(0xC << 60)) | (0x8 << 60);
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            hi >> 32,
            (hi >> 16) & 0xFFFF,
            hi & 0xFFFF,
            lo >> 48,
            lo & 0xFFFF_FFFF_FFFF
        )
    }
}

/// `offerings` offerings with a price for every combination of characteristic
/// values: spec alternating MRC/NRC, group uniformly random, value the price's
/// ordinal, no currency, none marked default.
pub fn generate(offerings: usize, seed: u64) -> Vec<Price> {
    let mut rng = Rng::new(seed);
    let chars: Arc<[Arc<str>]> = CHARS.iter().map(|(c, _)| Arc::from(*c)).collect();
    let values: Vec<Vec<Arc<str>>> = CHARS
        .iter()
        .map(|(_, vs)| vs.iter().map(|v| Arc::from(*v)).collect())
        .collect();
    let groups: Vec<Arc<str>> = GROUPS.iter().map(|g| Arc::from(*g)).collect();
    let specs: Vec<Arc<str>> = SPECS.iter().map(|s| Arc::from(*s)).collect();
    let currency: Arc<str> = Arc::from("");
    let mut out = Vec::with_capacity(offerings * PRICES_PER_OFFERING);
    for o in 0..offerings {
        let offering: Arc<str> = match OFFERINGS.get(o) {
            Some(id) => Arc::from(*id),
            None => Arc::from(rng.uuid()),
        };
        // Odometer over the value lists, last characteristic fastest.
        let mut pos = [0usize; 5];
        loop {
            let n = out.len();
            out.push(Price {
                id: rng.uuid(),
                offering: offering.clone(),
                group: groups[rng.below(groups.len())].clone(),
                spec: specs[n % specs.len()].clone(),
                chars: chars.clone(),
                values: (0..5).map(|c| values[c][pos[c]].clone()).collect(),
                value: n as f64,
                currency: currency.clone(),
                is_default: false,
            });
            let mut c = 4;
            loop {
                pos[c] += 1;
                if pos[c] < values[c].len() {
                    break;
                }
                pos[c] = 0;
                if c == 0 {
                    break;
                }
                c -= 1;
            }
            if pos.iter().all(|&p| p == 0) {
                break;
            }
        }
    }
    out
}

/// A search request as the service takes it.
pub fn request_json(p: &Price, bulk_id: Option<u16>) -> String {
    let mut out = Vec::with_capacity(320);
    out.extend_from_slice(b"{\"offeringId\":");
    push_json_str(&mut out, &p.offering);
    out.extend_from_slice(b",\"groupId\":");
    push_json_str(&mut out, &p.group);
    out.extend_from_slice(b",\"priceSpecId\":");
    push_json_str(&mut out, &p.spec);
    out.extend_from_slice(b",\"charValues\":[");
    for (i, (c, v)) in p.chars.iter().zip(&p.values).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"char\":");
        push_json_str(&mut out, c);
        out.extend_from_slice(b",\"value\":");
        push_json_str(&mut out, v);
        out.push(b'}');
    }
    out.push(b']');
    if let Some(id) = bulk_id {
        out.extend_from_slice(format!(",\"id\":{id}").as_bytes());
    }
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_offering_has_every_combination_once() {
        let prices = generate(1, DEFAULT_SEED);
        assert_eq!(prices.len(), PRICES_PER_OFFERING);
        let combos: std::collections::HashSet<Vec<&str>> = prices
            .iter()
            .map(|p| p.values.iter().map(|v| &**v).collect())
            .collect();
        assert_eq!(combos.len(), PRICES_PER_OFFERING);
        assert_eq!(&*prices[0].spec, "MRC");
        assert_eq!(&*prices[1].spec, "NRC");
        assert_eq!(prices[7].value, 7.0);
    }

    #[test]
    fn generation_is_deterministic_and_groups_are_balanced() {
        let a = generate(2, 7);
        let b = generate(2, 7);
        assert_eq!(a, b);
        assert_ne!(a, generate(2, 8));
        for g in GROUPS {
            let n = a.iter().filter(|p| &*p.group == g).count();
            assert!((3500..4300).contains(&n), "{g}: {n}");
        }
    }

    #[test]
    fn response_json_prints_whole_values_without_a_fraction() {
        let mut p = generate(1, 1).swap_remove(3);
        p.id = "x\"y".into();
        assert_eq!(
            String::from_utf8(p.response_json()).unwrap(),
            r#"{"id":"x\"y","spec":"NRC","value":3,"currency":""}"#
        );
        p.value = 2.5;
        assert!(String::from_utf8(p.response_json())
            .unwrap()
            .contains("\"value\":2.5,"));
    }

    #[test]
    fn uuids_look_like_version_4() {
        let u = Rng::new(1).uuid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!(matches!(&u[19..20], "8" | "9" | "a" | "b"));
    }
}

//! Geospatial math for the GEO commands: Redis's 52-bit interleaved geohash
//! (the score a point is stored under in its sorted set), decoding a score to
//! the centre of its cell, the haversine distance on Redis's sphere, the
//! standard base-32 geohash string, and the nine cells a radius or box search
//! walks. Pure functions of numbers: no sorted sets, no RESP.
//!
//! Every step mirrors Redis 7.0's arithmetic in `f64`, in the same order, so
//! scores, positions and distances are bit-for-bit Redis's. Latitudes are
//! limited to Web Mercator's +-85.05112878 degrees, as in Redis.

/// Redis's earth radius in metres.
pub const EARTH_RADIUS_M: f64 = 6372797.560856;
/// Redis's Mercator limit, used to choose a search step from a radius.
const MERCATOR_MAX: f64 = 20037726.37;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
pub const LON_MIN: f64 = -180.0;
pub const LON_MAX: f64 = 180.0;
/// Bits per coordinate in a stored score (52 bits in all).
pub const STEP_MAX: u8 = 26;

const D_R: f64 = std::f64::consts::PI / 180.0;

fn deg_rad(a: f64) -> f64 {
    a * D_R
}

fn rad_deg(a: f64) -> f64 {
    a / D_R
}

/// A cell: `step` bits per coordinate, interleaved (latitude in the even
/// bits, longitude in the odd ones). `step == 0 && bits == 0` is "no cell".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Cell {
    pub bits: u64,
    pub step: u8,
}

impl Cell {
    pub fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The cell's bits shifted to the 52-bit score scale.
    pub fn align52(self) -> u64 {
        self.bits << (52 - 2 * u32::from(self.step))
    }

    /// The half-open score range `[min, max)` holding every point of the cell.
    pub fn score_range(self) -> (u64, u64) {
        let next = Cell {
            bits: self.bits.wrapping_add(1),
            step: self.step,
        };
        (self.align52(), next.align52())
    }
}

/// A cell's extent in degrees.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Area {
    pub lon_min: f64,
    pub lon_max: f64,
    pub lat_min: f64,
    pub lat_max: f64,
}

/// Spread the low 32 bits of `v` to the even bit positions.
fn spread(v: u32) -> u64 {
    let mut x = u64::from(v);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Gather the even bits of `v` into the low 32 bits.
fn squash(v: u64) -> u32 {
    let mut x = v & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x >> 16)) & 0x0000_0000_FFFF_FFFF;
    x as u32
}

/// Encode a point at `step` bits per coordinate within the given ranges;
/// `None` outside them (or outside the Mercator latitudes), as Redis refuses.
pub fn encode_in(
    lon_range: (f64, f64),
    lat_range: (f64, f64),
    lon: f64,
    lat: f64,
    step: u8,
) -> Option<Cell> {
    if !(LON_MIN..=LON_MAX).contains(&lon) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if lat < lat_range.0 || lat > lat_range.1 || lon < lon_range.0 || lon > lon_range.1 {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (lat - lat_range.0) / (lat_range.1 - lat_range.0) * scale;
    let lon_offset = (lon - lon_range.0) / (lon_range.1 - lon_range.0) * scale;
    // C converts the doubles to uint32_t; the values are never negative here.
    Some(Cell {
        bits: spread(lat_offset as u32) | (spread(lon_offset as u32) << 1),
        step,
    })
}

/// Encode a point in Redis's coordinate ranges (latitudes +-85.05112878).
pub fn encode(lon: f64, lat: f64, step: u8) -> Option<Cell> {
    encode_in((LON_MIN, LON_MAX), (LAT_MIN, LAT_MAX), lon, lat, step)
}

/// The score Redis stores a point under (52 bits), `None` out of range.
pub fn score_of(lon: f64, lat: f64) -> Option<u64> {
    encode(lon, lat, STEP_MAX).map(Cell::align52)
}

/// The area of a cell in Redis's coordinate ranges.
pub fn decode(cell: Cell) -> Area {
    let lat_scale = LAT_MAX - LAT_MIN;
    let lon_scale = LON_MAX - LON_MIN;
    let ilat = squash(cell.bits);
    let ilon = squash(cell.bits >> 1);
    let div = (1u64 << cell.step) as f64;
    Area {
        lat_min: LAT_MIN + (f64::from(ilat) / div) * lat_scale,
        lat_max: LAT_MIN + ((f64::from(ilat) + 1.0) / div) * lat_scale,
        lon_min: LON_MIN + (f64::from(ilon) / div) * lon_scale,
        lon_max: LON_MIN + ((f64::from(ilon) + 1.0) / div) * lon_scale,
    }
}

/// The centre of a cell, clamped to the valid ranges: (longitude, latitude).
pub fn centre(area: Area) -> (f64, f64) {
    let lon = ((area.lon_min + area.lon_max) / 2.0).clamp(LON_MIN, LON_MAX);
    let lat = ((area.lat_min + area.lat_max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// The (longitude, latitude) a sorted-set score stands for. Like Redis, the
/// score is read as an unsigned integer (see [`c_double_to_u64`]).
pub fn decode_score(score: f64) -> (f64, f64) {
    centre(decode(Cell {
        bits: c_double_to_u64(score),
        step: STEP_MAX,
    }))
}

/// C's `(uint64_t)` of a double as x86-64 code computes it, out-of-range
/// values included (C leaves them undefined; Redis runs what the compiler
/// emits): below 2^63 a signed truncation, so -1 becomes all ones and
/// -inf or NaN the "indefinite" 2^63; from 2^63 up the truncation of
/// `x - 2^63` with the top bit flipped, so 2^64 and beyond become 0. A sorted
/// set holding any score can be read as geo points, and Redis decodes these.
pub fn c_double_to_u64(x: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    // cvttsd2si: truncation, or i64::MIN for NaN and out-of-range values.
    let truncate = |v: f64| -> i64 {
        if v.is_nan() || !(-TWO_63..TWO_63).contains(&v) {
            i64::MIN
        } else {
            v as i64
        }
    };
    if x >= TWO_63 {
        (truncate(x - TWO_63) as u64) ^ (1 << 63)
    } else {
        truncate(x) as u64
    }
}

/// The 11-character standard geohash (latitudes +-90) of a stored score.
pub fn hash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = decode_score(score);
    let bits = encode_in((-180.0, 180.0), (-90.0, 90.0), lon, lat, STEP_MAX).map_or(0, |c| c.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    out
}

/// Distance in metres between two latitudes on one meridian.
pub fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (deg_rad(lat2) - deg_rad(lat1)).abs()
}

/// Redis's haversine distance in metres.
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = deg_rad(lon1);
    let lon2r = deg_rad(lon2);
    let v = ((lon2r - lon1r) / 2.0).sin();
    // Redis skips the trigonometry when the longitudes are the same.
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = deg_rad(lat1);
    let lat2r = deg_rad(lat2);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// What a search covers, sizes already in metres.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    Radius(f64),
    Box { width: f64, height: f64 },
}

/// A search: its centre and shape; `conversion` is metres per unit of the
/// sizes given by the client (the bounding box is computed from the sizes
/// times it, exactly as Redis multiplies).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Search {
    pub lon: f64,
    pub lat: f64,
    /// Sizes in the client's unit.
    pub shape: Shape,
    pub conversion: f64,
}

impl Search {
    /// The distance from the centre of a point inside the shape, `None` outside.
    pub fn within(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.shape {
            Shape::Radius(r) => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= r * self.conversion).then_some(d)
            }
            Shape::Box { width, height } => {
                let (w, h) = (width * self.conversion, height * self.conversion);
                if lat_distance(lat, self.lat) > h / 2.0 {
                    return None;
                }
                if distance(lon, lat, self.lon, lat) > w / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }

    /// (min lon, min lat, max lon, max lat) of the area searched.
    fn bounding_box(&self) -> [f64; 4] {
        let (h, w) = match self.shape {
            Shape::Radius(r) => (self.conversion * r, self.conversion * r),
            Shape::Box { width, height } => (
                self.conversion * height / 2.0,
                self.conversion * width / 2.0,
            ),
        };
        let lat_delta = rad_deg(h / EARTH_RADIUS_M);
        let lon_delta_top = rad_deg(w / EARTH_RADIUS_M / deg_rad(self.lat + lat_delta).cos());
        let lon_delta_bottom = rad_deg(w / EARTH_RADIUS_M / deg_rad(self.lat - lat_delta).cos());
        // The hemispheres are mirrored: the wider edge is the one nearer the equator.
        let south = self.lat < 0.0;
        let lon_delta = if south {
            lon_delta_bottom
        } else {
            lon_delta_top
        };
        [
            self.lon - lon_delta,
            self.lat - lat_delta,
            self.lon + lon_delta,
            self.lat + lat_delta,
        ]
    }

    /// The cells to walk, in Redis's order (centre, N, S, E, W, NE, NW, SE,
    /// SW), zero cells for those that cannot hold a match.
    pub fn cells(&self) -> [Cell; 9] {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounding_box();
        let radius_m = match self.shape {
            Shape::Radius(r) => r,
            Shape::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.conversion;
        let mut step = estimate_step(radius_m, self.lat);
        let mut hash = encode(self.lon, self.lat, step).unwrap_or_default();
        let mut n = neighbours(hash);
        let mut area = decode(hash);
        let too_coarse = decode(n[1]).lat_max < max_lat
            || decode(n[2]).lat_min > min_lat
            || decode(n[3]).lon_max < max_lon
            || decode(n[4]).lon_min > min_lon;
        if step > 1 && too_coarse {
            step -= 1;
            hash = encode(self.lon, self.lat, step).unwrap_or_default();
            n = neighbours(hash);
            area = decode(hash);
        }
        if step >= 2 {
            let zero = Cell::default();
            if area.lat_min < min_lat {
                (n[2], n[8], n[7]) = (zero, zero, zero);
            }
            if area.lat_max > max_lat {
                (n[1], n[5], n[6]) = (zero, zero, zero);
            }
            if area.lon_min < min_lon {
                (n[4], n[8], n[6]) = (zero, zero, zero);
            }
            if area.lon_max > max_lon {
                (n[3], n[7], n[5]) = (zero, zero, zero);
            }
        }
        n
    }
}

/// The step whose cells are about as large as the radius (Redis's estimate).
pub fn estimate_step(mut range_m: f64, lat: f64) -> u8 {
    if range_m == 0.0 {
        return 26;
    }
    let mut step: i32 = 1;
    while range_m < MERCATOR_MAX {
        range_m *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

fn move_x(cell: Cell, d: i8) -> Cell {
    if d == 0 {
        return cell;
    }
    let width = 64 - 2 * u32::from(cell.step);
    let mut x = cell.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let y = cell.bits & 0x5555_5555_5555_5555;
    let zz = 0x5555_5555_5555_5555u64.checked_shr(width).unwrap_or(0);
    if d > 0 {
        x = x.wrapping_add(zz.wrapping_add(1));
    } else {
        x |= zz;
        x = x.wrapping_sub(zz.wrapping_add(1));
    }
    x &= 0xaaaa_aaaa_aaaa_aaaau64.checked_shr(width).unwrap_or(0);
    Cell {
        bits: x | y,
        step: cell.step,
    }
}

fn move_y(cell: Cell, d: i8) -> Cell {
    if d == 0 {
        return cell;
    }
    let width = 64 - 2 * u32::from(cell.step);
    let x = cell.bits & 0xaaaa_aaaa_aaaa_aaaa;
    let mut y = cell.bits & 0x5555_5555_5555_5555;
    let zz = 0xaaaa_aaaa_aaaa_aaaau64.checked_shr(width).unwrap_or(0);
    if d > 0 {
        y = y.wrapping_add(zz.wrapping_add(1));
    } else {
        y |= zz;
        y = y.wrapping_sub(zz.wrapping_add(1));
    }
    y &= 0x5555_5555_5555_5555u64.checked_shr(width).unwrap_or(0);
    Cell {
        bits: x | y,
        step: cell.step,
    }
}

/// The cell and its eight neighbours: centre, N, S, E, W, NE, NW, SE, SW.
pub fn neighbours(c: Cell) -> [Cell; 9] {
    let at = |dx: i8, dy: i8| move_y(move_x(c, dx), dy);
    [
        c,
        at(0, 1),
        at(0, -1),
        at(1, 0),
        at(-1, 0),
        at(1, 1),
        at(-1, 1),
        at(1, -1),
        at(-1, -1),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Golden values from redis-server 7.0.15.
    #[test]
    fn palermo_matches_redis() {
        let score = score_of(13.361389, 38.115556).unwrap();
        assert_eq!(score, 3479099956230698);
        let (lon, lat) = decode_score(score as f64);
        assert_eq!(format!("{lon:.17}"), "13.36138933897018433");
        assert_eq!(format!("{lat:.17}"), "38.11555639549629859");
        assert_eq!(&hash_string(score as f64), b"sqc8b49rny0");
    }

    #[test]
    fn distance_matches_redis() {
        let a = decode_score(score_of(13.361389, 38.115556).unwrap() as f64);
        let b = decode_score(score_of(15.087269, 37.502669).unwrap() as f64);
        assert_eq!(
            format!("{:.4}", distance(a.0, a.1, b.0, b.1)),
            "166274.1516"
        );
    }

    #[test]
    fn scores_convert_as_x86_64_c_does() {
        assert_eq!(c_double_to_u64(1.9), 1);
        assert_eq!(c_double_to_u64(-1.0), u64::MAX);
        assert_eq!(c_double_to_u64(f64::NEG_INFINITY), 1 << 63);
        assert_eq!(c_double_to_u64(f64::NAN), 1 << 63);
        assert_eq!(c_double_to_u64(9_223_372_036_854_775_808.0), 1 << 63);
        assert_eq!(c_double_to_u64(1e20), 0);
        assert_eq!(c_double_to_u64(f64::INFINITY), 0);
        // GEOHASH of a member scored -1 in redis-server 7.0.15.
        assert_eq!(&hash_string(-1.0), b"bp05b5048p0");
    }

    #[test]
    fn out_of_range_is_refused() {
        assert!(score_of(180.1, 0.0).is_none());
        assert!(score_of(0.0, 85.06).is_none());
        assert!(score_of(-180.0, -85.05112878).is_some());
    }

    #[test]
    fn steps_follow_the_radius() {
        assert_eq!(estimate_step(0.0, 0.0), 26);
        assert_eq!(estimate_step(1.0, 0.0), 24);
        assert_eq!(estimate_step(1_000_000.0, 70.0), 3);
        assert_eq!(estimate_step(1e9, 0.0), 1);
    }

    #[test]
    fn neighbours_are_adjacent() {
        let c = encode(2.35, 48.85, 10).unwrap();
        let a = decode(c);
        let n = neighbours(c);
        assert_eq!(decode(n[1]).lat_min, a.lat_max);
        assert_eq!(decode(n[2]).lat_max, a.lat_min);
        assert_eq!(decode(n[3]).lon_min, a.lon_max);
        assert_eq!(decode(n[4]).lon_max, a.lon_min);
    }

    proptest! {
        /// A point decodes to the centre of a cell that contains it.
        #[test]
        fn round_trip_within_the_cell(lon in -180.0f64..180.0, lat in LAT_MIN..LAT_MAX) {
            let cell = encode(lon, lat, STEP_MAX).unwrap();
            let area = decode(cell);
            prop_assert!(area.lon_min <= lon && lon <= area.lon_max);
            prop_assert!(area.lat_min <= lat && lat <= area.lat_max);
            let (dlon, dlat) = decode_score(cell.align52() as f64);
            prop_assert!((dlon - lon).abs() <= area.lon_max - area.lon_min);
            prop_assert!((dlat - lat).abs() <= area.lat_max - area.lat_min);
            // Re-encoding the centre lands in the same cell.
            prop_assert_eq!(encode(dlon, dlat, STEP_MAX).unwrap(), cell);
        }

        /// The nine cells hold every stored point that the shape contains:
        /// walking them finds exactly the brute-force answer.
        #[test]
        fn cells_cover_the_shape(
            points in prop::collection::vec((-180.0f64..180.0, -85.0f64..85.0), 1..200),
            clon in -170.0f64..170.0,
            clat in -70.0f64..70.0,
            radius in 1.0f64..500_000.0,
            boxed in any::<bool>(),
        ) {
            // Every other point near the centre, so small shapes match some.
            let spread = radius / 100_000.0;
            let pts: Vec<(f64, f64)> = points.iter().enumerate().map(|(i, &(x, y))| {
                if i % 2 == 0 {
                    (x, y)
                } else {
                    ((clon + x / 180.0 * spread).clamp(-180.0, 180.0),
                     (clat + y / 85.0 * spread).clamp(-85.0, 85.0))
                }
            }).collect();
            let shape = if boxed { Shape::Box { width: radius * 1.5, height: radius } } else { Shape::Radius(radius) };
            let s = Search { lon: clon, lat: clat, shape, conversion: 1.0 };
            let scores: Vec<u64> = pts.iter().map(|&(x, y)| score_of(x, y).unwrap()).collect();
            let brute: Vec<u64> = scores.iter().copied().filter(|&sc| {
                let (x, y) = decode_score(sc as f64);
                s.within(x, y).is_some()
            }).collect();
            let cells = s.cells();
            let mut found = Vec::new();
            for &sc in &scores {
                let hit = cells.iter().any(|c| {
                    if c.is_zero() { return false; }
                    let (lo, hi) = c.score_range();
                    lo <= sc && sc < hi
                });
                let (x, y) = decode_score(sc as f64);
                if hit && s.within(x, y).is_some() {
                    found.push(sc);
                }
            }
            prop_assert_eq!(found, brute);
        }
    }
}

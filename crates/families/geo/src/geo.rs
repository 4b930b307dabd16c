//! Geo commands: points kept in a sorted set under Redis's 52-bit geohash
//! score (`keel_store::geo` does the math). GEOADD is ZADD with encoded
//! scores (and is logged and notified as ZADD, as Redis rewrites it); the
//! searches walk the nine cells Redis walks, in its order, so the same
//! members come back in the same order.

use bytes::Bytes;
use keel_engine::args::{is, parse_i64};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, KeyFinder, Keys};
use keel_resp::Frame;
use keel_store::geo::{self, Search, Shape};
use keel_store::zset::{self, ScoreBound, ScoreRange};
use keel_store::{Value, ValueType};

pub static COMMANDS: &[&CommandSpec] = &[
    &GEOADD,
    &GEODIST,
    &GEOHASH,
    &GEOPOS,
    &GEORADIUS,
    &GEORADIUS_RO,
    &GEORADIUSBYMEMBER,
    &GEORADIUSBYMEMBER_RO,
    &GEOSEARCH,
    &GEOSEARCHSTORE,
];

const SEARCH_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index.";
const GEOSEARCH_COMPLEXITY: &str = "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape";

// ---------------------------------------------------------------------------
// Parsing shared by the commands
// ---------------------------------------------------------------------------

/// A float as Redis's getDoubleFromObject reads it, with its own error text.
fn float(a: &[u8], msg: Option<&str>) -> Result<f64, CmdError> {
    keel_store::num::parse_f64_in_range(a).ok_or_else(|| match msg {
        Some(m) => CmdError::err(m),
        None => CmdError::NotFloat,
    })
}

/// A longitude, latitude pair, checked against Redis's ranges.
fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), CmdError> {
    let x = float(lon, None)?;
    let y = float(lat, None)?;
    if !(geo::LON_MIN..=geo::LON_MAX).contains(&x) || !(geo::LAT_MIN..=geo::LAT_MAX).contains(&y) {
        return Err(CmdError::err(format!(
            "invalid longitude,latitude pair {x:.6},{y:.6}"
        )));
    }
    Ok((x, y))
}

/// Metres per unit.
fn unit(a: &[u8]) -> Result<f64, CmdError> {
    if is(a, "m") {
        Ok(1.0)
    } else if is(a, "km") {
        Ok(1000.0)
    } else if is(a, "ft") {
        Ok(0.3048)
    } else if is(a, "mi") {
        Ok(1609.34)
    } else {
        Err(CmdError::err(
            "unsupported unit provided. please use M, KM, FT, MI",
        ))
    }
}

/// The score of `member` decoded to (longitude, latitude), if present.
fn member_position(v: &Value, member: &[u8]) -> Option<(f64, f64)> {
    zset::score(v, member).map(geo::decode_score)
}

// ---------------------------------------------------------------------------
// Reply shapes
// ---------------------------------------------------------------------------

/// A distance: a bulk string with four decimals, in every protocol.
fn distance_frame(d: f64) -> Frame {
    Frame::Bulk(Bytes::from(fixed4(d)))
}

/// Redis's fixed-point printing of distances: the value times 10^4 rounded
/// to an integer (half to even, as `llrint`), then split at the point. It
/// differs from `%.4f` when the product rounds across a half.
pub fn fixed4(d: f64) -> String {
    let scaled = (d * 10_000.0).round_ties_even();
    // Out of range, C's llrint gives the "indefinite" LLONG_MIN.
    let v = if scaled.is_finite() && scaled.abs() < 9.2e18 {
        scaled as i64
    } else {
        i64::MIN
    };
    let sign = if v < 0 { "-" } else { "" };
    let u = v.unsigned_abs();
    format!("{sign}{}.{:04}", u / 10_000, u % 10_000)
}

/// C's `%.<n>f` for the values printf spells differently from Rust.
fn c_fixed(d: f64, n: usize) -> String {
    if d.is_nan() {
        "nan".to_string()
    } else if d.is_infinite() {
        if d > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{d:.n$}")
    }
}

/// A coordinate as Redis prints a long double for humans: 17 decimals,
/// trailing zeros dropped; a bulk string in RESP2, a double in RESP3.
fn coord_frame(resp3: bool, x: f64) -> Frame {
    let mut s = c_fixed(x, 17);
    if s.contains('.') {
        let trimmed = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(trimmed);
    }
    if s == "-0" {
        s = "0".to_string();
    }
    if resp3 {
        Frame::Encoded(Bytes::from(format!(",{s}\r\n")))
    } else {
        Frame::Bulk(Bytes::from(s))
    }
}

// ---------------------------------------------------------------------------
// GEOADD
// ---------------------------------------------------------------------------

pub(crate) const GEOADD: CommandSpec = CommandSpec {
    name: "GEOADD",
    group: Group::Geo,
    arity: -5,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::single(1),
    summary:
        "Add one or more geospatial items in the geospatial index represented using a sorted set",
    since: "3.2.0",
    complexity:
        "O(log(N)) for each item added, where N is the number of elements in the sorted set.",
    subcommands: &[],
    run: geoadd,
};

fn geoadd(ctx: &mut Ctx<'_>, args: &mut keel_engine::args::Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    let (mut nx, mut xx) = (false, false);
    let mut first = 2;
    while let Some(opt) = argv.get(first) {
        if is(opt, "NX") {
            nx = true;
        } else if is(opt, "XX") {
            xx = true;
        } else if !is(opt, "CH") {
            break;
        }
        first += 1;
    }
    let triples = &argv[first.min(argv.len())..];
    if !triples.len().is_multiple_of(3) || (nx && xx) {
        return Err(CmdError::Syntax);
    }
    // Redis turns the command into ZADD with the options as given.
    let mut zadd: Vec<Bytes> = Vec::with_capacity(first + triples.len() / 3 * 2);
    zadd.push(Bytes::from_static(b"ZADD"));
    zadd.extend(argv[1..first].iter().cloned());
    for t in triples.chunks_exact(3) {
        let (lon, lat) = lon_lat(&t[0], &t[1])?;
        let score = geo::score_of(lon, lat).unwrap_or(0);
        zadd.push(Bytes::from(score.to_string()));
        zadd.push(t[2].clone());
    }
    let reply = keel_collections::zsets::zadd(ctx, &mut keel_engine::args::Args::new(&zadd, 1))?;
    ctx.rewrite(zadd);
    Ok(reply)
}

// ---------------------------------------------------------------------------
// GEODIST, GEOHASH, GEOPOS
// ---------------------------------------------------------------------------

pub(crate) const GEODIST: CommandSpec = CommandSpec {
    name: "GEODIST",
    group: Group::Geo,
    arity: -4,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns the distance between two members of a geospatial index",
    since: "3.2.0",
    complexity: "O(log(N))",
    subcommands: &[],
    run: geodist,
};

fn geodist(ctx: &mut Ctx<'_>, args: &mut keel_engine::args::Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    let to_metres = match argv.len() {
        5 => unit(&argv[4])?,
        n if n > 5 => return Err(CmdError::Syntax),
        _ => 1.0,
    };
    let key = &argv[1];
    let found = ctx.read_value(key, ValueType::ZSet)?;
    let found = found.map(|v| (member_position(v, &argv[2]), member_position(v, &argv[3])));
    ctx.hit_key(key, found.is_some());
    Ok(match found {
        Some((Some(a), Some(b))) => distance_frame(geo::distance(a.0, a.1, b.0, b.1) / to_metres),
        _ => Frame::Null,
    })
}

pub(crate) const GEOHASH: CommandSpec = CommandSpec {
    name: "GEOHASH",
    group: Group::Geo,
    arity: -2,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns members of a geospatial index as standard geohash strings",
    since: "3.2.0",
    complexity:
        "O(log(N)) for each member requested, where N is the number of elements in the sorted set.",
    subcommands: &[],
    run: geohash,
};

fn geohash(ctx: &mut Ctx<'_>, args: &mut keel_engine::args::Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    let key = &argv[1];
    let members = &argv[2..];
    let found = ctx.read_value(key, ValueType::ZSet)?;
    let reply = members
        .iter()
        .map(|m| match found.and_then(|v| zset::score(v, m)) {
            Some(score) => Frame::Bulk(Bytes::copy_from_slice(&geo::hash_string(score))),
            None => Frame::Null,
        })
        .collect();
    let hit = found.is_some();
    ctx.hit_key(key, hit);
    Ok(Frame::Array(reply))
}

pub(crate) const GEOPOS: CommandSpec = CommandSpec {
    name: "GEOPOS",
    group: Group::Geo,
    arity: -2,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns longitude and latitude of members of a geospatial index",
    since: "3.2.0",
    complexity: "O(N) where N is the number of members requested.",
    subcommands: &[],
    run: geopos,
};

fn geopos(ctx: &mut Ctx<'_>, args: &mut keel_engine::args::Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    let key = &argv[1];
    let resp3 = ctx.resp3();
    let found = ctx.read_value(key, ValueType::ZSet)?;
    let reply = argv[2..]
        .iter()
        .map(|m| match found.and_then(|v| member_position(v, m)) {
            Some((lon, lat)) => {
                Frame::Array(vec![coord_frame(resp3, lon), coord_frame(resp3, lat)])
            }
            None => Frame::NullArray,
        })
        .collect();
    let hit = found.is_some();
    ctx.hit_key(key, hit);
    Ok(Frame::Array(reply))
}

// ---------------------------------------------------------------------------
// The searches: GEORADIUS*, GEOSEARCH, GEOSEARCHSTORE
// ---------------------------------------------------------------------------

/// Which search command runs, as Redis's georadiusGeneric flags it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// GEORADIUS / GEORADIUS_RO: centre and radius at fixed positions.
    Coords {
        store: bool,
    },
    /// GEORADIUSBYMEMBER / _RO.
    Member {
        store: bool,
    },
    Search,
    SearchStore,
}

impl Kind {
    fn may_store(self) -> bool {
        matches!(
            self,
            Kind::Coords { store: true } | Kind::Member { store: true }
        )
    }
}

/// A match: the member, its score and position, its distance in metres.
struct Point {
    member: Vec<u8>,
    score: f64,
    lon: f64,
    lat: f64,
    dist: f64,
}

/// Every member within the search, walking the nine cells in Redis's order;
/// with `limit` (ANY), stops once that many are found.
fn find_points(v: &Value, s: &Search, limit: usize) -> Vec<Point> {
    let cells = s.cells();
    let mut out: Vec<Point> = Vec::new();
    let full = |out: &Vec<Point>| limit != 0 && out.len() >= limit;
    let mut last: usize = 0;
    for (i, cell) in cells.iter().enumerate() {
        if cell.is_zero() {
            continue;
        }
        // Redis skips a cell equal to the one walked before it (huge radii),
        // never comparing with the centre cell.
        if last != 0 && *cell == cells[last] {
            continue;
        }
        if full(&out) {
            break;
        }
        let (min, max) = cell.score_range();
        let range = ScoreRange {
            min: ScoreBound {
                value: min as f64,
                exclusive: false,
            },
            max: ScoreBound {
                value: max as f64,
                exclusive: true,
            },
        };
        let mut done = false;
        zset::for_each_in_scores(v, &range, |member, score| {
            if done {
                return;
            }
            let (lon, lat) = geo::decode_score(score);
            if let Some(dist) = s.within(lon, lat) {
                out.push(Point {
                    member: member.to_vec(),
                    score,
                    lon,
                    lat,
                    dist,
                });
            }
            done = full(&out);
        });
        last = i;
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    None,
    Asc,
    Desc,
}

fn georadius_generic(ctx: &mut Ctx<'_>, argv: &[Bytes], kind: Kind) -> Result<Frame, CmdError> {
    let src_at = if kind == Kind::SearchStore { 2 } else { 1 };
    let src = &argv[src_at];
    let mut store: Option<&Bytes> = None;
    let mut storedist = false;
    let resp3 = ctx.resp3();
    // Redis looks the key up first: WRONGTYPE before any argument error.
    let exists = ctx.read_value(src, ValueType::ZSet)?.is_some();
    ctx.hit_key(src, exists);
    let mut centre: Option<(f64, f64)> = None;
    let mut shape: Option<Shape> = None;
    let mut conversion = 1.0;
    let base = match kind {
        Kind::Coords { .. } => {
            centre = Some(lon_lat(&argv[2], &argv[3])?);
            let (r, c) = distance_arg(&argv[4], &argv[5])?;
            shape = Some(Shape::Radius(r));
            conversion = c;
            6
        }
        Kind::Member { .. } => {
            // With no key, Redis parses only the options (not even the radius).
            if exists {
                let v = ctx.read_value(src, ValueType::ZSet)?;
                centre = Some(
                    v.and_then(|v| member_position(v, &argv[2]))
                        .ok_or_else(|| CmdError::err("could not decode requested zset member"))?,
                );
                let (r, c) = distance_arg(&argv[3], &argv[4])?;
                shape = Some(Shape::Radius(r));
                conversion = c;
            }
            5
        }
        Kind::Search => 2,
        Kind::SearchStore => {
            store = Some(&argv[1]);
            3
        }
    };
    let search = matches!(kind, Kind::Search | Kind::SearchStore);
    let (mut withdist, mut withhash, mut withcoord, mut any) = (false, false, false, false);
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let mut order = Order::None;
    let mut count: i64 = 0;
    let rest = &argv[base.min(argv.len())..];
    let remaining = rest.len();
    let mut i = 0;
    while i < remaining {
        let arg = &rest[i];
        if is(arg, "withdist") {
            withdist = true;
        } else if is(arg, "withhash") {
            withhash = true;
        } else if is(arg, "withcoord") {
            withcoord = true;
        } else if is(arg, "any") {
            any = true;
        } else if is(arg, "asc") {
            order = Order::Asc;
        } else if is(arg, "desc") {
            order = Order::Desc;
        } else if is(arg, "count") && i + 1 < remaining {
            count = parse_i64(&rest[i + 1])?;
            if count <= 0 {
                return Err(CmdError::err("COUNT must be > 0"));
            }
            i += 1;
        } else if (is(arg, "store") || is(arg, "storedist"))
            && i + 1 < remaining
            && kind.may_store()
        {
            store = Some(&rest[i + 1]);
            storedist = is(arg, "storedist");
            i += 1;
        } else if is(arg, "storedist") && kind == Kind::SearchStore {
            storedist = true;
        } else if is(arg, "frommember") && i + 1 < remaining && search && !fromloc {
            if exists {
                let v = ctx.read_value(src, ValueType::ZSet)?;
                centre = Some(
                    v.and_then(|v| member_position(v, &rest[i + 1]))
                        .ok_or_else(|| CmdError::err("could not decode requested zset member"))?,
                );
            }
            frommember = true;
            i += 1;
        } else if is(arg, "fromlonlat") && i + 2 < remaining && search && !frommember {
            centre = Some(lon_lat(&rest[i + 1], &rest[i + 2])?);
            fromloc = true;
            i += 2;
        } else if is(arg, "byradius") && i + 2 < remaining && search && !bybox {
            let (r, c) = distance_arg(&rest[i + 1], &rest[i + 2])?;
            shape = Some(Shape::Radius(r));
            conversion = c;
            byradius = true;
            i += 2;
        } else if is(arg, "bybox") && i + 3 < remaining && search && !byradius {
            let width = float(&rest[i + 1], Some("need numeric width"))?;
            let height = float(&rest[i + 2], Some("need numeric height"))?;
            if height < 0.0 || width < 0.0 {
                return Err(CmdError::err("height or width cannot be negative"));
            }
            conversion = unit(&rest[i + 3])?;
            shape = Some(Shape::Box { width, height });
            bybox = true;
            i += 3;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    if store.is_some() && (withdist || withhash || withcoord) {
        let what = if kind == Kind::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(CmdError::err(format!(
            "{what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )));
    }
    let name = String::from_utf8_lossy(&argv[0]);
    if search && !(frommember || fromloc) {
        return Err(CmdError::err(format!(
            "exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if search && !(byradius || bybox) {
        return Err(CmdError::err(format!(
            "exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if any && count == 0 {
        return Err(CmdError::err("the ANY argument requires COUNT argument"));
    }
    let (Some((lon, lat)), Some(shape), true) = (centre, shape, exists) else {
        return match store {
            Some(dst) => Ok(Frame::Integer(store_points(ctx, kind, dst, &[], false)?)),
            None => Ok(Frame::Array(Vec::new())),
        };
    };
    if count != 0 && order == Order::None && !any {
        order = Order::Asc;
    }
    let s = Search {
        lon,
        lat,
        shape,
        conversion,
    };
    let limit = if any { count as usize } else { 0 };
    let mut points = match ctx.read_value(src, ValueType::ZSet)? {
        Some(v) => find_points(v, &s, limit),
        None => Vec::new(),
    };
    sort_points(&mut points, order, count as usize);
    if count > 0 {
        points.truncate(count as usize);
    }
    for p in &mut points {
        p.dist /= conversion;
    }
    if let Some(dst) = store {
        return Ok(Frame::Integer(store_points(
            ctx, kind, dst, &points, storedist,
        )?));
    }
    let options = usize::from(withdist) + usize::from(withhash) + usize::from(withcoord);
    let reply = points
        .into_iter()
        .map(|p| {
            let member = Frame::Bulk(Bytes::from(p.member));
            if options == 0 {
                return member;
            }
            let mut item = Vec::with_capacity(options + 1);
            item.push(member);
            if withdist {
                item.push(distance_frame(p.dist));
            }
            if withhash {
                item.push(Frame::Integer(p.score as i64));
            }
            if withcoord {
                item.push(Frame::Array(vec![
                    coord_frame(resp3, p.lon),
                    coord_frame(resp3, p.lat),
                ]));
            }
            Frame::Array(item)
        })
        .collect();
    Ok(Frame::Array(reply))
}

/// Order the matches as Redis does: a full sort with the C library's
/// `qsort` (glibc's merge sort, stable), or, when COUNT keeps fewer than were
/// found, its partial quicksort of the first `count`, which is not stable:
/// members at equal distances come out in that algorithm's order.
fn sort_points(points: &mut [Point], order: Order, count: usize) {
    let by_dist = |a: &Point, b: &Point| {
        match order {
            Order::Desc => b.dist.partial_cmp(&a.dist),
            _ => a.dist.partial_cmp(&b.dist),
        }
        .unwrap_or(std::cmp::Ordering::Equal)
    };
    if order == Order::None {
        return;
    }
    if count == 0 || count >= points.len() {
        points.sort_by(by_dist);
    } else {
        keel_store::pqsort::pqsort(points, 0, count as i64 - 1, by_dist);
    }
}

/// The radius and the metres per unit of a `<radius> <unit>` pair.
fn distance_arg(radius: &[u8], u: &[u8]) -> Result<(f64, f64), CmdError> {
    let r = float(radius, Some("need numeric radius"))?;
    if r < 0.0 {
        return Err(CmdError::err("radius cannot be negative"));
    }
    Ok((r, unit(u)?))
}

/// Write the matches to `dst` as a sorted set (scores: geohashes, or the
/// distances with STOREDIST); nothing found deletes `dst`. The count stored.
fn store_points(
    ctx: &mut Ctx<'_>,
    kind: Kind,
    dst: &[u8],
    points: &[Point],
    storedist: bool,
) -> Result<i64, CmdError> {
    let pairs: Vec<(Vec<u8>, f64)> = points
        .iter()
        .map(|p| (p.member.clone(), if storedist { p.dist } else { p.score }))
        .collect();
    let event = if matches!(kind, Kind::SearchStore) {
        "geosearchstore"
    } else {
        "georadiusstore"
    };
    keel_collections::zsets::store_result(ctx, dst, &pairs, event)
}

/// GEORADIUS's keys: the source, and whatever follows a STORE or STOREDIST
/// among the options (Redis reads the last one; its key specs report the
/// first of each, so every one is declared).
fn store_keys(argv: &[Bytes], base: usize, out: &mut Vec<usize>) {
    if argv.len() > 1 {
        out.push(1);
    }
    let mut i = base;
    while i + 1 < argv.len() {
        if is(&argv[i], "STORE") || is(&argv[i], "STOREDIST") {
            if !out.contains(&(i + 1)) {
                out.push(i + 1);
            }
            i += 1;
        }
        i += 1;
    }
}

fn georadius_keys(argv: &[Bytes], out: &mut Vec<usize>) {
    store_keys(argv, 6, out);
}

fn georadiusbymember_keys(argv: &[Bytes], out: &mut Vec<usize>) {
    store_keys(argv, 5, out);
}

pub(crate) const GEORADIUS: CommandSpec = CommandSpec {
    name: "GEORADIUS",
    group: Group::Geo,
    arity: -6,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::Find(KeyFinder(georadius_keys)),
    summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point",
    since: "3.2.0",
    complexity: SEARCH_COMPLEXITY,
    subcommands: &[],
    run: georadius,
};

fn georadius(ctx: &mut Ctx<'_>, args: &mut keel_engine::args::Args<'_>) -> Result<Frame, CmdError> {
    georadius_generic(ctx, args.argv(), Kind::Coords { store: true })
}

pub(crate) const GEORADIUS_RO: CommandSpec = CommandSpec {
    name: "GEORADIUS_RO",
    group: Group::Geo,
    arity: -6,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "A read-only variant for GEORADIUS",
    since: "3.2.10",
    complexity: SEARCH_COMPLEXITY,
    subcommands: &[],
    run: georadius_ro,
};

fn georadius_ro(
    ctx: &mut Ctx<'_>,
    args: &mut keel_engine::args::Args<'_>,
) -> Result<Frame, CmdError> {
    georadius_generic(ctx, args.argv(), Kind::Coords { store: false })
}

pub(crate) const GEORADIUSBYMEMBER: CommandSpec = CommandSpec {
    name: "GEORADIUSBYMEMBER",
    group: Group::Geo,
    arity: -5,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::Find(KeyFinder(georadiusbymember_keys)),
    summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member",
    since: "3.2.0",
    complexity: SEARCH_COMPLEXITY,
    subcommands: &[],
    run: georadiusbymember,
};

fn georadiusbymember(
    ctx: &mut Ctx<'_>,
    args: &mut keel_engine::args::Args<'_>,
) -> Result<Frame, CmdError> {
    georadius_generic(ctx, args.argv(), Kind::Member { store: true })
}

pub(crate) const GEORADIUSBYMEMBER_RO: CommandSpec = CommandSpec {
    name: "GEORADIUSBYMEMBER_RO",
    group: Group::Geo,
    arity: -5,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "A read-only variant for GEORADIUSBYMEMBER",
    since: "3.2.10",
    complexity: SEARCH_COMPLEXITY,
    subcommands: &[],
    run: georadiusbymember_ro,
};

fn georadiusbymember_ro(
    ctx: &mut Ctx<'_>,
    args: &mut keel_engine::args::Args<'_>,
) -> Result<Frame, CmdError> {
    georadius_generic(ctx, args.argv(), Kind::Member { store: false })
}

pub(crate) const GEOSEARCH: CommandSpec = CommandSpec {
    name: "GEOSEARCH",
    group: Group::Geo,
    arity: -7,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.",
    since: "6.2.0",
    complexity: GEOSEARCH_COMPLEXITY,
    subcommands: &[],
    run: geosearch,
};

fn geosearch(ctx: &mut Ctx<'_>, args: &mut keel_engine::args::Args<'_>) -> Result<Frame, CmdError> {
    georadius_generic(ctx, args.argv(), Kind::Search)
}

pub(crate) const GEOSEARCHSTORE: CommandSpec = CommandSpec {
    name: "GEOSEARCHSTORE",
    group: Group::Geo,
    arity: -8,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::range(1, 2, 1),
    summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.",
    since: "6.2.0",
    complexity: GEOSEARCH_COMPLEXITY,
    subcommands: &[],
    run: geosearchstore,
};

fn geosearchstore(
    ctx: &mut Ctx<'_>,
    args: &mut keel_engine::args::Args<'_>,
) -> Result<Frame, CmdError> {
    georadius_generic(ctx, args.argv(), Kind::SearchStore)
}

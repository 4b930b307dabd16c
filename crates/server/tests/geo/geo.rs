//! `keel-geo`'s `geo` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::args::{is, parse_i64};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, KeyFinder, Keys};
use keel_geo::geo::*;
use keel_resp::Frame;
use keel_store::geo::{self, Search, Shape};
use keel_store::zset::{self, ScoreBound, ScoreRange};
use keel_store::{Value, ValueType};

#[cfg(test)]
mod tests {
    use keel_engine::testing::TestEngine;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn bulk(s: &str) -> Frame {
        Frame::Bulk(bytes::Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn add_then_distance_and_search() {
        let mut e = TestEngine::new();
        let r = e.run(&[
            "GEOADD",
            "Sicily",
            "13.361389",
            "38.115556",
            "Palermo",
            "15.087269",
            "37.502669",
            "Catania",
        ]);
        assert_eq!(r, Frame::Integer(2));
        assert_eq!(
            e.run(&["ZSCORE", "Sicily", "Palermo"]),
            Frame::Double(3479099956230698.0)
        );
        assert_eq!(
            e.run(&["GEODIST", "Sicily", "Palermo", "Catania", "km"]),
            bulk("166.2742")
        );
        assert_eq!(
            e.run(&["GEORADIUS", "Sicily", "15", "37", "200", "km", "ASC"]),
            Frame::Array(vec![bulk("Catania"), bulk("Palermo")])
        );
        assert_eq!(
            e.run(&["GEOHASH", "Sicily", "Palermo", "nope"]),
            Frame::Array(vec![bulk("sqc8b49rny0"), Frame::Null])
        );
    }

    #[test]
    fn distances_print_as_redis() {
        assert_eq!(super::fixed4(0.0), "0.0000");
        assert_eq!(super::fixed4(166274.15156960033), "166274.1516");
        // Redis rounds the scaled product, not the exact value.
        assert_eq!(super::fixed4(16830950.13565), "16830950.1356");
    }

    #[test]
    fn errors_match_redis() {
        let mut e = TestEngine::new();
        assert_eq!(
            e.run(&["GEOADD", "k", "200", "10", "m"]),
            Frame::error("ERR invalid longitude,latitude pair 200.000000,10.000000")
        );
        assert_eq!(
            e.run(&[
                "GEOSEARCH",
                "k",
                "FROMLONLAT",
                "0",
                "0",
                "BYRADIUS",
                "1",
                "parsec"
            ]),
            Frame::error("ERR unsupported unit provided. please use M, KM, FT, MI")
        );
        assert_eq!(
            e.run(&["GEOSEARCH", "k", "BYRADIUS", "1", "km", "ASC", "DESC"]),
            Frame::error(
                "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH"
            )
        );
    }
}

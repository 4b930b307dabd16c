//! Reports of a `Run`: the final table on stdout, `--json FILE`, `--html FILE`
//! (one self-contained page, inline SVG), and the live progress line.

pub mod html;
pub mod json;
pub mod progress;
pub mod table;

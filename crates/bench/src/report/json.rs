//! Report: json.

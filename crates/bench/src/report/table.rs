//! Report: table.

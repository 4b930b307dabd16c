//! Report: progress.

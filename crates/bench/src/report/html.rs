//! Report: html.

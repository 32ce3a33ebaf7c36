//! Quire's content engine: page trees, GitBook-flavoured markdown, revisions, diff and
//! three-way merge, link analysis and search sections.
//!
//! This crate is pure: it performs no I/O and has no async code, so that the server can run
//! heavy content work off its request threads and the engine can be tested in isolation.

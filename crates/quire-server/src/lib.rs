//! Quire's server: the GitBook v1 API over SQLite or PostgreSQL.
//!
//! Layers point down only (see ARCHITECTURE.md): bootstrap (`server`, `config`, `admin`) →
//! HTTP (`http` plumbing, `web` published sites, `api` families) → `domain` (workflows shared by families) →
//! `store` (all SQL) → `db`. Support modules (`error`, `state`, `clock`, `ids`, `keys`,
//! `blobs`, `cache`, `validate`) sit beside the layers and import none of them above `store`.

pub mod admin;
pub mod api;
pub mod app;
pub mod blobs;
pub mod cache;
pub mod clock;
pub mod config;
pub mod db;
pub mod domain;
pub mod encoding;
pub mod error;
pub mod fetch;
pub mod git;
pub mod hosts;
pub mod http;
pub mod ids;
pub mod keys;
pub mod metrics;
pub mod passwords;
pub mod per_thread;
pub mod rate;
pub mod revision_cache;
pub mod scopes;
pub mod server;
pub mod state;
pub mod store;
pub mod turns;
pub mod validate;
pub mod values;
pub mod web;

pub use api::router;
pub use config::ServerConfig;
pub use state::AppState;

//! Quire's server: the GitBook v1 API over SQLite or PostgreSQL.

pub mod access;
pub mod admin;
pub mod app;
pub mod auth;
pub mod blobs;
pub mod cache;
pub mod clock;
pub mod config;
pub mod content;
pub mod db;
pub mod error;
pub mod extract;
pub mod ids;
pub mod jobs;
pub mod keys;
pub mod pagination;
pub mod routes;
pub mod search;
pub mod server;
pub mod store;
pub mod validate;
pub mod views;

pub use app::{router, AppState};
pub use config::ServerConfig;

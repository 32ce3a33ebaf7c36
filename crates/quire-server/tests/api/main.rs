//! HTTP integration tests: each test starts an in-process server on a fresh database —
//! SQLite by default, PostgreSQL when `QUIRE_TEST_DATABASE_URL` is set — and drives it
//! over real HTTP.

mod harness;
mod loopback;

mod access_cache;
mod adaptive_views;
mod answers;
mod app;
mod authz;
mod authz_matrix;
mod backup;
mod change_requests;
mod collections;
mod comments;
mod compression;
mod content;
mod content_urls;
mod embeds;
mod errors;
mod git;
mod git_sync;
mod hardening;
mod hardening_depth;
mod hardening_fetch;
mod hostnames;
mod imports;
mod insights;
mod interleaving;
mod invites;
mod jobs;
mod links;
mod listings;
mod members;
mod openapi;
mod operator;
mod org_change_requests;
mod orgs;
mod pagination;
mod pdf;
mod redirects;
mod renderer;
mod reviews;
mod routes;
mod saml;
mod search;
mod site_pages;
mod site_settings;
mod sites;
mod spaces;
mod teams;
mod templates;
mod tokens;
mod translations;
mod users;
mod visitor_auth;

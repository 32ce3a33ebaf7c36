//! The domain layer: workflows that several API families share (access resolution, content
//! loading and saving, the change-request write loop, placement of spaces and collections,
//! purge and other jobs, file intake, search). Handlers call it; it calls the store.

pub mod access;
pub mod accounts;
pub mod adaptive;
pub mod auth;
pub mod change_requests;
pub mod collections;
pub mod comments;
pub mod content;
pub mod embeds;
pub mod fonts;
pub mod git;
pub mod heavy;
pub mod hostnames;
pub mod imports;
pub mod insights;
pub mod jobs;
pub mod links;
pub mod listings;
pub mod mcp_servers;
pub mod members;
pub mod openapi;
pub mod orgs;
pub mod pdf;
pub mod permissions;
pub mod placement;
pub mod published;
pub mod recent;
pub mod redirects;
pub mod saml;
pub mod search;
pub mod share_links;
pub mod site_preview;
pub mod site_search;
pub mod site_settings;
pub mod site_structure;
pub mod sites;
pub mod spaces;
pub mod teams;
pub mod templates;
pub mod translations;
pub mod uploads;
pub mod visitor;

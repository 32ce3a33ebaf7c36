//! Storage queries, one module per aggregate. Handlers call these and never write SQL.

pub mod change_requests;
pub mod collections;
pub mod comments;
pub mod invites;
pub mod jobs;
pub mod members;
pub mod objects;
pub mod ordering;
pub mod orgs;
pub mod permissions;
pub mod revisions;
pub mod search;
pub mod spaces;
pub mod teams;
pub mod tokens;
pub mod users;

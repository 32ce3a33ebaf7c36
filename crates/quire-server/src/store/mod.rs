//! Storage queries, one module per aggregate. Handlers call these and never write SQL.

pub mod invites;
pub mod members;
pub mod orgs;
pub mod teams;
pub mod tokens;
pub mod users;

//! Response bodies of the search operations: the official `SearchSpaceResult`,
//! `SearchPageResult` and `SearchSectionResult`, shared with the site's search (in
//! [`crate::api::views`]).

pub use crate::api::views::{
    Ancestor, AppUrl, SearchPageResult, SearchSectionResult, SearchSpaceResult,
};

//! Collections: the family's operations, each with its official operationId and the access
//! it requires, and their handlers.

pub mod handlers;

use axum::http::Method;

use crate::domain::access::Role;
use crate::http::operation::{op, Access, Operation};

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    use Access::*;
    vec![
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/collections",
            "listCollectionsInOrganizationById",
            OrgMember,
            handlers::list_collections,
        ),
        op(
            Method::POST,
            "/v1/orgs/{organizationId}/collections",
            "createCollection",
            OrgMember,
            handlers::create_collection,
        ),
        op(
            Method::GET,
            "/v1/collections/{collectionId}",
            "getCollectionById",
            Collection(Role::Read),
            handlers::get_collection,
        ),
        op(
            Method::PATCH,
            "/v1/collections/{collectionId}",
            "updateCollectionById",
            Collection(Role::Admin),
            handlers::update_collection,
        ),
        op(
            Method::DELETE,
            "/v1/collections/{collectionId}",
            "deleteCollectionById",
            CollectionIfExists(Role::Admin),
            handlers::delete_collection,
        ),
        op(
            Method::GET,
            "/v1/collections/{collectionId}/spaces",
            "listSpacesInCollectionById",
            Collection(Role::Read),
            handlers::list_collection_spaces,
        ),
        op(
            Method::POST,
            "/v1/collections/{collectionId}/move",
            "moveCollection",
            Collection(Role::Admin),
            handlers::move_collection,
        ),
        op(
            Method::POST,
            "/v1/collections/{collectionId}/transfer",
            "transferCollection",
            Collection(Role::Admin),
            handlers::transfer_collection,
        ),
    ]
}

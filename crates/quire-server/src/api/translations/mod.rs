//! Translations: the family's operations, each with its official operationId and the access
//! it requires, and their handlers. Members with a role see translations; those who may
//! create content in the organization (the run creates a space) manage them.

pub mod glossary;
pub mod handlers;
pub mod types;

use axum::http::Method;

use crate::http::operation::{op, Access, Operation};

/// Request bodies are small: two language codes, a space id and an instructions document.
const BODY_LIMIT: usize = 256 * 1024;

/// The operations of this family.
pub fn operations() -> Vec<Operation> {
    use Access::*;
    vec![
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/translations",
            "listTranslations",
            OrgNonGuest,
            handlers::list_translations,
        ),
        op(
            Method::POST,
            "/v1/orgs/{organizationId}/translations",
            "createTranslation",
            OrgCreate,
            handlers::create_translation,
        )
        .body_limit(BODY_LIMIT),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/translations/{translationId}",
            "getTranslation",
            OrgNonGuest,
            handlers::get_translation,
        ),
        op(
            Method::PUT,
            "/v1/orgs/{organizationId}/translations/{translationId}",
            "updateTranslation",
            OrgCreate,
            handlers::update_translation,
        )
        .body_limit(BODY_LIMIT),
        op(
            Method::DELETE,
            "/v1/orgs/{organizationId}/translations/{translationId}",
            "deleteTranslation",
            OrgCreate,
            handlers::delete_translation,
        ),
        op(
            Method::POST,
            "/v1/orgs/{organizationId}/translations/{translationId}/run",
            "runTranslation",
            OrgCreate,
            handlers::run_translation,
        ),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/translations-glossary",
            "listGlossaryEntries",
            OrgNonGuest,
            glossary::list_entries,
        ),
        op(
            Method::PUT,
            "/v1/orgs/{organizationId}/translations-glossary",
            "updateGlossaryEntries",
            OrgCreate,
            glossary::update_entries,
        )
        .body_limit(BODY_LIMIT),
        op(
            Method::GET,
            "/v1/orgs/{organizationId}/translations-glossary/{glossaryEntryId}",
            "getGlossaryEntry",
            OrgNonGuest,
            glossary::get_entry,
        ),
    ]
}

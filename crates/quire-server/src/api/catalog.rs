//! The route table as data: every operation's method, path, official operationId and
//! required access, for `quire routes` and for the tests that hold the table against the
//! official specifications.

use serde::Serialize;

use crate::api::operations;

/// One operation of the table, as printed by `quire routes`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteEntry {
    /// HTTP method.
    pub method: String,
    /// Path template, `/v1` included, with `{param}` (or `{*param}`) segments.
    pub path: String,
    /// Official operationId.
    pub operation_id: String,
    /// What the caller needs (the `Access` variant).
    pub access: String,
}

/// Every operation of the API, in table order.
pub fn catalog() -> Vec<RouteEntry> {
    operations()
        .into_iter()
        .map(|op| RouteEntry {
            method: op.method.to_string(),
            path: op.path.to_string(),
            operation_id: op.operation.to_string(),
            access: format!("{:?}", op.access),
        })
        .collect()
}

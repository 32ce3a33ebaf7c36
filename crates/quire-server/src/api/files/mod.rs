//! File downloads: file bytes behind signed download URLs (outside `/v1`, no operationId).

pub mod handlers;

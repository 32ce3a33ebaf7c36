//! `listGlossaryEntries`, `updateGlossaryEntries`, `getGlossaryEntry`: the organization's
//! translation glossary (`domain::translations::glossary`).

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Extension;
use serde::{Deserialize, Serialize};

use crate::clock::iso;
use crate::domain::access::OrgCtx;
use crate::domain::translations::glossary::{self, Operation};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::json::Json;
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;
use crate::store::glossary::EntryRow;

/// `GlossaryEntry`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GlossaryEntry {
    object: &'static str,
    id: String,
    translations: BTreeMap<String, String>,
    created_at: String,
    updated_at: String,
    urls: Urls,
}

/// `GlossaryEntry.urls`.
#[derive(Serialize)]
pub struct Urls {
    location: String,
}

fn view(state: &AppState, row: &EntryRow) -> GlossaryEntry {
    GlossaryEntry {
        object: "glossary-entry",
        id: row.id.clone(),
        translations: serde_json::from_str(&row.translations).unwrap_or_default(),
        created_at: iso(row.created_at),
        updated_at: iso(row.updated_at),
        urls: Urls {
            location: state.url(&format!(
                "/v1/orgs/{}/translations-glossary/{}",
                row.org_id, row.id
            )),
        },
    }
}

/// `listGlossaryEntries`: oldest first.
pub async fn list_entries(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<GlossaryEntry>>> {
    let scope = format!("glossary:{}", org.org.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, count) =
        store::glossary::list(&state.db, org.org.id.as_str(), after, page.fetch_limit()).await?;
    let items = rows
        .iter()
        .map(|row| (view(&state, row), (row.created_at, row.id.clone())))
        .collect();
    Ok(Json(page.finish(&scope, items, count)?))
}

/// `getGlossaryEntry`.
pub async fn get_entry(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<Json<GlossaryEntry>> {
    let row = store::glossary::get(&state.db, org.org.id.as_str(), &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Glossary entry `{id}` not found.")))?;
    Ok(Json(view(&state, &row)))
}

/// Body of `updateGlossaryEntries`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateEntries {
    operations: Vec<Operation>,
}

/// `updateGlossaryEntries`: 204 once every operation is applied (or none is).
pub async fn update_entries(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    JsonBody(body): JsonBody<UpdateEntries>,
) -> ApiResult<StatusCode> {
    glossary::apply(&state, org.org.id.as_str(), body.operations).await?;
    Ok(StatusCode::NO_CONTENT)
}

//! Translations: `ORG/translations`, `ORG/translations/{translationId}` and its `run`.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;
use serde::Deserialize;

use super::types::{
    Translation, TranslationFailure, TranslationPermissions, TranslationResult, TranslationSource,
    TranslationStats, TranslationUrls,
};
use crate::api::views;
use crate::clock::iso;
use crate::domain::access::{OrgCtx, Role};
use crate::domain::auth::Caller;
use crate::domain::translations;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::json::Json;
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;
use crate::store::translations::TranslationRow;

/// The stored JSON of an instructions document, checked for depth.
fn instructions(doc: &quire_content::Document) -> ApiResult<String> {
    doc.check_depth()
        .map_err(|e| ApiError::bad_request(format!("`instructions`: {e}")))?;
    serde_json::to_string(doc).map_err(ApiError::internal)
}

/// A translation as the caller sees it.
fn view(state: &AppState, org: &OrgCtx, t: &TranslationRow) -> ApiResult<Translation> {
    let instructions = serde_json::value::RawValue::from_string(t.instructions.clone())
        .map_err(ApiError::internal)?;
    Ok(Translation {
        object: "translation",
        id: t.id.clone(),
        status: match t.status.as_str() {
            "pending" => "pending",
            "running" => "running",
            _ => "completed",
        },
        source: TranslationSource {
            space: t.source_space.clone(),
            language: t.source_language.clone(),
        },
        language: t.language.clone(),
        instructions,
        result: match (&t.result_space, &t.result_revision) {
            (Some(space), Some(revision)) => Some(TranslationResult {
                space: space.clone(),
                revision: revision.clone(),
            }),
            _ => None,
        },
        created_at: iso(t.created_at),
        updated_at: iso(t.updated_at),
        stats: TranslationStats {
            runs: t.runs,
            total_words: t.total_words,
            total_pages: t.total_pages,
            total_duration: t.total_duration,
            latest_run_duration: t.latest_duration,
            latest_pages: t.latest_pages,
            latest_words: t.latest_words,
        },
        permissions: TranslationPermissions {
            view: true,
            edit: org.role >= Some(Role::Create),
        },
        urls: TranslationUrls {
            location: state.url(&format!("/v1/orgs/{}/translations/{}", t.org_id, t.id)),
        },
        failure: match (&t.failure, t.failed_at) {
            (Some(reason), Some(at)) => Some(TranslationFailure {
                reason: reason.clone(),
                failed_at: iso(at),
            }),
            _ => None,
        },
    })
}

async fn load(state: &AppState, org: &OrgCtx, id: &str) -> ApiResult<TranslationRow> {
    store::translations::get(&state.db, org.org.id.as_str(), id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Translation `{id}` not found.")))
}

/// `listTranslations`.
pub async fn list_translations(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<Translation>>> {
    let scope = format!("translations:{}", org.org.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, count) =
        store::translations::list(&state.db, org.org.id.as_str(), after, page.fetch_limit())
            .await?;
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        let key = (row.created_at, row.id.clone());
        items.push((view(&state, &org, &row)?, key));
    }
    Ok(Json(page.finish(&scope, items, count)?))
}

/// `TranslationSource` in a request.
#[derive(Deserialize)]
pub struct SourceBody {
    space: String,
    language: String,
}

/// Body of `createTranslation`.
#[derive(Deserialize)]
pub struct CreateTranslation {
    source: SourceBody,
    language: String,
    instructions: Option<quire_content::Document>,
}

/// `createTranslation`: 201 with the translation, whose first run is requested at once.
pub async fn create_translation(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(caller): Extension<Caller>,
    JsonBody(body): JsonBody<CreateTranslation>,
) -> ApiResult<Response> {
    let instructions = match &body.instructions {
        Some(doc) => instructions(doc)?,
        None => translations::NO_INSTRUCTIONS.to_string(),
    };
    let new = translations::New {
        space: body.source.space,
        source_language: body.source.language,
        language: body.language,
        instructions,
    };
    let row = translations::create(&state, &org, &caller, new).await?;
    let body = view(&state, &org, &row)?;
    Ok(views::created(&body.urls.location.clone(), body))
}

/// `getTranslation`.
pub async fn get_translation(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<Json<Translation>> {
    let row = load(&state, &org, &id).await?;
    Ok(Json(view(&state, &org, &row)?))
}

/// Body of `updateTranslation`.
#[derive(Deserialize)]
pub struct UpdateTranslation {
    instructions: quire_content::Document,
}

/// `updateTranslation`: new instructions, used by the next run (every page is translated
/// again under them).
pub async fn update_translation(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, id)): Path<(String, String)>,
    JsonBody(body): JsonBody<UpdateTranslation>,
) -> ApiResult<Json<Translation>> {
    let text = instructions(&body.instructions)?;
    load(&state, &org, &id).await?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(org.org.id.as_str())]);
    if !store::translations::set_instructions(&mut tx, &id, &text, state.now()).await? {
        return Err(ApiError::not_found(format!(
            "Translation `{id}` not found."
        )));
    }
    tx.commit().await?;
    let row = load(&state, &org, &id).await?;
    Ok(Json(view(&state, &org, &row)?))
}

/// `deleteTranslation`: 204, also when absent. The result space stays, as any space.
pub async fn delete_translation(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(org.org.id.as_str())]);
    store::translations::delete(&mut tx, org.org.id.as_str(), &id).await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `runTranslation`: 204; the run is a job. A run requested while one waits is the same
/// run; one requested while one runs follows it.
pub async fn run_translation(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Path((_, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    load(&state, &org, &id).await?;
    translations::run_again(&state, &org, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

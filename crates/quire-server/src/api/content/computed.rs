//! `getComputedRevision` and `getComputedDocument`: the pages and documents an OpenAPI
//! specification of the space's organization gives (a page per tag, and its models), made
//! on request and never stored.

use axum::extract::State;
use axum::Extension;
use quire_content::model::Revision;
use quire_content::openapi::computed;
use quire_content::view::{self, BodyFormat, ViewOptions};
use serde::Deserialize;
use serde_json::{json, Value};

use super::handlers::DocumentQuery;
use crate::domain::access::SpaceCtx;
use crate::domain::openapi::computed_source;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, QueryParams};
use crate::http::json::Json;
use crate::state::AppState;

/// Body of both operations.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComputeBody {
    source: Value,
    seed: String,
}

impl ComputeBody {
    fn seed(&self) -> ApiResult<&str> {
        crate::validate::length("seed", &self.seed, 1, 200)?;
        Ok(&self.seed)
    }
}

/// `getComputedRevision`: the pages of the spec (`props.models` adds the models page), ids
/// from the seed; no files or reusable contents.
pub async fn get_computed_revision(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    JsonBody(body): JsonBody<ComputeBody>,
) -> ApiResult<Json<Value>> {
    let seed = body.seed()?.to_string();
    let models = body
        .source
        .pointer("/props/models")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let (slug, doc) = computed_source(&state, &ctx.space.org_id, &body.source).await?;
    let base = state.url(&format!("/s/{}", ctx.space.id));
    let pages = tokio::task::spawn_blocking(move || {
        let rev = Revision {
            pages: computed::revision_pages(&doc, &slug, models, &seed),
            ..Revision::default()
        };
        let app = move |path: &str| format!("{base}/{path}");
        view::pages_view(
            &rev,
            &ViewOptions {
                body: BodyFormat::Markdown,
                app_url: &app,
                git: None,
            },
        )
    })
    .await
    .map_err(ApiError::internal)?;
    Ok(Json(
        json!({ "pages": pages, "files": [], "reusableContents": [] }),
    ))
}

/// `getComputedDocument`: one document of the spec: a tag's operations
/// (`props: {doc: "operations", page: <tag>}`), its introduction (`doc: "info"`) or its models
/// (`doc: "models"`).
pub async fn get_computed_document(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    QueryParams(_q): QueryParams<DocumentQuery>,
    JsonBody(body): JsonBody<ComputeBody>,
) -> ApiResult<Json<Value>> {
    let seed = body.seed()?.to_string();
    let props = body.source.get("props");
    let wanted = props
        .and_then(|p| p.get("doc"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ApiError::bad_request("`source.props.doc` must be `operations`, `info` or `models`.")
        })?
        .to_string();
    let page = props
        .and_then(|p| p.get("page"))
        .and_then(Value::as_str)
        .map(str::to_string);
    if !matches!(wanted.as_str(), "operations" | "info" | "models") {
        return Err(ApiError::bad_request(
            "`source.props.doc` must be `operations`, `info` or `models`.",
        ));
    }
    if wanted == "operations" && page.is_none() {
        return Err(ApiError::bad_request(
            "`source.props.page` names the tag whose operations to show.",
        ));
    }
    let (slug, doc) = computed_source(&state, &ctx.space.org_id, &body.source).await?;
    let markdown = tokio::task::spawn_blocking(move || -> ApiResult<String> {
        Ok(match wanted.as_str() {
            "info" => computed::info_markdown(&doc),
            "models" => computed::models_markdown(&doc, &slug).unwrap_or_default(),
            _ => {
                let tag = page.unwrap_or_default();
                computed::tag_pages(&doc, &slug)
                    .into_iter()
                    .find(|t| t.tag == tag)
                    .ok_or_else(|| {
                        ApiError::bad_request(format!(
                            "`source.props.page`: the specification has no operations tagged `{tag}`."
                        ))
                    })?
                    .markdown
            }
        })
    })
    .await
    .map_err(ApiError::internal)??;
    let mut document = quire_content::markdown::markdown_to_document(&markdown);
    document.assign_keys(&seed);
    Ok(Json(
        serde_json::to_value(document).map_err(ApiError::internal)?,
    ))
}

//! `applyTemplateToSpace`.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Extension;
use quire_content::model::ContentRef;
use serde::Deserialize;
use serde_json::Value;

use crate::domain::access::SpaceCtx;
use crate::domain::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::state::AppState;

/// Most content references a request may give (templates have one or two slots).
const MAX_REFS: usize = 16;

/// `ApplySpaceTemplate`.
#[derive(Deserialize)]
pub struct ApplyBody {
    id: String,
    #[serde(default)]
    params: Option<Params>,
}

/// `SpaceTemplateParams`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Params {
    #[serde(default)]
    content_refs: Option<BTreeMap<String, Value>>,
}

/// `applyTemplateToSpace`: the template's pages are added after the space's own, as one new
/// revision of the space; `params.contentRefs` name files of the space for the template's
/// slots. 201 without a body.
pub async fn apply_template(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    JsonBody(body): JsonBody<ApplyBody>,
) -> ApiResult<StatusCode> {
    let refs = body
        .params
        .unwrap_or_default()
        .content_refs
        .unwrap_or_default();
    if refs.len() > MAX_REFS {
        return Err(ApiError::bad_request(format!(
            "Invalid field `params.contentRefs`: at most {MAX_REFS} references."
        )));
    }
    let mut slots: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in refs {
        match serde_json::from_value::<ContentRef>(value) {
            Ok(ContentRef::File { file }) => {
                slots.insert(name, file);
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "Invalid field `params.contentRefs.{name}`: expected a file reference `{{\"kind\": \"file\", \"file\": \"<file id>\"}}`."
                )))
            }
        }
    }
    crate::domain::templates::apply(&state, &ctx, &caller.user.id, &body.id, &slots).await?;
    Ok(StatusCode::CREATED)
}

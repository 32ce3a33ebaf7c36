//! `applyTemplateToSpace`.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Extension;
use quire_content::model::ContentRef;
use quire_content::templates::{self, TEMPLATES};
use serde::Deserialize;
use serde_json::Value;

use crate::domain::access::{Role, SpaceCtx};
use crate::domain::auth::Caller;
use crate::domain::change_requests::{Attempts, Target};
use crate::domain::content;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::revisions::NewRevision;
use crate::values::{EditMode, RevisionType};

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
    ctx.require_live()?;
    ctx.require(Role::Edit, "apply templates in this space")?;
    let template = templates::template(&body.id).ok_or_else(|| {
        let known: Vec<&str> = TEMPLATES.iter().map(|t| t.id).collect();
        ApiError::bad_request(format!(
            "Invalid field `id`: unknown template `{}` (templates: {}).",
            body.id,
            known.join(", ")
        ))
    })?;
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
        if !template.slots.contains(&name.as_str()) {
            return Err(ApiError::bad_request(format!(
                "Invalid field `params.contentRefs.{name}`: template `{}` has no slot `{name}` (slots: {}).",
                template.id,
                template.slots.join(", ")
            )));
        }
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
    let mut attempts = Attempts::begin(
        &state,
        "applying the template",
        &[Target::Space(&ctx.space.id)],
    )
    .await;
    loop {
        attempts.take().await?;
        let mut tx = state.db.begin().await?;
        let space = store::spaces::get_tx(&mut tx, &ctx.space.id)
            .await?
            .ok_or_else(|| ApiError::not_found("Space not found."))?;
        if space.edit_mode == EditMode::Locked {
            return Err(ApiError::forbidden(
                "The space is locked (`editMode` is `locked`): its content cannot change.",
            ));
        }
        let root = store::revisions::root_of(&mut tx, &space.id, &space.revision_id)
            .await?
            .unwrap_or_default();
        let current = content::load_tx(&state, &mut tx, &root).await?;
        for (name, file) in &slots {
            if current.file(file).is_none() {
                return Err(ApiError::bad_request(format!(
                    "Invalid field `params.contentRefs.{name}`: file `{file}` is not in the space's content."
                )));
            }
        }
        let applied = templates::apply(&current, template, &slots, &mut new_id);
        let now = state.now();
        let saved = content::save(&state, &mut tx, &space.id, applied).await?;
        let revision_id = new_id();
        store::revisions::insert(
            &mut tx,
            &NewRevision {
                id: &revision_id,
                space_id: &space.id,
                parents: std::slice::from_ref(&space.revision_id),
                kind: RevisionType::Edits,
                root: &saved.root,
                created_by: Some(&caller.user.id),
                created_at: now,
            },
        )
        .await?;
        if !crate::domain::content::advance_space(
            &mut tx,
            &space.id,
            &space.revision_id,
            &revision_id,
            now,
        )
        .await?
        {
            // The space moved meanwhile: apply again to its new content.
            continue;
        }
        crate::domain::search::reindex(&state, &mut tx, &space.id, &revision_id, saved.revision())
            .await?;
        tx.commit().await?;
        content::remember(&state, saved);
        return Ok(StatusCode::CREATED);
    }
}

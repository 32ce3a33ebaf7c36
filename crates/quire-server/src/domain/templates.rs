//! Applying a built-in space template, shared by the API (`applyTemplateToSpace`) and the
//! app: the template's pages are added after the space's own, as one new revision.

use std::collections::BTreeMap;

use quire_content::templates::{self, TEMPLATES};

use crate::domain::access::{Role, SpaceCtx};
use crate::domain::change_requests::{Attempts, Target};
use crate::domain::content;
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::revisions::NewRevision;
use crate::values::{EditMode, RevisionType};

/// Applies template `id` to the space (edit role), its `slots` naming files of the space.
pub async fn apply(
    state: &AppState,
    ctx: &SpaceCtx,
    user: &str,
    id: &str,
    slots: &BTreeMap<String, String>,
) -> ApiResult<()> {
    ctx.require_live()?;
    ctx.require(Role::Edit, "apply templates in this space")?;
    let template = templates::template(id).ok_or_else(|| {
        let known: Vec<&str> = TEMPLATES.iter().map(|t| t.id).collect();
        ApiError::bad_request(format!(
            "Invalid field `id`: unknown template `{}` (templates: {}).",
            id,
            known.join(", ")
        ))
    })?;
    if let Some(name) = slots.keys().find(|n| !template.slots.contains(&n.as_str())) {
        return Err(ApiError::bad_request(format!(
            "Invalid field `params.contentRefs.{name}`: template `{}` has no slot `{name}` (slots: {}).",
            template.id,
            template.slots.join(", ")
        )));
    }
    let mut attempts = Attempts::begin(
        state,
        "applying the template",
        &[Target::Space(&ctx.space.id)],
    )
    .await;
    loop {
        attempts.take().await?;
        let mut tx = state.db.begin().await?;
        tx.touches(&[crate::cache::Scope::Space(&ctx.space.id)]);
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
        let current = content::load_tx(state, &mut tx, &space.id, &root).await?;
        for (name, file) in slots {
            if current.file(file).is_none() {
                return Err(ApiError::bad_request(format!(
                    "Invalid field `params.contentRefs.{name}`: file `{file}` is not in the space's content."
                )));
            }
        }
        let applied = templates::apply(&current, template, slots, &mut new_id);
        let now = state.now();
        let saved = content::save(state, &mut tx, &space.id, applied).await?;
        let revision_id = new_id();
        store::revisions::insert(
            &mut tx,
            &NewRevision {
                id: &revision_id,
                space_id: &space.id,
                parents: std::slice::from_ref(&space.revision_id),
                kind: RevisionType::Edits,
                root: &saved.root,
                created_by: Some(user),
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
        crate::domain::search::reindex(state, &mut tx, &space.id, &revision_id, saved.revision())
            .await?;
        tx.commit().await?;
        content::remember(state, saved);
        return Ok(());
    }
}

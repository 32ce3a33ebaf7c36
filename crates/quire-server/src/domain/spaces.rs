//! Creating spaces: the space row with its first revision, shared by `createSpace`,
//! `duplicateSpace` and sites that make a space of their own.

use quire_content::{apply_changes, ApplyContext, Change, Revision};

use crate::db::Tx;
use crate::domain::content::{save, Saved};
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::spaces::SpaceRow;
use crate::values::{EditMode, RevisionType, Visibility};

/// Inserts `space` with its first revision, whose content root is `root` (`""`: empty).
pub async fn insert_with_revision(
    tx: &mut Tx,
    space: &SpaceRow,
    root: &str,
    by: Option<&str>,
    now: i64,
) -> ApiResult<()> {
    store::spaces::insert(tx, space).await?;
    store::revisions::insert(
        tx,
        &store::revisions::NewRevision {
            id: &space.revision_id,
            space_id: &space.id,
            parents: &[],
            kind: RevisionType::Edits,
            root,
            created_by: by,
            created_at: now,
        },
    )
    .await?;
    Ok(())
}

/// Creates a private space at the organization's root, empty or holding one page written in
/// `markdown`. The content's objects are written in `tx`; pass the returned [`Saved`] to
/// `content::remember` once `tx` committed.
pub async fn create(
    state: &AppState,
    tx: &mut Tx,
    org_id: &str,
    title: &str,
    markdown: Option<&str>,
    by: &str,
    now: i64,
) -> ApiResult<(SpaceRow, Option<Saved>)> {
    let space = SpaceRow {
        id: new_id(),
        org_id: crate::ids::OrgId::new(org_id),
        parent_id: None,
        title: title.chars().take(50).collect(),
        emoji: None,
        visibility: Visibility::Private,
        edit_mode: EditMode::Live,
        language: None,
        default_level: Some("inherit".into()),
        revision_id: new_id(),
        comments: 0,
        change_requests: 0,
        change_requests_open: 0,
        change_requests_draft: 0,
        position: store::spaces::next_position(tx, org_id).await?,
        created_at: now,
        updated_at: now,
        deleted_at: None,
    };
    let Some(markdown) = markdown else {
        insert_with_revision(tx, &space, "", Some(by), now).await?;
        return Ok((space, None));
    };
    let changes: Vec<Change> = serde_json::from_value(serde_json::json!([{
        "operation": "insert_page",
        "title": "Welcome",
        "document": { "markdown": markdown }
    }]))
    .map_err(ApiError::internal)?;
    let mut ids = new_id;
    let applied = apply_changes(
        &Revision::default(),
        &changes,
        &mut ApplyContext {
            base: None,
            revisions: Default::default(),
            new_id: &mut ids,
        },
    )
    .map_err(|e| ApiError::internal(anyhow::anyhow!("sample page: {e}")))?;
    // The space row must exist before its content objects refer to it.
    store::spaces::insert(tx, &space).await?;
    let saved = save(state, tx, &space.id, applied.revision).await?;
    store::revisions::insert(
        tx,
        &store::revisions::NewRevision {
            id: &space.revision_id,
            space_id: &space.id,
            parents: &[],
            kind: RevisionType::Edits,
            root: &saved.root,
            created_by: Some(by),
            created_at: now,
        },
    )
    .await?;
    Ok((space, Some(saved)))
}

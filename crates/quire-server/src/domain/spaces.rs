//! Spaces' own workflows, shared by the API and the app: creating a space with its first
//! revision (`createSpace`, `duplicateSpace`, sites that make a space of their own),
//! changing its settings, deleting and restoring it.

use quire_content::{apply_changes, ApplyContext, Change, Revision};

use crate::db::Tx;
use crate::domain::access::grants::Grants;
use crate::domain::access::{OrgCtx, Role, SpaceCtx};
use crate::domain::auth::Caller;
use crate::domain::content::{save, Saved};
use crate::domain::placement::{
    level_to_db, move_target, move_to, require_create_in, LevelIn, MoveBody, Moving,
};
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::{AppState, JobKind};
use crate::store;
use crate::store::ordering::Item;
use crate::store::spaces::{SpacePatch, SpaceRow};
use crate::validate;
use crate::values::{EditMode, RevisionType, Visibility};

/// Inserts `space` with its first revision, whose content root is `root` (`""`: empty).
pub async fn insert_with_revision(
    tx: &mut Tx,
    space: &SpaceRow,
    root: &str,
    by: Option<&str>,
    now: i64,
) -> ApiResult<()> {
    tx.touches(&[
        crate::cache::Scope::Space(&space.id),
        crate::cache::Scope::Org(space.org_id.as_str()),
    ]);
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

/// Refuses `in-collection` for a space outside any collection.
pub fn check_visibility(visibility: Visibility, parent: Option<&str>) -> ApiResult<()> {
    if visibility == Visibility::InCollection && parent.is_none() {
        return Err(ApiError::bad_request(
            "`visibility` `in-collection` is only for spaces inside a collection.",
        ));
    }
    Ok(())
}

/// Refuses a language the official enum does not name.
pub fn check_language(language: &str) -> ApiResult<()> {
    if crate::domain::translations::LANGUAGES.contains(&language) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "`language` `{language}` is not a supported language."
        )))
    }
}

/// A change to a space's settings: each field given is changed.
#[derive(Default)]
pub struct Settings {
    /// Title (at most 50 characters).
    pub title: Option<String>,
    /// Emoji (`None` removes it).
    pub emoji: Option<Option<String>>,
    /// Edit mode (admins).
    pub edit_mode: Option<EditMode>,
    /// Default level of the organization's members (admins).
    pub default_level: Option<Option<LevelIn>>,
    /// Language.
    pub language: Option<String>,
    /// Visibility (admins).
    pub visibility: Option<Visibility>,
}

/// Changes a space's settings: title, emoji and language need `edit`; edit mode, default
/// level and visibility need `admin`.
pub async fn update(state: &AppState, ctx: &SpaceCtx, change: Settings) -> ApiResult<SpaceRow> {
    ctx.require_live()?;
    let mut patch = SpacePatch::default();
    if let Some(title) = change.title {
        ctx.require(Role::Edit, "change the title")?;
        validate::length("title", &title, 0, 50)?;
        patch.title = Some(title);
    }
    if let Some(emoji) = change.emoji {
        ctx.require(Role::Edit, "change the emoji")?;
        if let Some(e) = &emoji {
            validate::length("emoji", e, 0, 50)?;
        }
        patch.emoji = Some(emoji);
    }
    if let Some(language) = change.language {
        ctx.require(Role::Edit, "change the language")?;
        check_language(&language)?;
        patch.language = Some(language);
    }
    if let Some(mode) = change.edit_mode {
        ctx.require(Role::Admin, "change the edit mode")?;
        patch.edit_mode = Some(mode);
    }
    if let Some(level) = change.default_level {
        ctx.require(Role::Admin, "change the default level")?;
        patch.default_level = Some(level_to_db(level));
    }
    let mut tx = state.db.begin().await?;
    if let Some(visibility) = change.visibility {
        ctx.require(Role::Admin, "change the visibility")?;
        // The parent is re-read in the transaction: a move may have changed it.
        let current = store::spaces::get_tx(&mut tx, &ctx.space.id).await?;
        let parent = current.as_ref().and_then(|s| s.parent_id.as_deref());
        check_visibility(visibility, parent)?;
        patch.visibility = Some(visibility);
    }
    if !store::spaces::patch(&mut tx, &ctx.space.id, &patch, state.now()).await? {
        return Err(ApiError::conflict(format!(
            "Space `{}` was deleted meanwhile; restore it before changing it.",
            ctx.space.id
        )));
    }
    let space = store::spaces::get_tx(&mut tx, &ctx.space.id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("space vanished in its transaction")))?;
    touches(&mut tx, ctx);
    tx.commit().await?;
    Ok(space)
}

/// Says what a change to the space's row changes: the space, and its organization's
/// listings and grants.
fn touches(tx: &mut Tx, ctx: &SpaceCtx) {
    tx.touches(&[
        crate::cache::Scope::Space(&ctx.space.id),
        crate::cache::Scope::Org(ctx.space.org_id.as_str()),
    ]);
}

/// Deletes a space (admins): restorable within the retention, then purged by a durable
/// job; nothing to do when it is deleted already.
pub async fn delete(state: &AppState, ctx: &SpaceCtx) -> ApiResult<()> {
    ctx.require(Role::Admin, "delete the space")?;
    if ctx.space.deleted_at.is_some() {
        return Ok(());
    }
    let now = state.now();
    let mut tx = state.db.begin().await?;
    if store::spaces::soft_delete(&mut tx, &ctx.space.id, now).await? {
        // A deleted space is no longer published by any site.
        store::sites::remove_space(&mut tx, &ctx.space.id).await?;
        let due = now.saturating_add(retention_ms(state));
        store::jobs::enqueue(&mut tx, PURGE_JOB, &ctx.space.id, due, now).await?;
        touches(&mut tx, ctx);
        tx.commit().await?;
    }
    Ok(())
}

/// Brings back a space deleted within the retention (admins).
pub async fn restore(state: &AppState, ctx: &SpaceCtx) -> ApiResult<SpaceRow> {
    ctx.require(Role::Admin, "restore the space")?;
    let now = state.now();
    let Some(deleted_at) = ctx.space.deleted_at else {
        return Err(ApiError::bad_request(format!(
            "Space `{}` is not deleted.",
            ctx.space.id
        )));
    };
    if now - deleted_at > retention_ms(state) {
        return Err(ApiError::not_found(format!(
            "Space `{}` not found.",
            ctx.space.id
        )));
    }
    // A parent collection deleted meanwhile: the space comes back at the root.
    let to_root = ctx
        .space
        .parent_id
        .as_ref()
        .is_some_and(|p| !ctx.grants.collections().contains_key(p));
    let mut tx = state.db.begin().await?;
    if !store::spaces::restore(&mut tx, &ctx.space.id, to_root, now).await? {
        return Err(ApiError::conflict(format!(
            "Space `{}` was restored meanwhile.",
            ctx.space.id
        )));
    }
    touches(&mut tx, ctx);
    tx.commit().await?;
    store::spaces::get(&state.db, &ctx.space.id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Space `{}` not found.", ctx.space.id)))
}

/// A new, empty space: each field not given takes its default.
#[derive(Default)]
pub struct NewSpace {
    /// Title (at most 50 characters).
    pub title: String,
    /// Emoji.
    pub emoji: Option<String>,
    /// The collection it goes in.
    pub parent: Option<String>,
    /// Language.
    pub language: Option<String>,
    /// Edit mode (`live` unless given).
    pub edit_mode: Option<EditMode>,
    /// Visibility (`private` unless given).
    pub visibility: Option<Visibility>,
}

/// Creates an empty space in the organization (or its collection `parent`), which the
/// caller must be able to create in; answers it with the caller's grants.
pub async fn create_in(
    state: &AppState,
    org: &OrgCtx,
    caller: &Caller,
    new: NewSpace,
) -> ApiResult<(SpaceRow, std::sync::Arc<Grants>)> {
    let grants = Grants::load(state, &org.org.id, &caller.user.id, org.role).await?;
    require_create_in(org, &grants, new.parent.as_deref())?;
    validate::length("title", &new.title, 0, 50)?;
    if let Some(emoji) = &new.emoji {
        validate::length("emoji", emoji, 0, 50)?;
    }
    if let Some(language) = &new.language {
        check_language(language)?;
    }
    let edit_mode = new.edit_mode.unwrap_or(EditMode::Live);
    let visibility = new.visibility.unwrap_or(Visibility::Private);
    check_visibility(visibility, new.parent.as_deref())?;
    let now = state.now();
    let mut tx = state.db.begin().await?;
    let space = SpaceRow {
        id: new_id(),
        org_id: org.org.id.clone(),
        parent_id: new.parent,
        title: new.title,
        emoji: new.emoji,
        visibility,
        edit_mode,
        language: new.language,
        default_level: Some("inherit".into()),
        revision_id: new_id(),
        change_requests: 0,
        change_requests_open: 0,
        change_requests_draft: 0,
        position: store::spaces::next_position(&mut tx, &org.org.id).await?,
        created_at: now,
        updated_at: now,
        deleted_at: None,
    };
    insert_with_revision(&mut tx, &space, "", Some(&caller.user.id), now).await?;
    tx.commit().await?;
    Ok((space, grants))
}

/// Moves a space (admins) under another parent or to another place among its siblings.
pub async fn move_space(state: &AppState, ctx: &SpaceCtx, body: &MoveBody) -> ApiResult<SpaceRow> {
    ctx.require(Role::Admin, "move the space")?;
    ctx.require_live()?;
    let (parent, place) = move_target(&ctx.org, &ctx.grants, ctx.space.parent_id.as_deref(), body)?;
    if ctx.space.visibility == Visibility::InCollection && parent.is_none() {
        return Err(ApiError::bad_request(
            "A space with `in-collection` visibility must stay inside a collection; change its visibility first.",
        ));
    }
    let moving = Moving {
        item: Item {
            kind: "space".into(),
            id: ctx.space.id.clone(),
        },
        org_id: &ctx.space.org_id,
        position: ctx.space.position,
    };
    move_to(state, &moving, parent.as_deref(), &place).await?;
    store::spaces::get(&state.db, &ctx.space.id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("space vanished")))
}

/// How long a deleted space can be restored before it is purged, as this node is set.
pub fn retention_ms(state: &AppState) -> i64 {
    i64::try_from(state.config.deleted_space_retention_ms).unwrap_or(i64::MAX / 2)
}

/// Job kind that purges a deleted space.
pub const PURGE_JOB: &str = "purge-space";

/// The job that purges a deleted space once its retention has passed.
pub const PURGE_KIND: JobKind = JobKind {
    name: PURGE_JOB,
    run: |state, job| Box::pin(purge_space(state, &job.payload)),
    given_up: None,
};

/// Rows of a purged space deleted per transaction.
const PURGE_BATCH: i64 = 2_000;

/// Removes a space for good if it is still deleted and its retention has passed. A space
/// restored (or deleted again later) is left alone: a later job covers a later deletion.
async fn purge_space(state: &AppState, space_id: &str) -> anyhow::Result<()> {
    let cutoff = state.now() - retention_ms(state);
    if !store::spaces::deleted_before(&state.db, space_id, cutoff).await? {
        return Ok(());
    }
    // Its bulk rows first, a batch per transaction: requests take their turns at the
    // write lock between batches instead of waiting for one long deletion.
    loop {
        let mut tx = state.db.begin().await?;
        // Content rows only: nothing cached rests on them (objects are named by content).
        tx.touches(&[]);
        let removed = store::spaces::purge_some(&mut tx, space_id, PURGE_BATCH).await?;
        tx.commit().await?;
        if removed == 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Space(space_id)]);
    let blobs = store::objects::blob_refs(&mut tx, space_id).await?;
    store::spaces::purge(&mut tx, space_id).await?;
    tx.commit().await?;
    // File bytes no other space uses go too. A crash between the commit and here can only
    // leave unreferenced bytes behind, never remove bytes that some content still names.
    for hash in store::objects::unused_blobs(&state.db, &blobs).await? {
        state.blobs.delete(&hash).await?;
        store::objects::delete_blob(&state.db, &hash).await?;
    }
    state.blobs.delete_derived(space_id).await?;
    crate::domain::git::forget(state, space_id);
    tracing::info!(space = %space_id, "purged deleted space");
    Ok(())
}

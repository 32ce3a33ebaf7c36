//! Change requests as the content workflows see them: finding one by id or number, the
//! space's current revision, the right to edit, and the write loop every change-request
//! write shares (build the new revision off the async threads, save it, compare-and-set,
//! rebuild and retry when another write landed first).

use quire_content::model::Revision;

use crate::domain::access::{Role, SpaceCtx};
use crate::domain::content;
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::change_requests::ChangeRequestRow;
use crate::store::revisions::NewRevision;
use crate::values::{ChangeRequestStatus, RevisionType};

/// Loads a change request of the space by id or number; 404 otherwise.
pub async fn load(
    state: &AppState,
    ctx: &SpaceCtx,
    id_or_number: &str,
) -> ApiResult<ChangeRequestRow> {
    store::change_requests::get(&state.db, &ctx.space.id, id_or_number)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "Change request `{id_or_number}` not found in this space."
            ))
        })
}

pub use crate::domain::access::current_revision;

/// The users who opened `rows`, by id (through the access cache).
pub async fn creators(
    state: &AppState,
    rows: &[ChangeRequestRow],
) -> ApiResult<std::collections::HashMap<String, crate::store::users::UserRow>> {
    let ids: Vec<&str> = rows.iter().map(|r| r.created_by.as_str()).collect();
    crate::domain::access::people(state, &ids).await
}

/// Editing a change request's content needs `edit` on the space.
pub fn require_edit(ctx: &SpaceCtx) -> ApiResult<()> {
    ctx.require(Role::Edit, "edit content in this space")
}

/// How often a write that lost a race against another write is rebuilt and tried again.
const MAX_ATTEMPTS: usize = 8;

/// Counts the attempts of a write that can lose a race against another write: each lost
/// race rebuilds the write on fresh state, and past [`MAX_ATTEMPTS`] the caller is asked
/// with a 409 to retry.
pub struct Attempts {
    left: usize,
    what: &'static str,
}

impl Attempts {
    /// Attempts of `what` (named in the 409).
    pub fn new(what: &'static str) -> Self {
        Self {
            left: MAX_ATTEMPTS,
            what,
        }
    }

    /// Takes one attempt; 409 when none is left.
    pub fn take(&mut self) -> ApiResult<()> {
        if self.left == 0 {
            return Err(ApiError::conflict(format!(
                "The content kept changing during {}; retry it.",
                self.what
            )));
        }
        self.left -= 1;
        Ok(())
    }
}

/// A new revision of a change request, built from the change request as `cr` was read.
pub struct Landing<'a> {
    /// The change request as read when the revision was built.
    pub cr: &'a ChangeRequestRow,
    /// The new content.
    pub revision: Revision,
    /// Revision type (`edits`, `update`).
    pub kind: RevisionType,
    /// Parent revisions.
    pub parents: Vec<String>,
    /// The new merge base, when the write pulled the space's content in.
    pub new_base: Option<&'a str>,
    /// Who wrote it.
    pub by: &'a str,
    /// Whether the writer becomes a contributor.
    pub contributes: bool,
}

/// Saves the revision and moves the change request to it in one transaction, only if the
/// change request is still at the revision the write was built from and is not merged.
/// `None` when it moved: the caller rebuilds on the new state (see [`Attempts`]).
pub async fn land(state: &AppState, landing: Landing<'_>) -> ApiResult<Option<String>> {
    let cr = landing.cr;
    let now = state.now();
    let mut tx = state.db.begin().await?;
    // Take the change request before writing anything: a merge holding it finishes first, and
    // one that moved it since `cr` was read sends the caller round again.
    let Some(now_cr) = store::change_requests::lock(&mut tx, &cr.id).await? else {
        return Ok(None);
    };
    if now_cr.revision_id != cr.revision_id || now_cr.status == ChangeRequestStatus::Merged {
        return Ok(None);
    }
    let saved = content::save(state, &mut tx, &cr.space_id, landing.revision).await?;
    let revision_id = new_id();
    store::revisions::insert(
        &mut tx,
        &NewRevision {
            id: &revision_id,
            space_id: &cr.space_id,
            parents: &landing.parents,
            kind: landing.kind,
            root: &saved.root,
            created_by: Some(landing.by),
            created_at: now,
        },
    )
    .await?;
    let moved = !store::change_requests::advance(
        &mut tx,
        &cr.id,
        &cr.revision_id,
        &revision_id,
        landing.new_base,
        now,
    )
    .await?;
    if moved {
        return Ok(None);
    }
    if landing.contributes {
        store::change_requests::add_contributor(&mut tx, &cr.id, landing.by, now).await?;
    }
    tx.commit().await?;
    content::remember(state, saved);
    Ok(Some(revision_id))
}

//! Change requests as the content workflows see them: finding one by id or number, the
//! space's current revision, the right to edit, and the write loop every change-request
//! write shares (build the new revision off the async threads, save it, compare-and-set,
//! rebuild and retry when another write landed first).

use quire_content::model::Revision;

use crate::db::Tx;
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
/// Writes of one node take turns ([`Attempts::begin`]): only another node's write can win a
/// race, so a few rounds, spread by a growing random pause, are plenty.
const MAX_ATTEMPTS: u32 = 12;

/// What a write compares-and-sets, and so waits its turn for on this node.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    /// A change request's revision (batches, updates, imports into it, its merge).
    ChangeRequest(&'a str),
    /// A space's main revision (merges, imports and templates into the space).
    Space(&'a str),
}

/// The attempts of a write that can lose a race against another write: it first takes its
/// targets' turns on this node (so writes of one node never race each other). A write of a
/// change request reads it with [`Attempts::next`]: the first attempt builds without
/// holding anything; once it lost a race (to another node), each next attempt locks the
/// change request's row before reading it, so that it cannot lose again. Other writes
/// rebuild after a short random pause; past [`MAX_ATTEMPTS`] the caller is asked with a 409
/// to retry.
pub struct Attempts {
    tried: u32,
    what: &'static str,
    _turns: Vec<crate::turns::Turn>,
}

/// A change request read for a write: as it stood, or locked until the write lands.
pub struct Hold {
    /// The change request.
    pub cr: ChangeRequestRow,
    /// The transaction holding its row, after a lost race.
    locked: Option<Tx>,
}

impl Attempts {
    /// Attempts of `what` (named in the 409), once the turns of `targets` are this write's.
    /// Targets are taken in the order given: every write names a change request before a
    /// space, so two writes never wait for each other's turns.
    pub async fn begin(state: &AppState, what: &'static str, targets: &[Target<'_>]) -> Self {
        let mut turns = Vec::with_capacity(targets.len());
        for target in targets {
            let key = match target {
                Target::ChangeRequest(id) => format!("cr:{id}"),
                Target::Space(id) => format!("space:{id}"),
            };
            turns.push(state.turns.take(&key).await);
        }
        Self {
            tried: 0,
            what,
            _turns: turns,
        }
    }

    /// Takes one attempt (pausing after a lost one); 409 when none is left.
    pub async fn take(&mut self) -> ApiResult<()> {
        if self.tried >= MAX_ATTEMPTS {
            return Err(ApiError::conflict(format!(
                "The content kept changing during {} (other servers wrote to it meanwhile); retry it.",
                self.what
            )));
        }
        if self.tried > 0 {
            use rand::Rng;
            let most = 2u64 << self.tried.min(6);
            let pause = rand::thread_rng().gen_range(1..=most);
            tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
        }
        self.tried += 1;
        Ok(())
    }

    /// Takes one attempt at writing change request `id` of the space and reads it: locked
    /// once an attempt was lost, so that this one lands.
    pub async fn next(&mut self, state: &AppState, ctx: &SpaceCtx, id: &str) -> ApiResult<Hold> {
        let lost = self.tried > 0;
        self.take().await?;
        if !lost {
            return Ok(Hold {
                cr: load(state, ctx, id).await?,
                locked: None,
            });
        }
        let mut tx = state.db.begin().await?;
        let cr = store::change_requests::lock(&mut tx, id)
            .await?
            .filter(|c| c.space_id == ctx.space.id)
            .ok_or_else(|| {
                ApiError::not_found(format!("Change request `{id}` not found in this space."))
            })?;
        Ok(Hold {
            cr,
            locked: Some(tx),
        })
    }
}

/// A new revision of a change request, built from the change request as its [`Hold`] read it.
pub struct Landing<'a> {
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
/// change request is still at the revision the write was built from and is not merged (a
/// locked hold always is). `None` when it moved: the caller rebuilds on the new state
/// (see [`Attempts::next`]).
pub async fn land(state: &AppState, hold: Hold, landing: Landing<'_>) -> ApiResult<Option<String>> {
    let cr = &hold.cr;
    let now = state.now();
    let mut tx = match hold.locked {
        Some(tx) => tx,
        None => {
            let mut tx = state.db.begin().await?;
            // Take the change request before writing anything: a merge holding it finishes
            // first, and one that moved it since `cr` was read sends the caller round again.
            let Some(now_cr) = store::change_requests::lock(&mut tx, &cr.id).await? else {
                return Ok(None);
            };
            if now_cr.revision_id != cr.revision_id || now_cr.status == ChangeRequestStatus::Merged
            {
                return Ok(None);
            }
            tx
        }
    };
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

//! Change requests as the content workflows see them: finding one by id or number, the
//! space's current revision, the right to edit, and the write loop every change-request
//! write shares (build the new revision off the async threads, save it, compare-and-set,
//! rebuild and retry when another write landed first).

use crate::cache::Scope;
use std::sync::Arc;

use quire_content::model::{PageKind, Revision};

use crate::db::Tx;
use crate::domain::access::{Role, SpaceCtx};
use crate::domain::content;
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::change_requests::ChangeRequestRow;
use crate::store::revisions::NewRevision;
use crate::values::{ChangeRequestStatus, EditMode, RevisionType};

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

/// Opens a change request in the space at its current revision, by `by` (its subject at
/// most 100 characters). The API's `createChangeRequest` and a pushed branch both call it.
pub async fn create(
    state: &AppState,
    ctx: &SpaceCtx,
    by: &str,
    subject: String,
) -> ApiResult<ChangeRequestRow> {
    open(state, ctx, by, subject, None).await
}

/// Opens a change request starting from `base`, an earlier revision of the space: its
/// merge is three-way against that revision (a Git Sync import starts from the revision
/// last in step with the repository).
pub async fn create_from(
    state: &AppState,
    ctx: &SpaceCtx,
    by: &str,
    subject: String,
    base: &str,
) -> ApiResult<ChangeRequestRow> {
    open(state, ctx, by, subject, Some(base)).await
}

async fn open(
    state: &AppState,
    ctx: &SpaceCtx,
    by: &str,
    subject: String,
    base: Option<&str>,
) -> ApiResult<ChangeRequestRow> {
    ctx.require_live()?;
    crate::validate::length("subject", &subject, 0, 100)?;
    let now = state.now();
    let mut tx = state.db.begin().await?;
    tx.touches(&[Scope::Space(&ctx.space.id)]);
    // Counting the new change request first takes the space row's lock, so that creations
    // in the same space, on any node, number one after another instead of racing for the
    // same number; the space and the highest number are read after it.
    store::change_requests::count_transition(
        &mut tx,
        &ctx.space.id,
        None,
        Some(ChangeRequestStatus::Open),
    )
    .await?;
    let space = store::spaces::get_tx(&mut tx, &ctx.space.id)
        .await?
        .ok_or_else(|| ApiError::not_found("Space not found."))?;
    let start = base.unwrap_or(&space.revision_id).to_string();
    let c = ChangeRequestRow {
        id: new_id(),
        space_id: space.id.clone(),
        number: store::change_requests::next_number(&mut tx, &space.id).await?,
        status: ChangeRequestStatus::Open,
        subject,
        created_by: by.to_string(),
        created_at: now,
        updated_at: now,
        revision_id: start.clone(),
        revision_initial: start.clone(),
        revision_base: start,
        revision_merged: None,
        merged_by: None,
        merged_at: None,
        comments: 0,
    };
    store::change_requests::insert(&mut tx, &c).await?;
    tx.commit().await?;
    Ok(c)
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
        tx.touches(&[Scope::Space(&ctx.space.id)]);
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
    /// The pushed git commit that is this revision's (`domain::git::push`).
    pub pushed: Option<Pushed>,
}

/// A pushed commit that becomes a revision's own: its id, author and message.
pub struct Pushed {
    /// The commit's id.
    pub oid: String,
    /// `Name <address>`.
    pub author: String,
    /// Its message.
    pub message: String,
    /// Where its tree holds the revision's content, when not where Quire's layout puts it
    /// (a blob of `gitsync::carry::Placement`).
    pub placed: Option<String>,
}

/// Saves the revision and moves the change request to it in one transaction, only if the
/// change request is still at the revision the write was built from and is not merged (a
/// locked hold always is). `None` when it moved: the caller rebuilds on the new state
/// (see [`Attempts::next`]).
pub async fn land(state: &AppState, hold: Hold, landing: Landing<'_>) -> ApiResult<Option<String>> {
    let cr = &hold.cr;
    let now = state.now();
    // Hashed before the write lock is taken (see [`content::encode`]), unless an attempt
    // after a lost race already holds it.
    let saved = content::encode(state, &cr.space_id, landing.revision).await?;
    let mut tx = match hold.locked {
        Some(tx) => tx,
        None => {
            let mut tx = state.db.begin().await?;
            tx.touches(&[Scope::Space(&cr.space_id)]);
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
    content::write(&mut tx, &saved).await?;
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
    if let Some(p) = landing.pushed {
        let identity = store::git::Identity {
            revision_id: revision_id.clone(),
            author: p.author,
            message: p.message,
            oid: Some(p.oid),
            commit_oid: None,
            placed: p.placed,
            carried: 1,
        };
        store::git::record(&mut tx, &cr.space_id, &[identity]).await?;
    }
    tx.commit().await?;
    content::remember(state, saved);
    Ok(Some(revision_id))
}

/// The content of a revision of the space.
async fn revision_of(
    state: &AppState,
    space_id: &str,
    revision_id: &str,
) -> ApiResult<Arc<Revision>> {
    let row = content::revision_row(state, space_id, revision_id)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!("Revision `{revision_id}` not found in this space."))
        })?;
    content::load_in(state, space_id, &row.root).await
}

/// Applies an authoring batch to a change request as one new revision, for `by`; the API's
/// `updateChangeRequestContent` and the app's editor both call it. Without `seen`, the
/// batch applies to the change request as it is when it lands (another batch that landed
/// first is built upon). With `seen`, the revision the writer started from, the batch is
/// applied to that revision and merged three-way with what landed since: edits to other
/// pages or other lines are kept, and the same lines changed on both sides are a 409 naming
/// the page, with nothing changed.
pub async fn apply_batch(
    state: &AppState,
    ctx: &SpaceCtx,
    by: &str,
    cr: &str,
    changes: Vec<quire_content::edit::Change>,
    seen: Option<&str>,
) -> ApiResult<Vec<quire_content::edit::ChangeResult>> {
    use quire_content::edit::{apply_changes, ApplyContext};
    ctx.require_live()?;
    require_edit(ctx)?;
    let found = load(state, ctx, cr).await?;
    let mut attempts =
        Attempts::begin(state, "this batch", &[Target::ChangeRequest(&found.id)]).await;
    loop {
        let hold = attempts.next(state, ctx, &found.id).await?;
        let c = &hold.cr;
        if c.status == ChangeRequestStatus::Merged {
            return Err(ApiError::conflict(
                "A merged change request can no longer be edited.",
            ));
        }
        let current = revision_of(state, &ctx.space.id, &c.revision_id).await?;
        let start = match seen {
            Some(s) if s != c.revision_id => revision_of(state, &ctx.space.id, s).await?,
            _ => current.clone(),
        };
        let base = revision_of(state, &ctx.space.id, &c.revision_base).await?;
        let (rev, batch) = (start.clone(), changes.clone());
        let applied = tokio::task::spawn_blocking(move || {
            let mut new_id = new_id;
            let mut actx = ApplyContext {
                base: Some(&base),
                revisions: std::collections::HashMap::new(),
                new_id: &mut new_id,
            };
            apply_changes(&rev, &batch, &mut actx)
        })
        .await
        .map_err(ApiError::internal)?
        .map_err(batch_error)?;
        let revision = if Arc::ptr_eq(&start, &current) {
            applied.revision
        } else {
            merge3(start, current.clone(), Arc::new(applied.revision)).await?
        };
        if revision == *current {
            // Nothing changed (a page saved as it was): no revision.
            return Ok(applied.results);
        }
        let landing = Landing {
            revision,
            kind: RevisionType::Edits,
            parents: vec![c.revision_id.clone()],
            new_base: None,
            by,
            contributes: true,
            pushed: None,
        };
        match land(state, hold, landing).await? {
            Some(_) => return Ok(applied.results),
            // Another batch landed first: apply ours again on top of it.
            None => continue,
        }
    }
}

/// A batch's invalid change as the 400 names it: `changes[i].field`.
fn batch_error(err: quire_content::edit::EditError) -> ApiError {
    let field = if err.field.is_empty() {
        String::new()
    } else {
        format!(".{}", err.field)
    };
    ApiError::bad_request(format!("`changes[{}]{field}`: {}", err.index, err.message))
}

/// The content of a revision, read through `tx` (see [`content::load_tx`]).
pub async fn revision_in(
    state: &AppState,
    tx: &mut crate::db::Tx,
    space_id: &str,
    revision_id: &str,
) -> ApiResult<Arc<Revision>> {
    let root = store::revisions::root_of(tx, space_id, revision_id)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!("Revision `{revision_id}` not found in this space."))
        })?;
    content::load_tx(state, tx, space_id, &root).await
}

/// The 409 of a merge that conflicts, naming what conflicts.
pub fn conflict_error(conflicts: &[quire_content::merge::Conflict]) -> ApiError {
    let mut pages: Vec<String> = conflicts
        .iter()
        .map(|c| match &c.subject {
            quire_content::merge::ConflictSubject::Page { id, title } => {
                format!("page \"{title}\" ({id})")
            }
            quire_content::merge::ConflictSubject::File { id, name } => {
                format!("file \"{name}\" ({id})")
            }
            quire_content::merge::ConflictSubject::Variable { name } => {
                format!("variable `{name}`")
            }
            quire_content::merge::ConflictSubject::ReusableContent { id, title } => {
                format!("reusable content \"{title}\" ({id})")
            }
        })
        .collect();
    pages.dedup();
    ApiError::conflict(format!(
        "Conflicting changes in {}; nothing was changed.",
        pages.join(", ")
    ))
}

/// A three-way merge, off the async workers; 409 naming the conflicts.
pub async fn merge3(
    base: Arc<Revision>,
    ours: Arc<Revision>,
    theirs: Arc<Revision>,
) -> ApiResult<Revision> {
    tokio::task::spawn_blocking(move || quire_content::merge::merge(&base, &ours, &theirs))
        .await
        .map_err(ApiError::internal)?
        .map_err(|c| conflict_error(&c))
}

/// Merges a change request into its space (three-way merge against the space's current
/// content), for `user`: refused on a locked space; 409 naming the pages in conflict, with
/// nothing changed. Returns the merge revision. The API's `mergeChangeRequest` and the
/// app's merge button both call it.
pub async fn merge(
    state: &AppState,
    ctx: &SpaceCtx,
    user: &crate::ids::UserId,
    cr: &str,
) -> ApiResult<String> {
    merge_as(state, ctx, user, cr, false).await
}

/// [`merge`]; `pushed_to_main`: the change request a push to main opened, whose head, when
/// it is the pushed tree read exactly on main as it is, becomes main's commit as pushed (a
/// fast-forward) rather than a merge commit.
pub async fn merge_as(
    state: &AppState,
    ctx: &SpaceCtx,
    user: &crate::ids::UserId,
    cr: &str,
    pushed_to_main: bool,
) -> ApiResult<String> {
    ctx.require_live()?;
    ctx.require(Role::Edit, "merge change requests in this space")?;
    let found = load(state, ctx, cr).await?;
    let mut attempts = Attempts::begin(
        state,
        "the merge",
        &[
            Target::ChangeRequest(&found.id),
            Target::Space(&ctx.space.id),
        ],
    )
    .await;
    let revision = loop {
        attempts.take().await?;
        // The merge takes the change request first and holds it to the end: a batch racing it
        // waits, then finds it merged (409), so nothing it acknowledged is left behind.
        let mut tx = state.db.begin().await?;
        tx.touches(&[Scope::Space(&ctx.space.id)]);
        let c = store::change_requests::lock(&mut tx, &found.id)
            .await?
            .ok_or_else(|| ApiError::not_found(format!("Change request `{cr}` not found.")))?;
        if c.status == ChangeRequestStatus::Merged {
            return Err(ApiError::conflict("This change request is already merged."));
        }
        let space = store::spaces::get_tx(&mut tx, &ctx.space.id)
            .await?
            .ok_or_else(|| ApiError::not_found("Space not found."))?;
        if space.edit_mode == EditMode::Locked {
            return Err(ApiError::forbidden(
                "The space is locked (`editMode` is `locked`): nothing can be merged into it.",
            ));
        }
        let mine = revision_in(state, &mut tx, &ctx.space.id, &c.revision_id).await?;
        let merged = if space.revision_id == c.revision_base {
            (*mine).clone()
        } else {
            let base = revision_in(state, &mut tx, &ctx.space.id, &c.revision_base).await?;
            let main = revision_in(state, &mut tx, &ctx.space.id, &space.revision_id).await?;
            merge3(base, main, mine).await?
        };
        let now = state.now();
        let saved = content::save(state, &mut tx, &ctx.space.id, merged).await?;
        let revision_id = new_id();
        store::revisions::insert(
            &mut tx,
            &NewRevision {
                id: &revision_id,
                space_id: &ctx.space.id,
                parents: &[space.revision_id.clone(), c.revision_id.clone()],
                kind: RevisionType::Merge,
                root: &saved.root,
                created_by: Some(user),
                created_at: now,
            },
        )
        .await?;
        if !content::advance_space(&mut tx, &space.id, &space.revision_id, &revision_id, now)
            .await?
        {
            // The space moved meanwhile (another merge): merge again against its new content.
            continue;
        }
        let expect = store::change_requests::MergeExpect {
            revision: &c.revision_id,
            status: c.status,
        };
        if !store::change_requests::mark_merged(&mut tx, &c.id, &expect, &revision_id, user, now)
            .await?
        {
            // Held since it was read: cannot move, but a refusal must not mark it merged.
            continue;
        }
        store::change_requests::count_transition(
            &mut tx,
            &space.id,
            Some(c.status),
            Some(ChangeRequestStatus::Merged),
        )
        .await?;
        crate::domain::search::reindex(state, &mut tx, &space.id, &revision_id, saved.revision())
            .await?;
        // A push to main moves main to the pushed commit (a fast-forward): what was pushed is
        // main as pushed. Only a head read exactly as pushed (its placement recorded)
        // straight on main as it is: its commit then descends from main's, and its tree is
        // the content.
        if pushed_to_main && space.revision_id == c.revision_base {
            let head = store::git::identity_tx(&mut tx, &space.id, &c.revision_id).await?;
            let on_main = store::revisions::get(&state.db, &space.id, &c.revision_id)
                .await?
                .and_then(|r| r.parent_ids().ok())
                .is_some_and(|p| p == [space.revision_id.clone()]);
            if let Some(head) = head.filter(|_| on_main) {
                if head.oid.is_some() && head.placed.is_some() {
                    let identity = store::git::Identity {
                        revision_id: revision_id.clone(),
                        commit_oid: None,
                        ..head
                    };
                    store::git::record(&mut tx, &space.id, &[identity]).await?;
                }
            }
        }
        // A space kept in sync with a repository exports each merge.
        let subject = match c.subject.trim() {
            "" => "No subject",
            s => s,
        };
        let message = format!("GITBOOK-{}: {subject}", c.number);
        let exports = crate::domain::git::sync::merged(&mut tx, &space.id, &message, now).await?;
        tx.commit().await?;
        if exports {
            state.jobs_due.notify_one();
        }
        content::remember(state, saved);
        break revision_id;
    };
    Ok(revision)
}

/// Records `user`'s review (`approved` or `changes-requested`) of a change request's current
/// content; it fulfils the user's pending request. Returns the change request and the review.
pub async fn review(
    state: &AppState,
    ctx: &SpaceCtx,
    user: &crate::ids::UserId,
    cr: &str,
    status: &str,
    comment: Option<crate::domain::comments::BodyIn>,
) -> ApiResult<(ChangeRequestRow, store::reviews::ReviewRow)> {
    ctx.require(Role::Review, "review change requests in this space")?;
    if !matches!(status, "approved" | "changes-requested") {
        return Err(ApiError::bad_request(
            "`status` must be one of `approved`, `changes-requested`.",
        ));
    }
    let comment = comment.map(|b| b.into_markdown("comment")).transpose()?;
    let c = load(state, ctx, cr).await?;
    if matches!(
        c.status,
        ChangeRequestStatus::Merged | ChangeRequestStatus::Archived
    ) {
        return Err(ApiError::bad_request(format!(
            "Change request `{}` is {}: it can no longer be reviewed.",
            c.number,
            c.status.as_str()
        )));
    }
    let now = state.now();
    let mut tx = state.db.begin().await?;
    tx.touches(&[Scope::Space(&ctx.space.id)]);
    let requested_by = store::reviews::requester(&mut tx, &c.id, user.as_str()).await?;
    let row = store::reviews::ReviewRow {
        id: new_id(),
        change_request_id: c.id.clone(),
        reviewer_id: user.to_string(),
        requested_by,
        revision_id: c.revision_id.clone(),
        status: status.to_string(),
        created_at: now,
        updated_at: now,
    };
    store::reviews::submit(&mut tx, &row).await?;
    if let Some(markdown) = comment {
        // The review's words join the change request's discussion, with the review.
        let thread = crate::domain::comments::Thread {
            ctx: ctx.clone(),
            cr: Some(c.clone()),
        };
        crate::domain::comments::post_in(state, &mut tx, &thread, user, markdown).await?;
    }
    tx.commit().await?;
    Ok((c, row))
}

/// The content of a revision of the space in `ctx`.
async fn content_of(
    state: &AppState,
    ctx: &SpaceCtx,
    revision_id: &str,
) -> ApiResult<Arc<Revision>> {
    let row = content::revision_row(state, &ctx.space.id, revision_id)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!("Revision `{revision_id}` not found in this space."))
        })?;
    content::load_in(state, &ctx.space.id, &row.root).await
}

/// Pulls the space's current content into a change request (three-way merge), for `user`;
/// 409 naming the pages when both sides changed the same thing, with nothing changed.
/// Returns the change request's revision afterwards. The API's `updateChangeRequest` and
/// the app's "Update from main" both call it.
pub async fn update_from_main(
    state: &AppState,
    ctx: &SpaceCtx,
    user: &crate::ids::UserId,
    cr: &str,
) -> ApiResult<String> {
    update_from_main_resolving(state, ctx, user, cr, None).await
}

/// Pages whose texts conflict in an update from main, as they stand on each side, and
/// the revisions they were read at: what a person resolves line by line.
pub struct TextConflicts {
    /// The change request's revision.
    pub cr_revision: String,
    /// The space's revision (main).
    pub main_revision: String,
    /// Each page whose text both sides changed on the same lines: id, title, and its text
    /// at the change request's base, in the change request, on main.
    pub pages: Vec<(String, String, String, String, String)>,
    /// Whether other conflicts remain (not of page texts), which no choice of lines solves.
    pub others: bool,
}

/// The conflicts an update of change request `cr` from main would meet, for a person to
/// resolve; `None` when it would merge cleanly (or main has not moved).
pub async fn update_conflicts(
    state: &AppState,
    ctx: &SpaceCtx,
    cr: &str,
) -> ApiResult<Option<TextConflicts>> {
    use quire_content::merge::{ConflictKind, ConflictSubject};
    let c = load(state, ctx, cr).await?;
    let main_id = current_revision(state, &ctx.space.id).await?;
    if main_id == c.revision_base {
        return Ok(None);
    }
    let base = content_of(state, ctx, &c.revision_base).await?;
    let main = content_of(state, ctx, &main_id).await?;
    let mine = content_of(state, ctx, &c.revision_id).await?;
    let (b, m, t) = (base.clone(), mine.clone(), main.clone());
    let found = tokio::task::spawn_blocking(move || quire_content::merge::merge(&b, &m, &t))
        .await
        .map_err(ApiError::internal)?;
    let Err(conflicts) = found else {
        return Ok(None);
    };
    let text = |rev: &Revision, id: &str| match rev.page(id).map(|p| &p.kind) {
        Some(PageKind::Document(d)) => Some(d.markdown.clone()),
        _ => None,
    };
    let mut pages = Vec::new();
    let mut others = false;
    for conflict in &conflicts {
        let texts = match (&conflict.subject, &conflict.kind) {
            (ConflictSubject::Page { id, title }, ConflictKind::Body { .. }) => {
                match (text(&base, id), text(&mine, id), text(&main, id)) {
                    (Some(b), Some(o), Some(t)) => Some((id.clone(), title.clone(), b, o, t)),
                    _ => None,
                }
            }
            _ => None,
        };
        match texts {
            Some(page) if !pages.iter().any(|p: &(String, _, _, _, _)| p.0 == page.0) => {
                pages.push(page)
            }
            Some(_) => {}
            None => others = true,
        }
    }
    Ok(Some(TextConflicts {
        cr_revision: c.revision_id,
        main_revision: main_id,
        pages,
        others,
    }))
}

/// A person's resolution of an update's text conflicts: the revisions they compared, and
/// each page's text as it should stand.
pub struct Resolution {
    /// The change request's revision they saw.
    pub cr_revision: String,
    /// Main's revision they saw.
    pub main_revision: String,
    /// Page id and its resolved text.
    pub texts: Vec<(String, String)>,
}

/// [`update_from_main`], with the texts of conflicting pages resolved: each resolved page
/// merges as if its text on main were its base and the resolved text its change. 409 when
/// either side moved since the resolution was made (it was made against other texts).
pub async fn update_from_main_resolving(
    state: &AppState,
    ctx: &SpaceCtx,
    user: &crate::ids::UserId,
    cr: &str,
    resolution: Option<&Resolution>,
) -> ApiResult<String> {
    ctx.require_live()?;
    require_edit(ctx)?;
    let found = load(state, ctx, cr).await?;
    let mut attempts =
        Attempts::begin(state, "the update", &[Target::ChangeRequest(&found.id)]).await;
    let revision = loop {
        let hold = attempts.next(state, ctx, &found.id).await?;
        let c = &hold.cr;
        if c.status == ChangeRequestStatus::Merged {
            return Err(ApiError::conflict(
                "A merged change request can no longer be updated.",
            ));
        }
        let main_id = current_revision(state, &ctx.space.id).await?;
        if main_id == c.revision_base {
            break c.revision_id.clone();
        }
        let mut base = content_of(state, ctx, &c.revision_base).await?;
        let main = content_of(state, ctx, &main_id).await?;
        let mut mine = content_of(state, ctx, &c.revision_id).await?;
        if let Some(r) = resolution {
            if r.cr_revision != c.revision_id || r.main_revision != main_id {
                return Err(ApiError::conflict(
                    "The change request or main changed since these choices were made; compare again.",
                ));
            }
            let (b, m) = (Arc::make_mut(&mut base), Arc::make_mut(&mut mine));
            for (page, text) in &r.texts {
                let main_text = match main.page(page).map(|p| &p.kind) {
                    Some(PageKind::Document(d)) => d.markdown.clone(),
                    _ => continue,
                };
                if let Some(PageKind::Document(d)) = b.page_mut(page).map(|p| &mut p.kind) {
                    d.markdown = main_text;
                }
                if let Some(PageKind::Document(d)) = m.page_mut(page).map(|p| &mut p.kind) {
                    d.markdown = text.clone();
                }
            }
        }
        let merged = merge3(base, mine, main).await?;
        let landing = Landing {
            revision: merged,
            kind: RevisionType::Update,
            parents: vec![c.revision_id.clone(), main_id.clone()],
            new_base: Some(&main_id),
            by: user,
            contributes: false,
            pushed: None,
        };
        if let Some(revision) = land(state, hold, landing).await? {
            break revision;
        }
    };
    Ok(revision)
}

/// Sets a change request's subject and status (`draft`, `open` or `archived`; merging is
/// done by merging): refused once merged. The API's `updateChangeRequestById` and the app
/// both call it.
pub async fn update_meta(
    state: &AppState,
    ctx: &SpaceCtx,
    cr: &str,
    subject: Option<String>,
    status: Option<ChangeRequestStatus>,
) -> ApiResult<ChangeRequestRow> {
    ctx.require_live()?;
    if let Some(subject) = &subject {
        crate::validate::length("subject", subject, 0, 100)?;
    }
    if status == Some(ChangeRequestStatus::Merged) {
        return Err(ApiError::bad_request(
            "`status` cannot be `merged`: merge the change request instead.",
        ));
    }
    let found = load(state, ctx, cr).await?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[Scope::Space(&ctx.space.id)]);
    // Taken inside the transaction so the counters follow the true previous status and a
    // merge cannot be undone by this write.
    let mut c = store::change_requests::lock(&mut tx, &found.id)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!("Change request `{cr}` not found in this space."))
        })?;
    if c.status == ChangeRequestStatus::Merged {
        return Err(ApiError::conflict(
            "A merged change request can no longer be changed.",
        ));
    }
    if let Some(subject) = subject {
        c.subject = subject;
    }
    let previous = c.status;
    if let Some(status) = status {
        c.status = status;
    }
    c.updated_at = state.now();
    store::change_requests::update_meta(&mut tx, &c).await?;
    if previous != c.status {
        store::change_requests::count_transition(
            &mut tx,
            &c.space_id,
            Some(previous),
            Some(c.status),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(c)
}

/// Most reviewers one request names.
const MAX_REVIEWERS: usize = 50;

/// Asks `users_in` (members with the review role on the space) to review change request
/// `cr` on behalf of `user` (edit role), with a new subject when given.
pub async fn request_reviewers(
    state: &AppState,
    ctx: &SpaceCtx,
    user: &crate::ids::UserId,
    cr: &str,
    users_in: &[String],
    subject: Option<String>,
) -> ApiResult<Vec<store::reviews::RequestedRow>> {
    ctx.require(Role::Edit, "request reviewers in this space")?;
    if users_in.is_empty() || users_in.len() > MAX_REVIEWERS {
        return Err(ApiError::bad_request(format!(
            "`users` must name 1 to {MAX_REVIEWERS} users."
        )));
    }
    if let Some(subject) = &subject {
        crate::validate::length("subject", subject, 0, 100)?;
    }
    let c = load(state, ctx, cr).await?;
    let mut users: Vec<&str> = users_in.iter().map(String::as_str).collect();
    users.sort_unstable();
    users.dedup();
    for user in &users {
        let org = store::orgs::get_for_user(
            &state.db,
            &ctx.space.org_id,
            &crate::ids::UserId::new(user.to_string()),
        )
        .await?;
        let member_role = org
            .as_ref()
            .and_then(|o| o.role.as_deref())
            .and_then(Role::parse);
        let grants = crate::domain::access::grants::Grants::load(
            state,
            &ctx.space.org_id,
            &crate::ids::UserId::new(user.to_string()),
            member_role,
        )
        .await?;
        let may_review = org.is_some_and(|o| o.member_id.is_some())
            && grants
                .space_role(&ctx.space)
                .is_some_and(|r| r >= Role::Review);
        if !may_review {
            return Err(ApiError::bad_request(format!(
                "`users`: `{user}` cannot review this space (not a member with the review role on it)."
            )));
        }
    }
    let now = state.now();
    let mut tx = state.db.begin().await?;
    tx.touches(&[Scope::Space(&ctx.space.id)]);
    if let Some(subject) = subject.filter(|s| *s != c.subject) {
        // Read again under the write lock, so that a status changed meanwhile is kept.
        if let Some(mut changed) = store::change_requests::lock(&mut tx, &c.id).await? {
            changed.subject = subject;
            changed.updated_at = now;
            store::change_requests::update_meta(&mut tx, &changed).await?;
        }
    }
    store::reviews::request(&mut tx, &c.id, &users, user.as_str(), &c.revision_id, now).await?;
    let rows = store::reviews::requested_of(&mut tx, &c.id, &users).await?;
    tx.commit().await?;
    Ok(rows)
}

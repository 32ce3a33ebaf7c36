//! Git Sync with a repository on any host (GitHub, GitLab, Bitbucket, Gitea, a bare
//! repository behind `git http-backend`): `importGitRepository`, `exportToGitRepository`
//! and the state `getSpaceGitInfo` reports. Each operation is a durable job; every request
//! goes through the safe fetcher (its address rules, caps and time limits), and no git
//! program runs: the smart HTTP protocol's few messages are made and read in
//! `quire_content::convert::git`.
//!
//! The sync keeps one pair in step: the branch's commit and the space's revision that hold
//! the same content (`synced_commit`, `synced_revision`).
//! - **Export** commits the space's main content on top of the branch's head, carried from
//!   the head's tree (`gitsync::carry`): only the files of what main changed are written,
//!   by their changed lines, and every other file stays as the branch holds it (an empty
//!   branch gets Git Sync's layout). Only the objects the repository lacks are sent. A
//!   branch that moved since the last sync is not overwritten: import first, or export with
//!   `force` (a new commit on top; no history is ever rewritten).
//! - **Import** reads the branch's head (that commit alone) with Git Sync's rules against
//!   the revision last in step and where its content is in the branch's tree
//!   (`synced_placed`), as a change request from that revision, merged at once with the
//!   three-way merge unless `standalone`. A conflict leaves the change request open and is
//!   reported; nothing is forced.
//! - Once a space was exported, each merge into main exports a commit (a job enqueued in
//!   the merge's transaction).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use quire_content::convert::git::{self as wire, Advertisement};
use quire_content::gitsync::carry::{Leaf, Placement, Tree};
use quire_content::gitsync::objects::{self, Kind, Object, Oid, Signature};
use quire_content::gitsync::{self, Content};
use quire_content::model::Revision;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::domain::access::{Role, SpaceCtx};
use crate::domain::change_requests::{self as crs, Attempts, Landing};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::git::SyncRow;
use crate::values::RevisionType;

/// Job kind of a sync operation.
pub const JOB: &str = "git-sync";

/// The job that syncs a space with its repository.
pub const JOB_KIND: crate::state::JobKind = crate::state::JobKind {
    name: JOB,
    run: |state, job| Box::pin(run(state, &job.id, &job.payload)),
    given_up: None,
};

/// Longest a reference advertisement may be.
const MAX_ADVERTISEMENT: usize = 4 * 1024 * 1024;

/// How long one request to the repository may take.
const TIMEOUT: Duration = Duration::from_secs(120);

/// Which way an operation goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// From the repository into the space.
    Import,
    /// From the space into the repository.
    Export,
}

impl Direction {
    /// The wire name (`GitSyncOperationDirection`).
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Import => "import",
            Direction::Export => "export",
        }
    }
}

/// What `importGitRepository` or `exportToGitRepository` asks for.
#[derive(Debug, Default)]
pub struct Request {
    /// The repository (smart HTTP), credentials allowed in it.
    pub url: String,
    /// The branch, as `refs/heads/{name}`.
    pub reference: String,
    /// The export's commit message.
    pub message: Option<String>,
    /// Where the repository's tree is browsed (`repoTreeURL`, `gitInfo.url`).
    pub tree_url: Option<String>,
    /// Prefix of a commit's URL (`repoCommitURL`).
    pub commit_url: Option<String>,
    /// The folder of the repository holding the content (`repoProjectDirectory`).
    pub project_dir: Option<String>,
    /// `gitInfo.provider`.
    pub provider: Option<String>,
    /// Import into a change request left open.
    pub standalone: bool,
    /// Export even if the branch moved since the last sync.
    pub force: bool,
}

/// A job's payload: no URL (it may hold credentials, and payloads are logged).
#[derive(Serialize, Deserialize)]
struct Payload {
    space: String,
    direction: Direction,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    standalone: bool,
    #[serde(default)]
    force: bool,
}

fn bad(field: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("`{field}` {why}."))
}

/// An http(s) URL with a host, no query and no fragment.
fn check_url(field: &str, value: &str) -> ApiResult<()> {
    let url = Url::parse(value).map_err(|_| bad(field, "must be an absolute http(s) URL"))?;
    if !matches!(url.scheme(), "http" | "https")
        || url.host_str().is_none()
        || url.query().is_some()
        || url.fragment().is_some()
        || value.len() > 2048
    {
        return Err(bad(
            field,
            "must be an http(s) URL without query or fragment, at most 2048 characters",
        ));
    }
    Ok(())
}

/// The folder, cleaned (`docs/`, `/docs` → `docs`); `None` for the root.
fn check_dir(value: Option<&str>) -> ApiResult<Option<String>> {
    let Some(dir) = value.map(|d| d.trim_matches('/')).filter(|d| !d.is_empty()) else {
        return Ok(None);
    };
    let ok = dir.len() <= 500
        && dir.split('/').count() <= 16
        && dir.split('/').all(|s| {
            !s.is_empty()
                && s != "."
                && s != ".."
                && !s.chars().any(|c| c.is_control() || c == '\\')
        });
    if !ok {
        return Err(bad(
            "repoProjectDirectory",
            "must be a relative folder of the repository",
        ));
    }
    Ok(Some(dir.to_string()))
}

/// Checks the request, records it and starts the operation (a job); the caller answers 204.
pub async fn start(
    state: &AppState,
    ctx: &SpaceCtx,
    by: &str,
    direction: Direction,
    req: Request,
) -> ApiResult<()> {
    ctx.require_live()?;
    ctx.require(Role::Admin, "set up Git Sync on this space")?;
    check_url("url", &req.url)?;
    req.reference
        .strip_prefix("refs/heads/")
        .filter(|b| super::push::branch_name_ok(b))
        .ok_or_else(|| bad("ref", "must name a branch, as `refs/heads/main`"))?;
    if direction == Direction::Export {
        let message = req.message.as_deref().unwrap_or("");
        if message.trim().is_empty() {
            return Err(bad("commitMessage", "is required"));
        }
        crate::validate::length("commitMessage", message, 1, 10_000)?;
    }
    for (field, value) in [
        ("repoTreeURL", &req.tree_url),
        ("repoCommitURL", &req.commit_url),
    ] {
        if let Some(v) = value {
            check_url(field, v)?;
        }
    }
    let project_dir = check_dir(req.project_dir.as_deref())?;
    if let Some(p) = &req.provider {
        if !matches!(p.as_str(), "github" | "gitlab") {
            return Err(bad("gitInfo.provider", "must be `github` or `gitlab`"));
        }
    }
    let now = state.now();
    let row = SyncRow {
        space_id: ctx.space.id.clone(),
        url: req.url.clone(),
        ref_name: req.reference.clone(),
        provider: req.provider.clone(),
        tree_url: req.tree_url.clone(),
        commit_url: req.commit_url.clone(),
        project_dir,
        exports: i64::from(direction == Direction::Export),
        configured_by: by.to_string(),
        synced_commit: None,
        synced_revision: None,
        synced_placed: None,
        op_direction: Some(direction.as_str().to_string()),
        op_state: None,
        op_started: None,
        op_ended: None,
        op_error: None,
        running_job: None,
        updated_at: now,
    };
    let payload = serde_json::to_string(&Payload {
        space: ctx.space.id.clone(),
        direction,
        message: req.message,
        standalone: req.standalone,
        force: req.force,
    })
    .map_err(ApiError::internal)?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[]);
    store::git::configure(&mut tx, &row).await?;
    store::jobs::enqueue(&mut tx, JOB, &payload, now, now).await?;
    tx.commit().await?;
    state.jobs_due.notify_one();
    Ok(())
}

/// In a merge's transaction: when the space is exported, enqueues the export of the new
/// main content with `message`.
pub async fn merged(
    tx: &mut crate::db::Tx,
    space_id: &str,
    message: &str,
    now: i64,
) -> ApiResult<bool> {
    if !store::git::exports_tx(tx, space_id).await? {
        return Ok(false);
    }
    let payload = serde_json::to_string(&Payload {
        space: space_id.to_string(),
        direction: Direction::Export,
        message: Some(message.to_string()),
        standalone: false,
        force: false,
    })
    .map_err(ApiError::internal)?;
    store::jobs::enqueue(tx, JOB, &payload, now, now).await?;
    Ok(true)
}

/// How long a claimed sync may run before another job may take the space over (a node that
/// died mid-operation leaves its claim).
const STALE_MS: i64 = 15 * 60 * 1000;

/// How soon a sync job that found another one running for its space tries again.
const AGAIN_MS: i64 = 2_000;

/// The job: runs the operation and records how it ended. One sync runs per space at a time
/// (an import and the export its merge starts, two nodes): a job that finds another
/// running comes back in two seconds. A failure is recorded for the space
/// (`getSpaceGitInfo`), not retried: the next request or merge starts again.
pub async fn run(state: &AppState, job: &str, payload: &str) -> anyhow::Result<()> {
    let p: Payload = serde_json::from_str(payload)?;
    let now = state.now();
    if store::git::sync(&state.db, &p.space).await?.is_none() {
        return Ok(());
    }
    let claimed = store::git::sync_claim(
        &state.db,
        &p.space,
        job,
        p.direction.as_str(),
        now,
        now - STALE_MS,
    )
    .await?;
    if !claimed {
        let mut tx = state.db.begin().await?;
        tx.touches(&[]);
        store::jobs::enqueue(&mut tx, JOB, payload, now + AGAIN_MS, now).await?;
        tx.commit().await?;
        return Ok(());
    }
    // Read after the claim: what the previous operation recorded.
    let Some(row) = store::git::sync(&state.db, &p.space).await? else {
        return Ok(());
    };
    let outcome = match p.direction {
        Direction::Import => import(state, &row, &p).await,
        Direction::Export => export(state, &row, &p).await,
    };
    let now = state.now();
    match outcome {
        Ok(synced) => {
            let placed = match synced.as_ref().and_then(|s| s.placement.as_ref()) {
                Some(p) => Some(super::carry_blob(state, &row.space_id, p).await?),
                None => None,
            };
            let synced = synced.as_ref().map(|s| store::git::Synced {
                commit: &s.commit,
                revision: &s.revision,
                placed: placed.as_deref(),
            });
            store::git::sync_ended(&state.db, &row.space_id, None, synced, now).await?;
        }
        Err(why) => {
            tracing::info!(space = %row.space_id, direction = p.direction.as_str(), reason = %why, "git sync failed");
            store::git::sync_ended(&state.db, &row.space_id, Some(&why), None, now).await?;
        }
    }
    Ok(())
}

/// What failed, as the person who set up the sync reads it.
type Failed = String;

/// What an operation left in step: the branch's commit, the revision with the same content,
/// and where that content is in the commit's tree (paths inside the project folder).
struct InStep {
    commit: String,
    revision: String,
    placement: Option<Placement>,
}

/// Where the revision last in step is in the branch's tree, when it was kept (syncs set up
/// before it was are read as Quire's own layout).
async fn synced_placement(state: &AppState, row: &SyncRow) -> Result<Option<Placement>, Failed> {
    match &row.synced_placed {
        Some(blob) => Ok(Some(
            super::load_placement(state, blob).await.map_err(failed)?,
        )),
        None => Ok(None),
    }
}

fn failed(e: impl std::fmt::Display) -> Failed {
    e.to_string()
}

/// The space as the user who set up the sync sees it now (their access is checked anew).
async fn space_for(
    state: &AppState,
    row: &SyncRow,
) -> Result<(SpaceCtx, crate::store::users::UserRow), Failed> {
    let user = store::users::get(&state.db, &row.configured_by)
        .await
        .map_err(failed)?
        .ok_or("the user who set up Git Sync no longer exists")?;
    let caller = crate::domain::auth::Caller::unscoped(Arc::new(user.clone()));
    let ctx = crate::domain::access::load_space(state, &caller, &row.space_id)
        .await
        .map_err(|_| "the user who set up Git Sync can no longer see the space".to_string())?;
    ctx.require_live().map_err(failed)?;
    Ok((ctx, user))
}

/// The repository's refs as `service` (`git-upload-pack`, `git-receive-pack`) advertises
/// them.
async fn advertised(state: &AppState, url: &str, service: &str) -> Result<Advertisement, Failed> {
    let base = url.trim_end_matches('/');
    let got = state
        .fetcher
        .get(
            &format!("{base}/info/refs?service={service}"),
            MAX_ADVERTISEMENT,
        )
        .await
        .map_err(|e| format!("the repository could not be reached: {e}"))?;
    if got.content_type.as_deref() != Some(&format!("application/x-{service}-advertisement")) {
        return Err("the URL is not a git repository served over smart HTTP".into());
    }
    wire::parse_refs(&got.bytes).map_err(|e| format!("the repository {}", e.0))
}

/// The objects of `commit` and its tree (that commit alone), by id.
async fn fetch_commit(
    state: &AppState,
    url: &str,
    ad: &Advertisement,
    commit: &str,
) -> Result<HashMap<String, wire::Object>, Failed> {
    let body = wire::upload_request(ad, commit);
    let got = state
        .fetcher
        .post_opaque(
            &format!("{}/git-upload-pack", url.trim_end_matches('/')),
            "application/x-git-upload-pack-request",
            &body,
            state.config.max_import_bytes,
            TIMEOUT,
        )
        .await
        .map_err(|e| format!("the repository could not be read: {e}"))?;
    let ad = ad.clone();
    let limits = super::push::limits(state);
    tokio::task::spawn_blocking(move || {
        let pack = wire::pack_of_response(&got.bytes, &ad)?;
        wire::read_pack(&pack, &limits)
    })
    .await
    .map_err(failed)?
    .map_err(|e| format!("the repository's answer {}", e.0))
}

/// The tree a commit names.
fn tree_of(objects: &HashMap<String, wire::Object>, commit: &str) -> Option<String> {
    let c = objects.get(commit).filter(|o| o.kind == 1)?;
    String::from_utf8_lossy(&c.data)
        .lines()
        .find_map(|l| l.strip_prefix("tree ").map(|t| t.trim().to_string()))
}

/// The branch of the row, without `refs/heads/`.
fn branch(row: &SyncRow) -> &str {
    row.ref_name
        .strip_prefix("refs/heads/")
        .unwrap_or(&row.ref_name)
}

/// Imports the branch's head; what is now in step.
async fn import(state: &AppState, row: &SyncRow, p: &Payload) -> Result<Option<InStep>, Failed> {
    let (ctx, user) = space_for(state, row).await?;
    let by = user.id.as_str();
    ctx.require(Role::Edit, "import into this space")
        .map_err(failed)?;
    let ad = advertised(state, &row.url, "git-upload-pack").await?;
    let head = ad
        .commit_of(&row.ref_name)
        .ok_or_else(|| format!("the repository has no branch `{}`", branch(row)))?
        .to_string();
    if row.synced_commit.as_deref() == Some(head.as_str()) && !p.force {
        return Ok(None);
    }
    let objects = fetch_commit(state, &row.url, &ad, &head).await?;
    let limits = super::push::limits(state);
    let subject = objects
        .get(&head)
        .and_then(|c| {
            let text = String::from_utf8_lossy(&c.data).into_owned();
            text.split_once("\n\n")
                .and_then(|(_, m)| m.lines().next().map(str::to_string))
        })
        .unwrap_or_default();
    let objects = Arc::new(objects);
    let (files, _) = branch_files(&objects, &head, row.project_dir.as_deref(), &limits).await?;
    let (base_id, placement) = in_step_base(state, &ctx, row).await?;
    let base = super::push::revision(state, &ctx, &base_id)
        .await
        .map_err(failed)?;
    let read = {
        let base = base.clone();
        tokio::task::spawn_blocking(move || {
            let mut ids = crate::ids::new_id;
            gitsync::read_tree_placed(files, &base, placement.as_ref(), &limits, &mut ids)
        })
        .await
        .map_err(failed)?
        .map_err(|e| e.0)?
    };
    let placement = Some(read.placement.clone());
    let content = super::push::with_new_files(state, &ctx.space.id, read)
        .await
        .map_err(failed)?;
    if *base == content {
        // Nothing changed since the last sync: in step already.
        return Ok(Some(InStep {
            commit: head,
            revision: base_id,
            placement,
        }));
    }
    let short: String = head.chars().take(7).collect();
    let mut title = format!("Import {short} from git");
    if !subject.trim().is_empty() {
        title = format!("{title}: {}", subject.trim());
    }
    let title: String = title.chars().take(100).collect();
    let c = crs::create_from(state, &ctx, by, title, &base_id)
        .await
        .map_err(failed)?;
    let mut attempts =
        Attempts::begin(state, "the import", &[crs::Target::ChangeRequest(&c.id)]).await;
    let hold = attempts.next(state, &ctx, &c.id).await.map_err(failed)?;
    let landing = Landing {
        revision: content,
        kind: RevisionType::Edits,
        parents: vec![base_id.clone()],
        new_base: None,
        by,
        contributes: true,
        pushed: None,
    };
    let imported = crs::land(state, hold, landing)
        .await
        .map_err(failed)?
        .ok_or("the change request moved while the import was written")?;
    drop(attempts);
    if p.standalone {
        // The space's content stays as it is: the sync's state too.
        return Ok(None);
    }
    crs::merge(state, &ctx, &user.id, &c.id)
        .await
        .map_err(|e| {
            format!(
                "{e} The imported content waits in change request #{} ({}).",
                c.number,
                state.url(&format!("/s/{}/~/changes/{}", ctx.space.id, c.number))
            )
        })?;
    Ok(Some(InStep {
        commit: head,
        revision: imported,
        placement,
    }))
}

/// Exports main; what is now in step.
async fn export(state: &AppState, row: &SyncRow, p: &Payload) -> Result<Option<InStep>, Failed> {
    let (ctx, user) = space_for(state, row).await?;
    let main_id = crate::domain::access::current_revision(state, &ctx.space.id)
        .await
        .map_err(failed)?;
    let ad = advertised(state, &row.url, "git-receive-pack").await?;
    let head = ad.commit_of(&row.ref_name).map(str::to_string);
    if let (Some(h), Some(synced)) = (&head, &row.synced_commit) {
        if h != synced && !p.force {
            return Err(format!(
                "the branch `{}` has commits that are not in the space: import them first, or export with `force`",
                branch(row)
            ));
        }
    }
    if head.is_some()
        && head == row.synced_commit
        && row.synced_revision.as_deref() == Some(main_id.as_str())
    {
        return Ok(None);
    }
    // What the repository holds at its head: sent objects leave those out, and a project
    // folder is put in the tree around it.
    let remote = Arc::new(match &head {
        Some(h) => {
            let up = advertised(state, &row.url, "git-upload-pack").await?;
            fetch_commit(state, &row.url, &up, h).await?
        }
        None => HashMap::new(),
    });
    let content = super::push::revision(state, &ctx, &main_id)
        .await
        .map_err(failed)?;
    // The branch's files, carried: only what main changed since is laid out (see
    // [`remote_parent`]); with nothing to carry from, main is laid out whole.
    let parent = match &head {
        Some(h) => Some(remote_parent(state, &ctx, row, &remote, h).await?),
        None => None,
    };
    let (laid, placement): (Vec<(String, Carried)>, Placement) = match parent {
        Some((revision, placement, tree)) => {
            let content = content.clone();
            let from = remote.clone();
            tokio::task::spawn_blocking(move || {
                let parents = [gitsync::carry::Parent {
                    revision: &revision,
                    placement: &placement,
                    tree: &tree,
                }];
                let plan = gitsync::carry::plan(&parents, &content);
                let old: HashMap<Oid, Vec<u8>> = plan
                    .needs()
                    .into_iter()
                    .filter_map(|id| Some((id, from.get(&id.to_hex())?.data.clone())))
                    .collect();
                let placement = plan.placement().clone();
                let laid = plan
                    .lay(&parents, &content, &old)
                    .into_iter()
                    .map(|(path, made)| match made {
                        gitsync::carry::Made::Same(leaf) => (path, Carried::Same(leaf)),
                        gitsync::carry::Made::Text(t) => (path, Carried::Text(t)),
                        gitsync::carry::Made::Blob(sha) => (path, Carried::Blob(sha)),
                    })
                    .collect();
                (laid, placement)
            })
            .await
            .map_err(failed)?
        }
        None => (
            gitsync::layout(&content)
                .into_iter()
                .map(|e| match e.content {
                    Content::Text(t) => (e.path, Carried::Text(t)),
                    Content::Blob(sha) => (e.path, Carried::Blob(sha)),
                })
                .collect(),
            Placement::of(&content),
        ),
    };
    let mut made: Vec<Object> = Vec::new();
    let mut blobs: Vec<(String, Oid, bool)> = Vec::new();
    for (path, carried) in laid {
        let bytes = match carried {
            Carried::Same(leaf) => {
                blobs.push((path, leaf.oid, leaf.executable));
                continue;
            }
            Carried::Text(text) => text.into_bytes(),
            Carried::Blob(sha) => state
                .blobs
                .get(&sha)
                .await
                .map_err(failed)?
                .ok_or_else(|| format!("the bytes of file {sha} are missing"))?
                .to_vec(),
        };
        let blob = Object::new(Kind::Blob, bytes);
        blobs.push((path, blob.id, false));
        made.push(blob);
    }
    let (mut tree, trees) =
        objects::trees_with_modes(blobs.iter().map(|(p, id, x)| (p.as_str(), *id, *x)))
            .map_err(failed)?;
    made.extend(trees);
    if let Some(dir) = &row.project_dir {
        let outer = head.as_deref().and_then(|h| tree_of(&remote, h));
        let (root, around) = graft(&remote, outer.as_deref(), dir, tree)?;
        tree = root;
        made.extend(around);
    }
    let remote_tree = head.as_deref().and_then(|h| tree_of(&remote, h));
    if remote_tree.as_deref() == Some(tree.to_hex().as_str()) {
        // The branch already holds this content.
        return Ok(head.map(|h| InStep {
            commit: h,
            revision: main_id,
            placement: Some(placement),
        }));
    }
    let name = Some(user.display_name.clone())
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| super::COMMITTER.to_string());
    let seconds = state.now() / 1000;
    let author = Signature {
        name,
        email: format!("{}@{}", user.id.as_str(), super::NOREPLY),
        seconds,
    };
    let committer = Signature {
        name: super::COMMITTER.into(),
        email: format!("quire@{}", super::NOREPLY),
        seconds,
    };
    let parents: Vec<Oid> = head
        .as_deref()
        .and_then(Oid::from_hex)
        .into_iter()
        .collect();
    let message = p
        .message
        .clone()
        .unwrap_or_else(|| "Update from Quire".to_string());
    let commit = objects::commit(tree, &parents, &author, &committer, &message);
    let known: HashSet<&str> = remote.keys().map(String::as_str).collect();
    let mut seen = HashSet::new();
    let send: Vec<&Object> = std::iter::once(&commit)
        .chain(made.iter())
        .filter(|o| !known.contains(o.id.to_hex().as_str()) && seen.insert(o.id))
        .collect();
    let pack = objects::pack(send);
    if pack.len() > state.config.max_import_bytes.saturating_mul(8) {
        return Err("the export is larger than this server sends".into());
    }
    let zero = "0".repeat(40);
    let body = wire::receive_request(
        &ad,
        head.as_deref().unwrap_or(&zero),
        &commit.id.to_hex(),
        &row.ref_name,
        &pack,
    );
    let answer = state
        .fetcher
        .post_opaque(
            &format!("{}/git-receive-pack", row.url.trim_end_matches('/')),
            "application/x-git-receive-pack-request",
            &body,
            1024 * 1024,
            TIMEOUT,
        )
        .await
        .map_err(|e| format!("the repository could not be written: {e}"))?;
    wire::parse_report(&answer.bytes, &ad)?;
    Ok(Some(InStep {
        commit: commit.id.to_hex(),
        revision: main_id,
        placement: Some(placement),
    }))
}

/// Where an exported file's bytes come from.
enum Carried {
    /// A blob the branch already holds.
    Same(Leaf),
    /// New text.
    Text(String),
    /// A file of the space (sha-256).
    Blob(String),
}

/// The revision a branch is read against: the one last in step with it, with where its
/// content is in the branch's tree (the remote's edits since are what the branch brings),
/// else main as Quire lays it out.
async fn in_step_base(
    state: &AppState,
    ctx: &SpaceCtx,
    row: &SyncRow,
) -> Result<(String, Option<Placement>), Failed> {
    if let Some(r) = &row.synced_revision {
        if store::revisions::get(&state.db, &ctx.space.id, r)
            .await
            .map_err(failed)?
            .is_some()
        {
            return Ok((r.clone(), synced_placement(state, row).await?));
        }
    }
    let main = crate::domain::access::current_revision(state, &ctx.space.id)
        .await
        .map_err(failed)?;
    Ok((main, None))
}

/// The files of `head` inside the project folder `dir` (paths from that folder; files
/// outside it are the repository's, not the space's), and the same as a tree of blob ids.
async fn branch_files(
    objects: &Arc<HashMap<String, wire::Object>>,
    head: &str,
    dir: Option<&str>,
    limits: &quire_content::convert::Limits,
) -> Result<(Vec<(String, gitsync::TreeFile)>, Tree), Failed> {
    let (objects, head, limits) = (objects.clone(), head.to_string(), limits.clone());
    let prefix = dir.map(|d| format!("{d}/"));
    tokio::task::spawn_blocking(move || {
        let leaves = wire::leaves_of(&objects, &head, &limits)
            .map_err(|e| format!("the repository {}", e.0))?;
        let mut tree = Tree::new();
        let mut files = Vec::new();
        for leaf in leaves {
            let path = match &prefix {
                Some(p) => match leaf.path.strip_prefix(p.as_str()) {
                    Some(rest) => rest.to_string(),
                    None => continue,
                },
                None => leaf.path,
            };
            let (Some(oid), Some(blob)) = (
                Oid::from_hex(&leaf.blob),
                objects.get(&leaf.blob).filter(|o| o.kind == 3),
            ) else {
                return Err(format!("the repository's answer lacks the file `{path}`"));
            };
            files.push((path.clone(), gitsync::TreeFile::Bytes(blob.data.clone())));
            let executable = leaf.executable;
            tree.insert(path, Leaf { oid, executable });
        }
        Ok((files, tree))
    })
    .await
    .map_err(failed)?
}

/// The branch's head as the parent an export is carried from: its files (in the project
/// folder) read as a revision against the one last in step, where that content is in its
/// tree, and the tree. Only what main differs by from what the branch holds is then laid
/// out, so the branch's own paths, formatting and files Quire does not model stay. A branch
/// that cannot be read as content fails the export, saying why: laying main out whole
/// instead would rewrite every file of it.
async fn remote_parent(
    state: &AppState,
    ctx: &SpaceCtx,
    row: &SyncRow,
    remote: &Arc<HashMap<String, wire::Object>>,
    head: &str,
) -> Result<(Arc<Revision>, Placement, Tree), Failed> {
    let limits = super::push::limits(state);
    let (files, tree) = branch_files(remote, head, row.project_dir.as_deref(), &limits).await?;
    let (base_id, placement) = in_step_base(state, ctx, row).await?;
    let base = super::push::revision(state, ctx, &base_id)
        .await
        .map_err(failed)?;
    tokio::task::spawn_blocking(move || {
        let mut ids = crate::ids::new_id;
        let read = gitsync::read_tree_placed(files, &base, placement.as_ref(), &limits, &mut ids)
            .map_err(|e| {
            format!("the branch cannot be read as the space's content: {}", e.0)
        })?;
        // Files the branch added are its own: kept as they are, not Quire's to place.
        let mut placement = read.placement;
        let known: HashSet<&str> = read.revision.files.iter().map(|f| f.id.as_str()).collect();
        placement.files.retain(|id, _| known.contains(id.as_str()));
        Ok((Arc::new(read.revision), placement, tree))
    })
    .await
    .map_err(failed)?
}

/// Puts `inner` at `dir` in the tree `outer` (from `objects`; none: an empty one); the new
/// root and the trees made for it.
fn graft(
    objects: &HashMap<String, wire::Object>,
    outer: Option<&str>,
    dir: &str,
    inner: Oid,
) -> Result<(Oid, Vec<Object>), Failed> {
    let (name, rest) = match dir.split_once('/') {
        Some((n, r)) => (n, Some(r)),
        None => (dir, None),
    };
    // The tree's entries: (mode, name, id).
    let mut entries: Vec<(String, String, Oid)> = Vec::new();
    if let Some(id) = outer {
        let tree = objects
            .get(id)
            .filter(|o| o.kind == 2)
            .ok_or("the repository's answer lacks a tree")?;
        let mut d = tree.data.as_slice();
        while !d.is_empty() {
            let sp = d
                .iter()
                .position(|b| *b == b' ')
                .ok_or("a tree is malformed")?;
            let nul = d
                .iter()
                .position(|b| *b == 0)
                .ok_or("a tree is malformed")?;
            let oid = d.get(nul + 1..nul + 21).ok_or("a tree is malformed")?;
            let mut raw = [0u8; 20];
            raw.copy_from_slice(oid);
            entries.push((
                String::from_utf8_lossy(&d[..sp]).into_owned(),
                String::from_utf8_lossy(&d[sp + 1..nul]).into_owned(),
                Oid(raw),
            ));
            d = &d[nul + 21..];
        }
    }
    let below = entries
        .iter()
        .find(|(mode, n, _)| n == name && mode == "40000")
        .map(|(_, _, id)| id.to_hex());
    let mut made = Vec::new();
    let sub = match rest {
        Some(rest) => {
            let (id, more) = graft(objects, below.as_deref(), rest, inner)?;
            made.extend(more);
            id
        }
        None => inner,
    };
    entries.retain(|(_, n, _)| n != name);
    entries.push(("40000".into(), name.to_string(), sub));
    // Git's order: a folder's name compared as if it ended with `/`.
    let key = |mode: &str, n: &str| {
        let mut k = n.as_bytes().to_vec();
        if mode == "40000" {
            k.push(b'/');
        }
        k
    };
    entries.sort_by_key(|a| key(&a.0, &a.1));
    let mut body = Vec::new();
    for (mode, n, id) in &entries {
        body.extend_from_slice(mode.as_bytes());
        body.push(b' ');
        body.extend_from_slice(n.as_bytes());
        body.push(0);
        body.extend_from_slice(&id.0);
    }
    let tree = Object::new(Kind::Tree, body);
    let id = tree.id;
    made.push(tree);
    Ok((id, made))
}

/// `GitSyncState` as `getSpaceGitInfo` answers it; `None` when the space has no sync.
pub async fn info(state: &AppState, space_id: &str) -> ApiResult<Option<SyncRow>> {
    Ok(store::git::sync(&state.db, space_id).await?)
}

/// The repository's name for `repoName`: `owner/name` from the URL's path, without `.git`
/// and never with credentials.
pub fn repo_name(url: &str) -> String {
    Url::parse(url)
        .ok()
        .map(|u| {
            u.path()
                .trim_matches('/')
                .trim_end_matches(".git")
                .to_string()
        })
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "repository".into())
}

/// The URL without its credentials (what `url` shows when no tree URL was given).
pub fn shown_url(url: &str) -> String {
    match Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) => String::new(),
    }
}

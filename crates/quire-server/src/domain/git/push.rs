//! A push becomes a change request. The pushed objects are checked and kept apart (a
//! quarantine) until every branch of the push has been read; a branch's newest commit is
//! read with Git Sync's rules (`quire_content::gitsync::read`) against the revision it
//! started from, and lands through the same workflows as the API's batches and merges:
//!
//! - a new branch opens a change request (its subject the commit's subject);
//! - `change-requests/{number}` updates that change request, fast-forward only;
//! - `main` opens a change request and merges it at once (three-way, as a merge is), for
//!   those who may merge, fast-forward only: a commit that does not descend from main's
//!   is refused (`non-fast-forward`) rather than merged, since a force push means to drop
//!   what main holds and a merge would keep it.
//!
//! The pushed commit becomes the new revision's own commit (its objects kept in blob storage
//! for every node), so that after a merge the pusher's commit is an ancestor of `main`.
//! Every refusal names its reason, and a refused branch changes nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use quire_content::gitsync::carry::Placement;
use quire_content::gitsync::objects::Oid;
use quire_content::gitsync::TreeFile;
use quire_content::Revision;

use crate::domain::access::{Role, SpaceCtx};
use crate::domain::change_requests::{self as crs, Attempts, Landing, Pushed};
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::values::{ChangeRequestStatus, EditMode, RevisionType};

/// One ref update a client asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    /// What the client believes the ref is at (zeros: absent).
    pub old: String,
    /// What it asks the ref to become (zeros: delete it).
    pub new: String,
    /// The full ref name.
    pub name: String,
}

/// What a push did: whether the objects were accepted, each ref's result, and messages
/// for the person pushing.
#[derive(Debug)]
pub struct Outcome {
    /// `Err(reason)` when the pack was refused (then every ref is refused).
    pub unpack: Result<(), String>,
    /// Each ref with `Ok` or the reason it was refused, in the order asked.
    pub refs: Vec<(String, Result<(), String>)>,
    /// Lines to show the person pushing.
    pub messages: Vec<String>,
}

const ZERO: &str = "0000000000000000000000000000000000000000";

/// Most commits walked back from a pushed commit to find where it left the space's history.
const MAX_WALK: usize = 10_000;

/// Where a push's objects arrive: a quarantine folder in the space's repository, up to date,
/// holding the pack as it was received (`pack_path`) and what `git index-pack` makes of it.
/// Removed when dropped.
pub struct Incoming {
    dir: PathBuf,
    quarantine: PathBuf,
    pack: PathBuf,
}

impl Incoming {
    /// Brings the space's repository up to date and opens a quarantine in it.
    pub async fn open(state: &AppState, ctx: &SpaceCtx) -> ApiResult<Incoming> {
        ctx.require_live()?;
        ctx.require(Role::Edit, "push to this space")?;
        let dir = super::prepare(state, &ctx.space.id, &ctx.space.revision_id).await?;
        let quarantine = dir.join(format!(
            "{}{}",
            super::QUARANTINE_PREFIX,
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(quarantine.join("pack")).map_err(ApiError::internal)?;
        let pack = quarantine.join("received.pack");
        Ok(Incoming {
            dir,
            quarantine,
            pack,
        })
    }

    /// The file the push's pack is written to as it is read.
    pub fn pack_path(&self) -> &Path {
        &self.pack
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.quarantine);
    }
}

/// Receives a push to the space: `commands`, and the pack of objects they need in
/// `incoming`.
pub async fn receive(
    state: &AppState,
    ctx: &SpaceCtx,
    by: &crate::ids::UserId,
    author: &str,
    commands: Vec<Command>,
    incoming: Incoming,
) -> ApiResult<Outcome> {
    ctx.require_live()?;
    ctx.require(Role::Edit, "push to this space")?;
    let outcome = receive_in(state, ctx, by, author, &incoming, commands).await;
    drop(incoming);
    let outcome = outcome?;
    // The branches as they now are.
    let space = crate::domain::access::space_row(state, &ctx.space.id)
        .await?
        .ok_or_else(|| ApiError::not_found("Space not found."))?;
    super::prepare(state, &space.id, &space.revision_id).await?;
    Ok(outcome)
}

async fn receive_in(
    state: &AppState,
    ctx: &SpaceCtx,
    by: &crate::ids::UserId,
    author: &str,
    incoming: &Incoming,
    commands: Vec<Command>,
) -> ApiResult<Outcome> {
    let mut outcome = Outcome {
        unpack: Ok(()),
        refs: Vec::new(),
        messages: Vec::new(),
    };
    let dir = incoming.dir.as_path();
    let env = Quarantine {
        objects: incoming.quarantine.clone(),
        alternate: dir.join("objects"),
    };
    let has_pack = std::fs::metadata(&incoming.pack).is_ok_and(|m| m.len() > 0);
    if has_pack {
        let max = state.config.max_import_bytes as u64;
        let input = super::PackInput::File(incoming.pack.clone());
        if let Err(e) = super::index_pack(dir, input, Some(max), &env.vars()).await {
            outcome.unpack = Err(e.to_string());
            outcome.refs = commands
                .into_iter()
                .map(|c| (c.name, Err("unpacker error".to_string())))
                .collect();
            return Ok(outcome);
        }
    }
    let mut kept = false;
    for command in commands {
        let result = branch(
            state, ctx, by, author, dir, &env, has_pack, &mut kept, &command,
        )
        .await;
        let result = match result {
            Ok(message) => {
                outcome.messages.extend(message);
                Ok(())
            }
            Err(Refusal { reason, explained }) => {
                let said = explained.as_deref().unwrap_or(&reason);
                outcome
                    .messages
                    .push(format!("{}: {said}", short(&command.name)));
                Err(reason)
            }
        };
        outcome.refs.push((command.name, result));
    }
    Ok(outcome)
}

/// Why a branch of a push was refused (shown to the person pushing): the reason in the
/// status report and, when that reason is one of git's own words that its client knows
/// (`non-fast-forward`), the fuller explanation shown on the side band.
struct Refusal {
    reason: String,
    explained: Option<String>,
}

impl Refusal {
    fn new(reason: impl Into<String>) -> Refusal {
        Refusal {
            reason: reason.into(),
            explained: None,
        }
    }
}

impl From<ApiError> for Refusal {
    fn from(e: ApiError) -> Self {
        match e {
            ApiError::Internal(cause) => {
                tracing::error!(error = ?cause, "a push failed");
                Refusal::new("internal error; see the server log")
            }
            other => Refusal::new(other.to_string()),
        }
    }
}

fn refuse<T>(why: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal::new(why))
}

/// Whether commit `new` descends from `from` (or is it).
async fn descends(dir: &Path, env: &Quarantine, from: &str, new: &str) -> bool {
    env.git(dir, &["merge-base", "--is-ancestor", from, new], None)
        .await
        .is_ok()
}

/// The refusal of a commit that does not descend from the branch's commit `at`: git's own
/// `non-fast-forward` in the status report, which the client shows as a rejected push, and
/// why on the side band. Nothing is merged: what a force push meant to drop would stay.
fn not_fast_forward<T>(branch: &str, at: &str) -> Result<T, Refusal> {
    Err(Refusal {
        reason: "non-fast-forward".into(),
        explained: Some(format!(
            "not a fast-forward: `{branch}` is at {} and the pushed commit does not descend \
             from it (the branch moved since you fetched, or the push drops commits from it). \
             A force push is refused: fetch, merge or rebase onto `{branch}`, then push again",
            at.get(..10).unwrap_or(at)
        )),
    })
}

/// Whether a branch name is one Quire writes among its branches: plain characters, no
/// empty, `.`-led or `..` segment, no `.lock` ending, at most 200 bytes. Git's own rules
/// are wider; these keep every name safe to store and to list.
pub(super) fn branch_name_ok(name: &str) -> bool {
    name.len() <= 200
        && !name.ends_with(".lock")
        && name.split('/').all(|seg| {
            !seg.is_empty()
                && !seg.starts_with('.')
                && !seg.starts_with('-')
                && !seg.contains("..")
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        })
}

/// A branch's name without `refs/heads/`.
fn short(name: &str) -> &str {
    name.strip_prefix("refs/heads/").unwrap_or(name)
}

/// Objects received and not yet accepted: git reads them there, and the repository's own
/// beside them.
struct Quarantine {
    objects: PathBuf,
    alternate: PathBuf,
}

impl Quarantine {
    fn vars(&self) -> Vec<(&str, &Path)> {
        vec![
            ("GIT_OBJECT_DIRECTORY", self.objects.as_path()),
            ("GIT_ALTERNATE_OBJECT_DIRECTORIES", self.alternate.as_path()),
        ]
    }

    /// Runs `git` on the repository and the quarantine; its standard output.
    async fn git(&self, dir: &Path, args: &[&str], input: Option<Vec<u8>>) -> ApiResult<Vec<u8>> {
        let mut cmd = super::sealed(dir);
        cmd.args(args)
            .stdin(if input.is_some() {
                std::process::Stdio::piped()
            } else {
                std::process::Stdio::null()
            })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        for (k, v) in self.vars() {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().map_err(ApiError::internal)?;
        let writer = input.map(|bytes| {
            let mut stdin = child.stdin.take().expect("piped");
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                let _ = stdin.write_all(&bytes).await;
            })
        });
        let out = tokio::time::timeout(
            std::time::Duration::from_secs(300),
            child.wait_with_output(),
        )
        .await
        .map_err(|_| ApiError::RequestTimeout("Reading the pushed commits took too long.".into()))?
        .map_err(ApiError::internal)?;
        if let Some(w) = writer {
            let _ = w.await;
        }
        if !out.status.success() {
            return Err(ApiError::bad_request(format!(
                "git {}: {}",
                args.first().copied().unwrap_or(""),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(out.stdout)
    }
}

/// Handles one ref of a push; the lines to show on success.
#[allow(clippy::too_many_arguments)]
async fn branch(
    state: &AppState,
    ctx: &SpaceCtx,
    by: &crate::ids::UserId,
    author: &str,
    dir: &Path,
    env: &Quarantine,
    has_pack: bool,
    kept: &mut bool,
    command: &Command,
) -> Result<Vec<String>, Refusal> {
    if ctx.space.edit_mode == EditMode::Locked {
        return refuse("the space is locked: nothing can be pushed to it");
    }
    let Some(name) = command.name.strip_prefix("refs/heads/") else {
        return refuse("only branches can be pushed");
    };
    if !branch_name_ok(name) {
        return refuse("not a branch name Quire keeps (letters, digits, `.`, `_`, `-`, `/`)");
    }
    if command.new == ZERO {
        return refuse("branches cannot be deleted: close the change request in Quire");
    }
    let new = Oid::from_hex(&command.new)
        .ok_or_else(|| Refusal::new("not a commit id"))?
        .to_hex();
    // Main takes only a commit that descends from its own, as a git server's branch does:
    // a force push would otherwise be read against where it left main and merged, keeping
    // what it meant to drop. Main as it is now, its commit made if it moved since the push
    // began.
    let main_commit = if name == "main" {
        let current = store::spaces::get(&state.db, &ctx.space.id)
            .await
            .map_err(ApiError::from)?
            .ok_or_else(|| ApiError::not_found("Space not found."))?
            .revision_id;
        super::prepare(state, &ctx.space.id, &current).await?;
        let Some(at) = super::commits_of(state, &ctx.space.id).remove(&current) else {
            return Err(ApiError::internal(anyhow::anyhow!("main's commit was not made")).into());
        };
        if !descends(dir, env, &at, &new).await {
            return not_fast_forward("main", &at);
        }
        Some(at)
    } else {
        None
    };
    // Where the pushed commit left the space's history.
    let commits = super::commits_of(state, &ctx.space.id);
    let revision_of: HashMap<&str, &str> = commits
        .iter()
        .map(|(rev, oid)| (oid.as_str(), rev.as_str()))
        .collect();
    let walked = env
        .git(
            dir,
            &[
                "rev-list",
                "--first-parent",
                &format!("--max-count={MAX_WALK}"),
                &new,
            ],
            None,
        )
        .await?;
    let walked = String::from_utf8_lossy(&walked).into_owned();
    // A commit the space already has (a change request's head, pushed before) that main
    // lacks is new to main: pushed there, it is read against the commit it came from, as
    // any push to main is.
    let known_elsewhere = revision_of.contains_key(new.as_str())
        && main_commit.as_deref().is_some_and(|main| main != new);
    let fork = walked
        .lines()
        .filter(|c| !(known_elsewhere && *c == new))
        .find_map(|c| revision_of.get(c).map(|r| (c.to_string(), r.to_string())));
    let Some((fork_commit, fork_revision)) = fork else {
        return refuse(
            "this history does not start from the space's: clone the space and commit on it",
        );
    };
    if fork_commit == new {
        return refuse("nothing new to push");
    }
    let subject = {
        let out = env
            .git(dir, &["log", "-1", "--format=%s", &new], None)
            .await?;
        let s = String::from_utf8_lossy(&out).trim().to_string();
        s.chars().take(100).collect::<String>()
    };
    let message = {
        let out = env
            .git(dir, &["log", "-1", "--format=%B", &new], None)
            .await?;
        String::from_utf8_lossy(&out).trim_end().to_string()
    };
    let pushed_author = {
        let out = env
            .git(dir, &["log", "-1", "--format=%an <%ae>", &new], None)
            .await?;
        let a = String::from_utf8_lossy(&out).trim().to_string();
        if a.is_empty() {
            author.to_string()
        } else {
            a
        }
    };

    // What the branch is: an open change request's, main, or a new one.
    // A change request's branch, by number or by the name it was pushed under.
    let named = store::git::branches(&state.db, &ctx.space.id)
        .await
        .map_err(ApiError::from)?;
    let cr_number = match name.strip_prefix("change-requests/") {
        Some(n) => Some(n.to_string()),
        // A name whose change request was merged or closed names a new one.
        None => match named.iter().find(|(branch, _)| branch == name) {
            Some((_, id)) => crs::load(state, ctx, id)
                .await
                .ok()
                .filter(|c| {
                    matches!(
                        c.status,
                        ChangeRequestStatus::Open | ChangeRequestStatus::Draft
                    )
                })
                .map(|c| c.id),
            None => None,
        },
    };
    let cr_number = cr_number.as_deref();
    let existing = match cr_number {
        Some(n) => {
            let c = crs::load(state, ctx, n).await.map_err(|_| {
                Refusal::new(format!("change request #{n} does not exist in this space"))
            })?;
            if !matches!(
                c.status,
                ChangeRequestStatus::Open | ChangeRequestStatus::Draft
            ) {
                return refuse(format!(
                    "change request #{} is {}: it can no longer be pushed to",
                    c.number,
                    c.status.as_str()
                ));
            }
            let head = commits.get(&c.revision_id).cloned().unwrap_or_default();
            if command.old != head {
                return refuse("the change request moved since you fetched: pull, then push again");
            }
            if !descends(dir, env, &head, &new).await {
                return not_fast_forward(name, &head);
            }
            Some(c)
        }
        None => None,
    };
    // The revision the branch is read against, and its commit's tree when Quire laid that
    // revision out itself (a pushed commit's tree is the pusher's): files unchanged from it
    // are the base's own and are neither read nor parsed again.
    let (base_id, base_commit) = match &existing {
        Some(c) => (c.revision_id.clone(), command.old.clone()),
        None => (fork_revision.clone(), fork_commit.clone()),
    };
    let base_identity = store::git::identity(&state.db, &ctx.space.id, &base_id)
        .await
        .map_err(ApiError::from)?;
    let base_revision = revision(state, ctx, &base_id).await?;
    let placement = super::placement_of(state, base_identity.as_ref(), &base_revision).await?;
    let files = files_of(
        state,
        dir,
        env,
        &new,
        placement.as_ref().map(|p| (&*base_commit, p)),
    )
    .await?;
    let to_main = name == "main";
    if to_main {
        ctx.require(Role::Edit, "merge change requests in this space")?;
    }
    let limits = limits(state);

    // Objects go where every node finds them before anything points at them.
    if !*kept && has_pack {
        keep_pack(state, &ctx.space.id, dir, env).await?;
        *kept = true;
    }
    let pushed = |author: &str, placed: Option<String>| Pushed {
        oid: new.clone(),
        author: author.to_string(),
        message: message.clone(),
        placed,
    };
    let url = |number: i64| state.url(&format!("/s/{}/~/changes/{number}", ctx.space.id));

    match existing {
        Some(c) => {
            // Read against the change request as it is: the pushed commit descends from it.
            let read = read_files(files, base_revision, placement, limits).await?;
            // Read against the change request's head: the revision is the tree as pushed.
            let placed = Some(super::carry_blob(state, &ctx.space.id, &read.placement).await?);
            let content = with_new_files(state, &ctx.space.id, read).await?;
            let mut attempts =
                Attempts::begin(state, "the push", &[crs::Target::ChangeRequest(&c.id)]).await;
            let hold = attempts.next(state, ctx, &c.id).await?;
            if hold.cr.revision_id != c.revision_id {
                return refuse("the change request moved meanwhile: pull, then push again");
            }
            let landing = Landing {
                revision: content,
                kind: RevisionType::Edits,
                parents: vec![c.revision_id.clone()],
                new_base: None,
                by,
                contributes: true,
                pushed: Some(pushed(&pushed_author, placed)),
            };
            if crs::land(state, hold, landing).await?.is_none() {
                return refuse("the change request moved meanwhile: pull, then push again");
            }
            Ok(vec![format!(
                "Change request #{} updated: {}",
                c.number,
                url(c.number)
            )])
        }
        None => {
            // A change request from the space as it is now, holding what the branch changed
            // since it left the space's history (three-way, as a merge would).
            let fork = base_revision;
            let read = read_files(files, fork.clone(), placement, limits).await?;
            let redirects = read.redirects.clone();
            let placement = read.placement.clone();
            let content = Arc::new(with_new_files(state, &ctx.space.id, read).await?);
            // Conflicts refuse the push before anything is opened.
            let main_id = crate::domain::access::current_revision(state, &ctx.space.id).await?;
            let main = revision(state, ctx, &main_id).await?;
            let mut merged = crs::merge3(fork.clone(), main, content.clone()).await?;
            let c = crs::create(state, ctx, by, subject).await?;
            if c.revision_id != main_id {
                // The space moved between the two reads: merge onto what the change request
                // started from.
                let main = revision(state, ctx, &c.revision_id).await?;
                merged = crs::merge3(fork, main, content).await?;
            }
            let mut attempts =
                Attempts::begin(state, "the push", &[crs::Target::ChangeRequest(&c.id)]).await;
            let hold = attempts.next(state, ctx, &c.id).await?;
            // Read against the main the change request starts from, the revision is the tree
            // as pushed; otherwise it also holds what main gained since the fork.
            let placed = match base_id == c.revision_id {
                true => Some(super::carry_blob(state, &ctx.space.id, &placement).await?),
                false => None,
            };
            let landing = Landing {
                revision: merged,
                kind: RevisionType::Edits,
                parents: vec![c.revision_id.clone()],
                new_base: None,
                by,
                contributes: true,
                pushed: Some(pushed(&pushed_author, placed)),
            };
            if crs::land(state, hold, landing).await?.is_none() {
                return refuse("the change request moved meanwhile: push again");
            }
            drop(attempts);
            if !to_main {
                store::git::name_branch(&state.db, &ctx.space.id, name, &c.id)
                    .await
                    .map_err(ApiError::from)?;
            }
            if to_main {
                crs::merge_as(state, ctx, by, &c.id, true).await?;
                let mut said = vec![format!(
                    "Merged into main as change request #{}: {}",
                    c.number,
                    url(c.number)
                )];
                said.extend(redirect_notes(state, ctx, &redirects).await?);
                return Ok(said);
            }
            Ok(vec![format!(
                "Change request #{} opened: {} (push more to `{name}` or `change-requests/{}`)",
                c.number,
                url(c.number),
                c.number
            )])
        }
    }
}

/// Most pages and files a pushed tree may hold: a space is far larger than one import.
const MAX_PUSHED_PAGES: usize = 50_000;

/// Writes the redirects of a `.gitbook.yaml` that reached main into the sites publishing the
/// space, and says what became of them (the pusher reads it as `remote:` lines).
async fn redirect_notes(
    state: &AppState,
    ctx: &SpaceCtx,
    redirects: &[quire_content::gitsync::GitRedirect],
) -> ApiResult<Vec<String>> {
    let mut said: Vec<String> = redirects
        .iter()
        .filter(|r| r.page.is_none())
        .map(|r| {
            format!(
                ".gitbook.yaml: redirect `{}` left out: `{}` is no page",
                r.source, r.file
            )
        })
        .collect();
    let written = crate::domain::redirects::from_git_config(
        state,
        &ctx.space.org_id,
        &ctx.space.id,
        redirects,
    )
    .await?;
    if written > 0 {
        said.push(format!(".gitbook.yaml: {written} site redirects written"));
    }
    Ok(said)
}

/// What a push may bring: an import's caps on bytes (`--max-import-bytes`), a space's on
/// pages and files.
pub(super) fn limits(state: &AppState) -> quire_content::convert::Limits {
    quire_content::convert::Limits {
        max_pages: MAX_PUSHED_PAGES,
        max_entries: MAX_PUSHED_PAGES * 2,
        ..crate::domain::imports::sources::limits(state)
    }
}

/// The content of a revision of the space.
pub(super) async fn revision(
    state: &AppState,
    ctx: &SpaceCtx,
    id: &str,
) -> ApiResult<Arc<Revision>> {
    let row = store::revisions::get(&state.db, &ctx.space.id, id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Revision `{id}` not found.")))?;
    crate::domain::content::load_in(state, &ctx.space.id, &row.root).await
}

/// Reads the files as a revision, off the async workers.
async fn read_files(
    files: Vec<(String, TreeFile)>,
    base: Arc<Revision>,
    placement: Option<Placement>,
    limits: quire_content::convert::Limits,
) -> Result<quire_content::gitsync::Read, Refusal> {
    tokio::task::spawn_blocking(move || {
        let mut ids = new_id;
        quire_content::gitsync::read_tree_placed(
            files,
            &base,
            placement.as_ref(),
            &limits,
            &mut ids,
        )
    })
    .await
    .map_err(|e| Refusal::from(ApiError::internal(e)))?
    .map_err(|e| Refusal::new(e.0))
}

/// The revision with the files it brought stored and added.
pub(super) async fn with_new_files(
    state: &AppState,
    space_id: &str,
    read: quire_content::gitsync::Read,
) -> ApiResult<Revision> {
    let mut revision = read.revision;
    for f in read.new_files {
        let mut file =
            crate::domain::uploads::store_bytes(state, &f.name, Bytes::from(f.bytes), None).await?;
        store::objects::add_blob_ref(&state.db, space_id, &file.blob).await?;
        file.id = f.id;
        revision.files.push(file);
    }
    Ok(revision)
}

/// The files of commit `new`'s tree, refusing what a space cannot hold: symbolic links,
/// submodules, more files or bytes than an import may bring. Those at a path the base
/// revision's placement names (or its table of contents and variables) with the same blob
/// in the base's commit's tree (`base`: that commit and the placement) are
/// [`TreeFile::Unchanged`] and not read.
async fn files_of(
    state: &AppState,
    dir: &Path,
    env: &Quarantine,
    new: &str,
    base: Option<(&str, &Placement)>,
) -> Result<Vec<(String, TreeFile)>, Refusal> {
    let limits = limits(state);
    let tree = ["ls-tree", "-r", "-z", "--full-tree", "-l"];
    let listing = env.git(dir, &[&tree[..], &[new]].concat(), None).await?;
    let before: HashMap<String, String> = match base {
        Some((commit, placement)) => {
            let mut named = placement.named();
            named.extend(["SUMMARY.md", ".gitbook/vars.yaml"]);
            listed(&env.git(dir, &[&tree[..], &[commit]].concat(), None).await?)?
                .into_iter()
                .filter(|(_, _, _, path)| named.contains(path.as_str()))
                .map(|(_, oid, _, path)| (path, oid))
                .collect()
        }
        None => HashMap::new(),
    };
    // The files in the tree's order, those to read with their place among them.
    let mut files = Vec::new();
    let mut wanted: Vec<(usize, String)> = Vec::new();
    let mut total: u64 = 0;
    for (mode, oid, size, path) in listed(&listing)? {
        match mode.as_str() {
            "120000" => return refuse(format!("`{path}`: symbolic links are not accepted")),
            "160000" => return refuse(format!("`{path}`: submodules are not accepted")),
            _ => {}
        }
        if size > limits.max_entry_bytes {
            return refuse(format!(
                "`{path}` is larger than {} bytes",
                limits.max_entry_bytes
            ));
        }
        total += size;
        if total > limits.max_expanded {
            return refuse(format!(
                "the files add up to more than {} bytes",
                limits.max_expanded
            ));
        }
        if files.len() >= limits.max_entries {
            return refuse(format!("more than {} files", limits.max_entries));
        }
        if before.get(&path) != Some(&oid) {
            wanted.push((files.len(), oid));
        }
        files.push((path, TreeFile::Unchanged));
    }
    let input: Vec<u8> = wanted
        .iter()
        .flat_map(|(_, oid)| format!("{oid}\n").into_bytes())
        .collect();
    if wanted.is_empty() {
        return Ok(files);
    }
    let out = env.git(dir, &["cat-file", "--batch"], Some(input)).await?;
    let mut answers = super::batch_answers(&out).into_iter();
    for (at, _) in wanted {
        let path = &files[at].0;
        let (_, body) = answers
            .next()
            .ok_or_else(|| Refusal::new("unreadable objects"))?;
        let body = body.ok_or_else(|| Refusal::new(format!("`{path}` could not be read")))?;
        files[at].1 = TreeFile::Bytes(body.to_vec());
    }
    Ok(files)
}

/// The entries of `ls-tree -r -z -l`: mode, object id, size and path.
fn listed(listing: &[u8]) -> Result<Vec<(String, String, u64, String)>, Refusal> {
    let mut out = Vec::new();
    for entry in listing.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let entry =
            String::from_utf8(entry.to_vec()).map_err(|_| Refusal::new("a path is not UTF-8"))?;
        let (meta, path) = entry
            .split_once('\t')
            .ok_or_else(|| Refusal::new("unreadable tree"))?;
        let mut parts = meta.split_whitespace();
        let (mode, _kind, oid, size) = (parts.next(), parts.next(), parts.next(), parts.next());
        out.push((
            mode.unwrap_or_default().to_string(),
            oid.unwrap_or_default().to_string(),
            size.and_then(|s| s.parse().ok()).unwrap_or(0),
            path.to_string(),
        ));
    }
    Ok(out)
}

/// Moves the pushed objects out of the quarantine into the repository, then keeps them in
/// blob storage, recorded for the space. What is kept is the pack as `index-pack
/// --fix-thin` completed it: a pushed pack may hold deltas against objects only this
/// repository has, and another node must read it without them.
///
/// The order survives a crash at any point: the pack is on disk (synced) in the repository
/// before anything records it, and recorded in the database before the push's commits are
/// (`change_requests::land`, after this), so no record ever names objects that are not in
/// place; a crash between leaves objects nothing names yet.
async fn keep_pack(
    state: &AppState,
    space_id: &str,
    dir: &Path,
    env: &Quarantine,
) -> ApiResult<()> {
    let into = dir.join("objects").join("pack");
    let moved = {
        let from = env.objects.join("pack");
        let into = into.clone();
        tokio::task::spawn_blocking(move || move_packs(&from, &into))
            .await
            .map_err(ApiError::internal)?
            .map_err(ApiError::internal)?
    };
    for pack in moved
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "pack"))
    {
        let bytes = tokio::fs::read(pack).await.map_err(ApiError::internal)?;
        let blob = state
            .blobs
            .put(Bytes::from(bytes))
            .await
            .map_err(ApiError::internal)?;
        store::objects::add_blob_ref(&state.db, space_id, &blob).await?;
        store::git::add_pack(&state.db, space_id, &blob, state.now()).await?;
        super::append(&dir.join(super::PACKS_FILE), &blob, "indexed")
            .map_err(ApiError::internal)?;
    }
    Ok(())
}

/// Moves the files of the packs in `from` into the repository's `into`, each synced first
/// and its index last (git finds a pack through its index), then the folder synced; the
/// packs' new paths.
fn move_packs(from: &Path, into: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(into)?;
    let mut names: Vec<PathBuf> = std::fs::read_dir(from)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("pack-"))
        })
        .collect();
    names.sort_by_key(|p| p.extension().is_some_and(|e| e == "idx"));
    let mut moved = Vec::new();
    for path in names {
        std::fs::File::open(&path)?.sync_all()?;
        let to = into.join(path.file_name().unwrap_or_default());
        std::fs::rename(&path, &to)?;
        moved.push(to);
    }
    std::fs::File::open(into)?.sync_all()?;
    Ok(moved)
}

#[cfg(test)]
mod tests {
    #[test]
    fn branch_names_are_plain() {
        for ok in ["main", "feature/x-1", "change-requests/2", "v1.2_fix"] {
            assert!(super::branch_name_ok(ok), "{ok}");
        }
        for bad in [
            "",
            "a//b",
            "a/../b",
            ".hidden",
            "-x",
            "a b",
            "x\nrefs/heads/evil",
            "a.lock",
            "é",
        ] {
            assert!(!super::branch_name_ok(bad), "{bad:?}");
        }
    }
}

//! Every space is a git repository. Its commits are made from its revisions: one commit
//! per revision, its tree the revision in Git Sync's layout (`quire_content::gitsync`), its
//! parents the revision's parents, its author the revision's author, its time the
//! revision's. So the same revision gives the same commit on every node and after any
//! rebuild; the author and message are fixed in the database (`store::git`) when first
//! made, so renaming a user or a change request changes no commit id handed out.
//!
//! The repository itself is a cache under `{data-dir}/git/{spaceId}.git` that any node
//! makes (and remakes) from the database: objects (loose, or a pack when a preparation
//! writes many), `packed-refs` with `main` and one `change-requests/{number}` branch per
//! open change request. Serving it is the `git` program's job (`crate::git`); a push
//! becomes a change request ([`push`]).

pub mod push;
pub mod sync;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use quire_content::gitsync::carry::{Leaf, Placement, Tree};
use quire_content::gitsync::objects::{self, Kind, Object, Oid, Signature};
use quire_content::gitsync::{self, Content, Laid};
use quire_content::Revision;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::git::Identity;
use crate::store::revisions::RevisionRow;
use crate::values::{ChangeRequestStatus, RevisionType};

/// Who commits every commit Quire makes.
const COMMITTER: &str = "Quire";
/// The committer's address (and the domain of the authors' no-reply addresses).
const NOREPLY: &str = "users.noreply.quire";

/// The commits of revisions already written to a repository, one `revision commit` a line.
const COMMITS_FILE: &str = "quire-commits";
/// The git ids of file blobs already written, one `sha256 oid` a line.
const FILES_FILE: &str = "quire-files";

/// The repository folder of a space on this node.
pub fn repo_dir(state: &AppState, space_id: &str) -> PathBuf {
    state
        .config
        .data_dir
        .join("git")
        .join(format!("{space_id}.git"))
}

/// A space's repository, brought up to date with its revisions and change requests: every
/// revision has its commit, `main` is the space's revision, each open or draft change
/// request has its branch. Returns the folder. One preparation of a space at a time on a
/// node; the first for a space writes every revision's objects.
pub async fn prepare(state: &AppState, space_id: &str, revision: &str) -> ApiResult<PathBuf> {
    let dir = repo_dir(state, space_id);
    let _turn = state.turns.take(&format!("git:{space_id}")).await;
    check_once(state, space_id, &dir).await?;
    skeleton(&dir).map_err(ApiError::internal)?;
    import_packs(state, space_id, &dir, false).await?;
    let mut commits = read_map(&dir.join(COMMITS_FILE));
    let changes = store::git::change_requests(&state.db, space_id).await?;
    // When every branch's revision has its commit, so has everything they reach (each
    // preparation makes them all): a fetch then reads no revision list.
    let heads_known = commits.contains_key(revision)
        && changes
            .iter()
            .filter(|c| {
                matches!(
                    c.status,
                    ChangeRequestStatus::Open | ChangeRequestStatus::Draft
                )
            })
            .all(|c| commits.contains_key(&c.revision_id));
    let rows = if heads_known {
        Vec::new()
    } else {
        store::git::revisions(&state.db, space_id).await?
    };
    let missing: Vec<&RevisionRow> = rows
        .iter()
        .filter(|r| !commits.contains_key(&r.id))
        .collect();
    let mut written = 0;
    let mut packed = false;
    if !missing.is_empty() {
        let identities = identities(state, space_id, &missing, &changes).await?;
        let mut files = read_map(&dir.join(FILES_FILE));
        let mut present = Present {
            ids: objects_in(&dir).await?,
            written: 0,
            pack: None,
            texts: HashMap::new(),
        };
        let mut order = parents_first(&missing);
        // A pushed revision's commit is the one pushed: its objects came with its pack,
        // which another node may have received after this preparation imported packs (or
        // whose import a crash left unfinished): those are imported again before the
        // commit is recorded, never recorded without their objects.
        let pushed_oid = |row: &RevisionRow| {
            identities
                .get(&row.id)
                .and_then(|i| i.oid.as_deref())
                .and_then(Oid::from_hex)
        };
        if order
            .iter()
            .filter_map(|row| pushed_oid(row))
            .any(|oid| !present.ids.contains(&oid))
        {
            import_packs(state, space_id, &dir, true).await?;
            present.ids = objects_in(&dir).await?;
        }
        let mut pushed_lines = String::new();
        order.retain(|row| match pushed_oid(row) {
            Some(oid) if present.ids.contains(&oid) => {
                pushed_lines.push_str(&format!("{} {}\n", row.id, oid.to_hex()));
                commits.insert(row.id.clone(), oid.to_hex());
                false
            }
            Some(oid) => {
                // Its pack is lost: Quire's own commit of the revision keeps the
                // repository whole.
                tracing::error!(space = %space_id, revision = %row.id, commit = %oid.to_hex(),
                    "a pushed commit's objects are in no stored pack; the revision gets a commit made by Quire");
                true
            }
            None => true,
        });
        append_lines(&dir.join(COMMITS_FILE), &pushed_lines).map_err(ApiError::internal)?;
        // Many commits go into one pack: thousands of loose objects cost a file each, and
        // a file system that has deleted many files can take longer to make each one than
        // to make the object. Nothing names the new objects until they are all in place.
        if order.len() >= PACK_FROM {
            present.pack = Some(objects::PackWriter::default());
        }
        let mut made: Vec<(String, String)> = Vec::new();
        let mut new_file_ids: Vec<(String, String)> = Vec::new();
        // Each revision is decoded with what the one before it kept: parents come first,
        // and a revision differs from its parent by a few pages, so loading costs what
        // changed rather than every page again.
        let mut decoded = quire_content::store::Decoded::default();
        let mut page_files = gitsync::PageFiles::default();
        // What a commit made here gives its children (see [`Carry`]), kept until the last
        // of them in this preparation is made.
        let mut carry = Carry::new(&rows, &order);
        let mut placed: Vec<(String, String)> = Vec::new();
        for row in &order {
            let (content, kept) =
                crate::domain::content::load_next(state, space_id, &row.root, decoded).await?;
            decoded = kept;
            new_file_ids.extend(new_files(state, &dir, &content, &mut files, &mut present).await?);
            let identity = identities.get(&row.id).ok_or_else(|| {
                ApiError::internal(anyhow::anyhow!(
                    "no commit identity for revision {}",
                    row.id
                ))
            })?;
            let parents: Vec<Oid> = row
                .parent_ids()
                .map_err(ApiError::internal)?
                .iter()
                .filter_map(|p| commits.get(p))
                .filter_map(|p| Oid::from_hex(p))
                .collect();
            let about = About {
                parents,
                author: identity.author.clone(),
                message: identity.message.clone(),
                seconds: row.created_at.div_euclid(1000),
            };
            // A commit made from its parents' trees, where they give one (see [`Carry`]).
            let parents = match identity.carried != 0 {
                true => {
                    carry
                        .parents(state, space_id, &dir, row, &identities, &commits)
                        .await?
                }
                false => None,
            };
            let planned = match parents {
                Some(parents) => {
                    let content_now = content.clone();
                    let (plan, parents) = tokio::task::spawn_blocking(move || {
                        let plan = gitsync::carry::plan(&listed(&parents), &content_now);
                        (plan, parents)
                    })
                    .await
                    .map_err(ApiError::internal)?;
                    let (old, flushed) = read_blobs(&dir, &plan.needs(), &mut present).await?;
                    packed |= flushed;
                    Some((plan, parents, old))
                }
                None => None,
            };
            let files_now = files.clone();
            let dir_now = dir.clone();
            let mut known = std::mem::take(&mut present);
            let mut laid = std::mem::take(&mut page_files);
            let content_now = content.clone();
            let (made_now, known, laid) = tokio::task::spawn_blocking(move || {
                let parts = match planned {
                    Some((plan, parents, old)) => {
                        let list = listed(&parents);
                        let placement = plan.placement().clone();
                        let parts = plan
                            .lay(&list, &content_now, &old)
                            .into_iter()
                            .map(|(path, made)| match made {
                                gitsync::carry::Made::Same(leaf) => {
                                    (path, Part::Same(leaf.oid, leaf.executable))
                                }
                                gitsync::carry::Made::Text(t) => (path, Part::Text(t)),
                                gitsync::carry::Made::Blob(sha) => (path, Part::Blob(sha)),
                            })
                            .collect();
                        (parts, Some(placement))
                    }
                    None => (laid_whole(&content_now, &mut laid), None),
                };
                let made = write_commit(&dir_now, parts.0, &files_now, &about, &mut known);
                (made.map(|(id, tree)| (id, tree, parts.1)), known, laid)
            })
            .await
            .map_err(ApiError::internal)?;
            present = known;
            page_files = laid;
            let (id, tree, placement) = made_now.map_err(ApiError::internal)?;
            let placement = match placement {
                Some(p) => {
                    // Recorded where it is not Quire's own layout, before the commit is.
                    if p != gitsync::carry::Placement::of(&content) {
                        placed.push((row.id.clone(), carry_blob(state, space_id, &p).await?));
                    }
                    p
                }
                None => gitsync::carry::Placement::of(&content),
            };
            carry.made(&row.id, content, placement, tree);
            made.push((row.id.clone(), id.to_hex()));
            commits.insert(row.id.clone(), id.to_hex());
        }
        store::git::record_placed(&state.db, space_id, &placed).await?;
        if let Some(pack) = present.pack.take().filter(|p| !p.is_empty()) {
            packed = true;
            index_pack(&dir, PackInput::Bytes(pack.finish().into()), None, &[])
                .await
                .map_err(ApiError::internal)?;
        }
        // Recorded only now that every object they name is in place (the pack indexed,
        // loose objects renamed into their folders): a crash before leaves objects that
        // nothing names, never a name without its object.
        let lines = |pairs: &[(String, String)]| {
            pairs
                .iter()
                .map(|(k, v)| format!("{k} {v}\n"))
                .collect::<String>()
        };
        append_lines(&dir.join(FILES_FILE), &lines(&new_file_ids)).map_err(ApiError::internal)?;
        append_lines(&dir.join(COMMITS_FILE), &lines(&made)).map_err(ApiError::internal)?;
        written = present.written;
        // Every node makes the same commits; the first to make one records its id, which
        // the API then shows as the revision's `git` (with those this node's copy made
        // before ids were recorded).
        let recorded: Vec<(String, String)> = rows
            .iter()
            .filter_map(|r| Some((r, identities.get(&r.id)?)))
            .filter(|(_, i)| i.oid.is_none() && i.commit_oid.is_none())
            .filter_map(|(r, _)| Some((r.id.clone(), commits.get(&r.id)?.clone())))
            .collect();
        if !recorded.is_empty() {
            let mut tx = state.db.begin().await?;
            tx.touches(&[]);
            store::git::record_commit_ids(&mut tx, space_id, &recorded).await?;
            tx.commit().await?;
        }
    }
    let mut refs: Vec<(String, String)> = Vec::new();
    if let Some(main) = commits.get(revision) {
        refs.push(("refs/heads/main".into(), main.clone()));
    }
    let named = store::git::branches(&state.db, space_id).await?;
    for c in &changes {
        if matches!(
            c.status,
            ChangeRequestStatus::Open | ChangeRequestStatus::Draft
        ) {
            if let Some(head) = commits.get(&c.revision_id) {
                refs.push((
                    format!("refs/heads/change-requests/{}", c.number),
                    head.clone(),
                ));
                // A branch pushed under its own name stays under that name too.
                for (name, _) in named.iter().filter(|(_, id)| *id == c.id) {
                    refs.push((format!("refs/heads/{name}"), head.clone()));
                }
            }
        }
    }
    write_refs(&dir, refs).map_err(ApiError::internal)?;
    // After the branches: packing keeps what they reach.
    if written > 0 {
        pack_if_many(&dir, written, packed).await;
    }
    Ok(dir)
}

/// Checks a space's repository at its first preparation on this node (after a restart, the
/// copy may be what a crash left): every id its files record must name an object it holds,
/// as must every pushed commit the database records, and every line of those files must be
/// whole. A damaged copy is set aside and made again from the database, the source of all
/// it holds; a sound one loses only the folders of pushes that died midway.
async fn check_once(state: &AppState, space_id: &str, dir: &Path) -> ApiResult<()> {
    let checked = || state.git_checked.lock().unwrap_or_else(|e| e.into_inner());
    if checked().contains(space_id) {
        return Ok(());
    }
    if dir.join("HEAD").exists() {
        match damage(state, space_id, dir).await? {
            Some(why) => {
                tracing::warn!(space = %space_id, reason = %why,
                    "a space's repository was damaged (by a crash?): it is made again from the database");
                set_aside(dir).map_err(ApiError::internal)?;
            }
            None => remove_stale_quarantines(dir),
        }
    }
    checked().insert(space_id.to_string());
    Ok(())
}

/// Why the repository in `dir` cannot be served as it is, if it cannot.
async fn damage(state: &AppState, space_id: &str, dir: &Path) -> ApiResult<Option<String>> {
    // The pushed commits are read before the packs are imported: a push records its pack
    // before its commit, so every commit read here has its pack among those imported next.
    let mut ids: Vec<String> = store::git::identities(&state.db, space_id)
        .await?
        .into_values()
        .filter_map(|i| i.oid)
        .collect();
    import_packs(state, space_id, dir, false).await?;
    for name in [COMMITS_FILE, FILES_FILE, PACKS_FILE] {
        let text = match std::fs::read_to_string(dir.join(name)) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Ok(Some(format!("`{name}` cannot be read: {e}"))),
        };
        if !text.is_empty() && !text.ends_with('\n') {
            return Ok(Some(format!("`{name}` ends in a line cut short")));
        }
        for line in text.lines() {
            match line.split_once(' ') {
                Some((key, value)) if line_ok(key, value) => {
                    if value != "indexed" {
                        ids.push(value.to_string());
                    }
                }
                _ => return Ok(Some(format!("`{name}` holds a line that is not whole"))),
            }
        }
    }
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return Ok(None);
    }
    let input: String = ids.iter().map(|id| format!("{id}\n")).collect();
    let out = match run_with_input(dir, &["cat-file", "--batch-check"], input.into_bytes()).await {
        Ok(out) => out,
        Err(e) => return Ok(Some(format!("its objects cannot be read: {e}"))),
    };
    let missing = String::from_utf8_lossy(&out)
        .lines()
        .filter(|l| l.ends_with(" missing"))
        .count();
    Ok((missing > 0).then(|| format!("{missing} recorded objects are missing")))
}

/// Runs `git` on the repository in `dir` with `input` on its standard input; its standard
/// output, or why it failed.
async fn run_with_input(dir: &Path, args: &[&str], input: Vec<u8>) -> anyhow::Result<Vec<u8>> {
    let mut child = sealed(dir)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().expect("piped");
    let writer = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        let _ = stdin.write_all(&input).await;
    });
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        child.wait_with_output(),
    )
    .await
    .map_err(|_| anyhow::anyhow!("git {} took too long", args.join(" ")))??;
    let _ = writer.await;
    if !out.status.success() {
        anyhow::bail!("{}", String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(out.stdout)
}

/// Moves a damaged repository out of the way (the next preparation makes a new one) and
/// removes it in the background.
fn set_aside(dir: &Path) -> std::io::Result<()> {
    let name = dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("repository")
        .trim_end_matches(".git");
    // Not ending in `.git`: the sweeper never takes it for a space's repository.
    let aside = dir.with_file_name(format!("{name}.damaged-{}", uuid::Uuid::new_v4().simple()));
    std::fs::rename(dir, &aside)?;
    std::thread::spawn(move || {
        if let Err(err) = std::fs::remove_dir_all(&aside) {
            tracing::warn!(error = %err, path = %aside.display(), "a damaged repository stays");
        }
    });
    Ok(())
}

/// A push's quarantine older than this belongs to a push that died with its process.
const STALE_QUARANTINE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes the quarantines of pushes that died midway (see `push::receive`).
fn remove_stale_quarantines(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let stale = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > STALE_QUARANTINE));
        if stale
            && entry
                .file_name()
                .to_string_lossy()
                .starts_with(QUARANTINE_PREFIX)
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The name every push's quarantine folder starts with.
pub(crate) const QUARANTINE_PREFIX: &str = "quire-incoming-";

/// Removes this node's copy of a purged space's repository.
pub fn forget(state: &AppState, space_id: &str) {
    let dir = repo_dir(state, space_id);
    if dir.exists() {
        if let Err(err) = std::fs::remove_dir_all(&dir) {
            tracing::warn!(error = %err, space = %space_id, "a purged space's repository stays");
        }
    }
}

/// Removes the copies of repositories whose spaces are gone: a space purged through another
/// node leaves its copy here until this runs (the server's sweeper, every minute).
pub async fn sweep(state: &AppState) -> anyhow::Result<usize> {
    let root = state.config.data_dir.join("git");
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Ok(0);
    };
    let ids: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".git"))
                .map(str::to_string)
        })
        .collect();
    let mut removed = 0;
    for chunk in ids.chunks(500) {
        let present = store::git::spaces_present(&state.db, chunk).await?;
        for id in chunk.iter().filter(|id| !present.contains(*id)) {
            forget(state, id);
            removed += 1;
        }
    }
    Ok(removed)
}

/// The address space a git child may map: a pack crafted to expand (a "delta bomb") makes
/// `git` ask for gigabytes, and is refused at once instead. Git's own caches are set below
/// it (see [`LIMITS`]), so that honest work of a space of any size fits.
pub const MAX_CHILD_MEMORY: u64 = 512 << 20;
/// CPU seconds a git child may use: the wall-clock caps of its callers do not stop work
/// that a small pack makes expensive.
const MAX_CHILD_CPU: u64 = 600;
/// CPU seconds `index-pack` may use on a pushed pack: an honest one of the largest size a
/// push may have is indexed in a few seconds.
pub const MAX_PUSH_CPU: u64 = 60;

/// Git's memory settings for every child, within [`MAX_CHILD_MEMORY`]: packs mapped in
/// small windows, small delta caches, two threads (each thread's allocator arena and stack
/// count against the address space), large blobs streamed rather than held whole.
const LIMITS: [&str; 8] = [
    "core.packedGitWindowSize=32m",
    "core.packedGitLimit=128m",
    "core.deltaBaseCacheLimit=32m",
    "core.bigFileThreshold=32m",
    "pack.windowMemory=64m",
    "pack.deltaCacheSize=32m",
    "pack.deltaCacheLimit=1000",
    "pack.threads=2",
];

/// The `git` program for the repository in `dir`, sealed: no system or global
/// configuration, no hooks, no prompts, a fixed environment, memory and CPU limits
/// ([`MAX_CHILD_MEMORY`], a CPU cap); stopped if dropped.
pub fn sealed(dir: &Path) -> tokio::process::Command {
    sealed_with(dir, MAX_CHILD_CPU)
}

/// [`sealed`], with at most `cpu_seconds` of CPU.
///
/// The limits are set before git's first instruction. With a shell (`/bin/sh`), the child
/// is the shell, spawned without copying the server (`posix_spawn`), which sets them with
/// `ulimit` and becomes git (`exec`): forking the server to set them itself copies its
/// page tables, about 25 ms at 350 MiB, on every fetch. Without one, the server forks and
/// sets them between fork and exec.
pub fn sealed_with(dir: &Path, cpu_seconds: u64) -> tokio::process::Command {
    let memory = MAX_CHILD_MEMORY;
    let mut cmd = match shell() {
        Some(sh) => {
            let mut cmd = tokio::process::Command::new(sh);
            // The soft CPU limit sends SIGXCPU; the hard one, a little later, SIGKILL. A
            // limit that cannot be set stops the shell before git runs.
            let script = format!(
                "ulimit -v {} && ulimit -S -t {cpu_seconds} && ulimit -H -t {} && exec \"$0\" \"$@\"",
                memory >> 10,
                cpu_seconds + 5
            );
            cmd.arg("-c").arg(script).arg(program());
            cmd
        }
        None => {
            let mut cmd = tokio::process::Command::new(program());
            let memory = memory as libc::rlim_t;
            let cpu = cpu_seconds as libc::rlim_t;
            // SAFETY: the closure runs in the child between fork and exec and only calls
            // `setrlimit`, which is async-signal-safe; it allocates nothing.
            unsafe {
                cmd.pre_exec(move || {
                    let limit = |value: libc::rlim_t, hard: libc::rlim_t| libc::rlimit {
                        rlim_cur: value,
                        rlim_max: hard,
                    };
                    if libc::setrlimit(libc::RLIMIT_AS, &limit(memory, memory)) != 0
                        || libc::setrlimit(libc::RLIMIT_CPU, &limit(cpu, cpu + 5)) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
            cmd
        }
    };
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", dir)
        .env("GIT_DIR", dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        // One arena per thread would reserve 64 MiB of address space each.
        .env("MALLOC_ARENA_MAX", "2")
        .args(["-c", "core.hooksPath=/dev/null", "-c", "safe.directory=*"])
        .kill_on_drop(true);
    for setting in LIMITS {
        cmd.args(["-c", setting]);
    }
    cmd
}

/// The shell that starts git children under their limits, when there is one.
fn shell() -> Option<&'static Path> {
    static SH: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    SH.get_or_init(|| {
        let sh = PathBuf::from("/bin/sh");
        // A shell without `ulimit -v` (or that cannot run) is not used.
        let works = std::process::Command::new(&sh)
            .args(["-c", "ulimit -v 1048576 && ulimit -S -t 3600 && exit 0"])
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        works.then_some(sh)
    })
    .as_deref()
}

/// The `git` program, found once on `PATH` (`git` when it is not there), named by its path
/// so that the child needs no search of `PATH`.
pub fn program() -> &'static Path {
    static GIT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    GIT.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|dir| dir.join("git"))
            .find(|p| {
                std::fs::metadata(p)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
            .unwrap_or_else(|| PathBuf::from("git"))
    })
}

/// Objects a repository holds, how many this preparation wrote, and the pack it writes
/// them to (loose objects without one).
#[derive(Default)]
struct Present {
    ids: HashSet<Oid>,
    written: u64,
    pack: Option<objects::PackWriter>,
    /// The text blobs put into `pack`, which git cannot read until the pack is in place: a
    /// commit carried from one made earlier in the preparation reads its files here.
    texts: HashMap<Oid, Arc<[u8]>>,
}

/// Revisions a preparation writes from which their objects go into one pack.
const PACK_FROM: usize = 8;

/// Every object id in the repository, loose or packed.
async fn objects_in(dir: &Path) -> ApiResult<HashSet<Oid>> {
    let out = sealed(dir)
        .args([
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname)",
            "--buffer",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(ApiError::internal)?;
    if !out.status.success() {
        return Err(ApiError::internal(anyhow::anyhow!(
            "git cat-file failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(Oid::from_hex)
        .collect())
}

/// Loose objects written since the last full pack, beyond which the next preparation packs
/// them all.
const PACK_AFTER: u64 = 256;
/// Loose objects written since the last full pack, one number.
const LOOSE_FILE: &str = "quire-loose";

/// Packs every object into one pack with reachability bitmaps once enough loose ones were
/// written since the last time: a clone then streams packed objects instead of compressing
/// each loose one. Nothing is pruned: a closed change request's commits stay, for when it
/// is reopened. After a preparation wrote its own pack (`packed`, whole objects only) the
/// deltas are all looked for again: git keeps packed objects as they are otherwise, and
/// the pack a clone receives would be about ten times larger.
async fn pack_if_many(dir: &Path, written: u64, packed: bool) {
    let path = dir.join(LOOSE_FILE);
    let loose = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(0)
        + written;
    if loose < PACK_AFTER {
        let _ = write_atomic(&path, loose.to_string().as_bytes());
        return;
    }
    let run = sealed(dir)
        .args([
            "-c",
            "pack.writeBitmapHashCache=true",
            "repack",
            "-a",
            "-d",
            "-q",
            "--write-bitmap-index",
        ])
        .args(packed.then_some("-f"))
        .stdin(std::process::Stdio::null())
        .output();
    match tokio::time::timeout(std::time::Duration::from_secs(600), run).await {
        Ok(Ok(out)) if out.status.success() => {
            let _ = write_atomic(&path, b"0");
        }
        Ok(Ok(out)) => tracing::warn!(
            stderr = %String::from_utf8_lossy(&out.stderr),
            "git repack of a space's repository failed"
        ),
        Ok(Err(err)) => tracing::warn!(error = %err, "git repack could not run"),
        Err(_) => tracing::warn!("git repack of a space's repository took too long"),
    }
}

/// The commit id of each revision written to the space's repository on this node.
pub fn commits_of(state: &AppState, space_id: &str) -> HashMap<String, String> {
    read_map(&repo_dir(state, space_id).join(COMMITS_FILE))
}

/// The packs of pushed objects this node's copy lacks, one pack name a line.
const PACKS_FILE: &str = "quire-packs";

/// Adds to this node's copy the packs of pushed objects that another node (or an earlier
/// copy) received: each is kept in blob storage and recorded in the database. `again`
/// indexes every pack, those marked imported too (indexing a pack the repository holds
/// changes nothing).
async fn import_packs(state: &AppState, space_id: &str, dir: &Path, again: bool) -> ApiResult<()> {
    let known = read_map(&dir.join(PACKS_FILE));
    for blob in store::git::packs(&state.db, space_id).await? {
        if known.contains_key(&blob) && !again {
            continue;
        }
        let bytes = state
            .blobs
            .get(&blob)
            .await
            .map_err(ApiError::internal)?
            .ok_or_else(|| {
                ApiError::internal(anyhow::anyhow!("the pushed pack {blob} is missing"))
            })?;
        // Checked when it was pushed; what it points to is made afterwards.
        index_pack(dir, PackInput::Bytes(bytes), None, &[])
            .await
            .map_err(ApiError::internal)?;
        append(&dir.join(PACKS_FILE), &blob, "indexed").map_err(ApiError::internal)?;
    }
    Ok(())
}

/// A pack to index: bytes in memory, or a file (a push's, as it was received).
pub enum PackInput {
    /// The pack's bytes.
    Bytes(bytes::Bytes),
    /// A file holding the pack.
    File(PathBuf),
}

/// Stores a pack into the repository in `dir` with `git index-pack`, completing a thin pack
/// from the repository. `pushed` (a push's pack, of at most that many bytes) checks every
/// object and that what they point to exists, under the tighter CPU cap of a push
/// ([`MAX_PUSH_CPU`]). `env` adds to the sealed environment (a quarantine). A pack refused
/// by the limits says so in its error.
pub async fn index_pack(
    dir: &Path,
    pack: PackInput,
    pushed: Option<u64>,
    env: &[(&str, &Path)],
) -> anyhow::Result<()> {
    let mut cmd = match pushed {
        Some(max) => {
            let mut cmd = sealed_with(dir, MAX_PUSH_CPU);
            cmd.args([
                "index-pack",
                "--stdin",
                "--fix-thin",
                "--strict",
                &format!("--max-input-size={max}"),
            ]);
            cmd
        }
        None => {
            let mut cmd = sealed(dir);
            cmd.args(["index-pack", "--stdin", "--fix-thin"]);
            cmd
        }
    };
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (mut child, writer) = match pack {
        PackInput::Bytes(pack) => {
            cmd.stdin(std::process::Stdio::piped());
            let mut child = cmd.spawn()?;
            let mut stdin = child.stdin.take().expect("piped");
            let writer = tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                let _ = stdin.write_all(&pack).await;
            });
            (child, Some(writer))
        }
        PackInput::File(path) => {
            cmd.stdin(std::fs::File::open(&path)?);
            (cmd.spawn()?, None)
        }
    };
    let stderr = child.stderr.take().expect("piped");
    let said = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        // Enough to say why; the rest is read and dropped.
        let mut text = Vec::new();
        let mut stderr = stderr;
        let _ = (&mut stderr).take(16 * 1024).read_to_end(&mut text).await;
        let _ = tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await;
        text
    });
    let status = tokio::time::timeout(std::time::Duration::from_secs(600), child.wait())
        .await
        .map_err(|_| anyhow::anyhow!("indexing the pack took too long"))??;
    if let Some(w) = writer {
        let _ = w.await;
    }
    let said = String::from_utf8_lossy(&said.await.unwrap_or_default())
        .trim()
        .to_string();
    if !status.success() {
        use std::os::unix::process::ExitStatusExt;
        let cpu = pushed.map_or(MAX_CHILD_CPU, |_| MAX_PUSH_CPU);
        if matches!(status.signal(), Some(libc::SIGXCPU) | Some(libc::SIGKILL)) {
            anyhow::bail!(
                "the pack was refused: unpacking it took more than {cpu} s of processing"
            );
        }
        if said.contains("Out of memory") || said.contains("mmap failed") {
            anyhow::bail!(
                "the pack was refused: its objects expand to more than the {} MiB this server \
                 unpacks a pack within",
                MAX_CHILD_MEMORY >> 20
            );
        }
        anyhow::bail!("{said}");
    }
    Ok(())
}

/// The folders and files a bare repository needs, made once.
fn skeleton(dir: &Path) -> std::io::Result<()> {
    if dir.join("HEAD").exists() {
        return Ok(());
    }
    std::fs::create_dir_all(dir.join("objects").join("info"))?;
    std::fs::create_dir_all(dir.join("refs").join("heads"))?;
    std::fs::create_dir_all(dir.join("refs").join("tags"))?;
    write_atomic(
        &dir.join("config"),
        b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n",
    )?;
    write_atomic(&dir.join("HEAD"), b"ref: refs/heads/main\n")
}

/// Lines of `key value` from a file of this module (a missing file is empty). A line that
/// is not whole (a write cut short) is left out: what it recorded is made again.
fn read_map(path: &Path) -> HashMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut lines: Vec<&str> = text.split('\n').collect();
    // The text after the last newline is a line cut short, or nothing.
    lines.pop();
    lines
        .into_iter()
        .filter_map(|l| l.split_once(' '))
        .filter(|(k, v)| line_ok(k, v))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Whether a map line is one this module writes: a key of plain characters and a git id
/// (or `indexed`, for a pack).
fn line_ok(key: &str, value: &str) -> bool {
    !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        && (value == "indexed" || Oid::from_hex(value).is_some_and(|o| o.to_hex() == value))
}

fn append(path: &Path, key: &str, value: &str) -> std::io::Result<()> {
    append_lines(path, &format!("{key} {value}\n"))
}

/// Appends whole lines in one write (nothing when `text` is empty).
fn append_lines(path: &Path, text: &str) -> std::io::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(text.as_bytes())
}

/// The revisions in an order where every parent comes before its children.
fn parents_first<'a>(rows: &[&'a RevisionRow]) -> Vec<&'a RevisionRow> {
    let by_id: HashMap<&str, &RevisionRow> = rows.iter().map(|r| (r.id.as_str(), *r)).collect();
    let mut done: HashSet<&str> = HashSet::new();
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        // Iterative depth-first walk over parents: histories are long.
        let mut stack: Vec<(&RevisionRow, bool)> = vec![(row, false)];
        while let Some((r, expanded)) = stack.pop() {
            if done.contains(r.id.as_str()) {
                continue;
            }
            if expanded {
                done.insert(r.id.as_str());
                out.push(r);
                continue;
            }
            stack.push((r, true));
            for p in r.parent_ids().unwrap_or_default() {
                if let Some(parent) = by_id.get(p.as_str()) {
                    if !done.contains(parent.id.as_str()) {
                        stack.push((parent, false));
                    }
                }
            }
        }
    }
    out
}

/// The recorded author and message of each revision in `rows`, recording those not yet
/// recorded.
async fn identities(
    state: &AppState,
    space_id: &str,
    rows: &[&RevisionRow],
    changes: &[store::change_requests::ChangeRequestRow],
) -> ApiResult<HashMap<String, Identity>> {
    let known = store::git::identities(&state.db, space_id).await?;
    let new: Vec<&&RevisionRow> = rows.iter().filter(|r| !known.contains_key(&r.id)).collect();
    if new.is_empty() {
        return Ok(known);
    }
    let authors: Vec<&str> = new.iter().filter_map(|r| r.created_by.as_deref()).collect();
    let people = crate::domain::access::people(state, &authors).await?;
    let merged: HashMap<&str, &store::change_requests::ChangeRequestRow> = changes
        .iter()
        .filter_map(|c| c.revision_merged.as_deref().map(|r| (r, c)))
        .collect();
    let made: Vec<Identity> = new
        .iter()
        .map(|r| {
            let author = match r.created_by.as_deref() {
                Some(id) => {
                    let name = people
                        .get(id)
                        .map(|u| u.display_name.clone())
                        .filter(|n| !n.trim().is_empty())
                        .unwrap_or_else(|| id.to_string());
                    format!("{name} <{id}@{NOREPLY}>")
                }
                None => format!("{COMMITTER} <quire@{NOREPLY}>"),
            };
            Identity {
                revision_id: r.id.clone(),
                author,
                message: message(r, merged.get(r.id.as_str()).copied()),
                oid: None,
                commit_oid: None,
                placed: None,
                carried: 1,
            }
        })
        .collect();
    let mut tx = state.db.begin().await?;
    tx.touches(&[]);
    store::git::record(&mut tx, space_id, &made).await?;
    tx.commit().await?;
    Ok(store::git::identities(&state.db, space_id).await?)
}

/// A revision's commit message: GitBook's `GITBOOK-{number}: {subject}` for a merged
/// change request, a line saying what happened otherwise.
fn message(row: &RevisionRow, merged: Option<&store::change_requests::ChangeRequestRow>) -> String {
    if let Some(c) = merged {
        let subject = c.subject.trim();
        let subject = if subject.is_empty() {
            "No subject"
        } else {
            subject
        };
        return format!("GITBOOK-{}: {subject}", c.number);
    }
    if row.parent_ids().map(|p| p.is_empty()).unwrap_or(false) {
        return "Initial content".into();
    }
    match row.kind {
        RevisionType::Edits => "Edit content",
        RevisionType::Merge => "Merge a change request",
        RevisionType::Update => "Update from main",
        RevisionType::Rollback => "Roll back to an earlier revision",
        RevisionType::Computed => "Compute content",
    }
    .into()
}

/// Writes the blobs of the revision's files not yet written (their git ids go in `files`);
/// returns them, `(sha-256, git id)`, to be recorded once the objects are in place.
async fn new_files(
    state: &AppState,
    dir: &Path,
    content: &Revision,
    files: &mut HashMap<String, String>,
    present: &mut Present,
) -> ApiResult<Vec<(String, String)>> {
    let mut new = Vec::new();
    for f in &content.files {
        if files.contains_key(&f.blob) {
            continue;
        }
        // A commit made without a file's bytes would differ from the one other nodes make:
        // refuse rather than hand out a commit id that is not the revision's.
        let bytes = state
            .blobs
            .get(&f.blob)
            .await
            .map_err(ApiError::internal)?
            .ok_or_else(|| {
                ApiError::internal(anyhow::anyhow!(
                    "the bytes of file blob {} are missing",
                    f.blob
                ))
            })?;
        let into = dir.to_path_buf();
        let mut known = std::mem::take(present);
        let (made, known) = tokio::task::spawn_blocking(move || {
            let blob = Object::new(Kind::Blob, bytes.to_vec());
            let made = write_object(&into, &blob, &mut known).map(|()| blob.id.to_hex());
            (made, known)
        })
        .await
        .map_err(ApiError::internal)?;
        *present = known;
        let id = made.map_err(ApiError::internal)?;
        new.push((f.blob.clone(), id.clone()));
        files.insert(f.blob.clone(), id);
    }
    Ok(new)
}

/// What a revision's commit says besides its tree.
struct About {
    parents: Vec<Oid>,
    /// `Name <address>`.
    author: String,
    message: String,
    /// The revision's time (seconds since the epoch).
    seconds: i64,
}

/// What a parent gives a commit made from its tree: its content, where that content is in
/// its tree, and the tree.
struct Given {
    revision: Arc<Revision>,
    placement: Arc<Placement>,
    tree: Arc<Tree>,
}

/// The parents as the content engine takes them.
fn listed(parents: &[Arc<Given>]) -> Vec<gitsync::carry::Parent<'_>> {
    parents
        .iter()
        .map(|p| gitsync::carry::Parent {
            revision: &p.revision,
            placement: &p.placement,
            tree: &p.tree,
        })
        .collect()
}

/// The parents of the commits a preparation makes: a commit is made from its parents' trees
/// (`gitsync::carry`), keeping what the revision did not change. What a commit made in the
/// preparation gives is kept until the last of its children in it is made; the others' are
/// read from the repository and the database.
struct Carry<'a> {
    rows: HashMap<&'a str, &'a RevisionRow>,
    /// Children still to be made, by revision.
    waiting: HashMap<String, usize>,
    kept: HashMap<String, Arc<Given>>,
}

impl<'a> Carry<'a> {
    fn new(rows: &'a [RevisionRow], order: &[&RevisionRow]) -> Carry<'a> {
        let mut waiting: HashMap<String, usize> = HashMap::new();
        for row in order {
            for p in row.parent_ids().unwrap_or_default() {
                *waiting.entry(p).or_default() += 1;
            }
        }
        Carry {
            rows: rows.iter().map(|r| (r.id.as_str(), r)).collect(),
            waiting,
            kept: HashMap::new(),
        }
    }

    /// Keeps what the commit just made gives its children still to be made.
    fn made(&mut self, id: &str, revision: Arc<Revision>, placement: Placement, tree: Arc<Tree>) {
        if self.waiting.get(id).is_some_and(|n| *n > 0) {
            let given = Given {
                revision,
                placement: Arc::new(placement),
                tree,
            };
            self.kept.insert(id.to_string(), Arc::new(given));
        }
    }

    /// What the parents of `row` give, the one on main's side first (the first parent, or
    /// the last of an update from main: its files Quire does not model are kept); `None`
    /// when that one gives nothing to carry (no commit, or a pushed tree read before where
    /// its content is in it was kept) and the revision is laid out whole.
    async fn parents(
        &mut self,
        state: &AppState,
        space_id: &str,
        dir: &Path,
        row: &RevisionRow,
        identities: &HashMap<String, Identity>,
        commits: &HashMap<String, String>,
    ) -> ApiResult<Option<Vec<Arc<Given>>>> {
        let mut ids = row.parent_ids().map_err(ApiError::internal)?;
        if row.kind == RevisionType::Update {
            ids.reverse();
        }
        let mut out = Vec::new();
        for (k, id) in ids.iter().enumerate() {
            match self
                .given(state, space_id, dir, id, identities, commits)
                .await?
            {
                Some(g) => out.push(g),
                None if k == 0 => break,
                None => {}
            }
        }
        for id in &ids {
            if let Some(n) = self.waiting.get_mut(id) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.kept.remove(id);
                }
            }
        }
        // Empty when the first one gave nothing.
        Ok((!out.is_empty()).then_some(out))
    }

    async fn given(
        &self,
        state: &AppState,
        space_id: &str,
        dir: &Path,
        id: &str,
        identities: &HashMap<String, Identity>,
        commits: &HashMap<String, String>,
    ) -> ApiResult<Option<Arc<Given>>> {
        if let Some(g) = self.kept.get(id) {
            return Ok(Some(g.clone()));
        }
        let (Some(commit), Some(identity), Some(row)) =
            (commits.get(id), identities.get(id), self.rows.get(id))
        else {
            return Ok(None);
        };
        let revision = crate::domain::content::load_in(state, space_id, &row.root).await?;
        let Some(placement) = placement_of(state, Some(identity), &revision).await? else {
            return Ok(None);
        };
        let tree = tree_of(dir, commit).await?;
        Ok(Some(Arc::new(Given {
            revision,
            placement: Arc::new(placement),
            tree: Arc::new(tree),
        })))
    }
}

/// Where a revision's content is in its commit's tree: as recorded, or where Quire's layout
/// puts it for a commit Quire made; `None` for a pushed tree whose placement was not kept
/// (pushed before it was, or read against another revision than its own).
pub(super) async fn placement_of(
    state: &AppState,
    identity: Option<&Identity>,
    revision: &Revision,
) -> ApiResult<Option<Placement>> {
    match identity.map(|i| (&i.placed, &i.oid)) {
        Some((Some(blob), _)) => Ok(Some(load_placement(state, blob).await?)),
        Some((None, Some(_))) => Ok(None),
        _ => Ok(Some(Placement::of(revision))),
    }
}

/// A placement kept by [`carry_blob`].
pub(super) async fn load_placement(state: &AppState, blob: &str) -> ApiResult<Placement> {
    let bytes = state
        .blobs
        .get(blob)
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(|| {
            ApiError::internal(anyhow::anyhow!("the placement blob {blob} is missing"))
        })?;
    serde_json::from_slice(&bytes).map_err(ApiError::internal)
}

/// Keeps a placement in blob storage for the space (a push's, or a carried commit's); its
/// blob.
pub(super) async fn carry_blob(
    state: &AppState,
    space_id: &str,
    placement: &Placement,
) -> ApiResult<String> {
    let json = serde_json::to_vec(placement).map_err(ApiError::internal)?;
    let blob = state
        .blobs
        .put(bytes::Bytes::from(json))
        .await
        .map_err(ApiError::internal)?;
    store::objects::add_blob_ref(&state.db, space_id, &blob).await?;
    Ok(blob)
}

/// The files of a commit of the repository.
async fn tree_of(dir: &Path, commit: &str) -> ApiResult<Tree> {
    let out = run_with_input(
        dir,
        &["ls-tree", "-r", "-z", "--full-tree", commit],
        Vec::new(),
    )
    .await
    .map_err(ApiError::internal)?;
    let mut tree = Tree::new();
    for entry in out.split(|b| *b == 0).filter(|e| !e.is_empty()) {
        let entry = String::from_utf8_lossy(entry);
        let Some((meta, path)) = entry.split_once('\t') else {
            continue;
        };
        let mut parts = meta.split(' ');
        let (mode, kind, oid) = (parts.next(), parts.next(), parts.next());
        if kind != Some("blob") {
            continue;
        }
        if let Some(oid) = oid.and_then(Oid::from_hex) {
            let executable = mode == Some("100755");
            tree.insert(path.to_string(), Leaf { oid, executable });
        }
    }
    Ok(tree)
}

/// The bytes of blobs of the repository: the texts this preparation wrote are at hand,
/// the rest is read with git. Objects this preparation is putting into its pack cannot be
/// read until the pack is in place: when git misses one, the pack is put in place first and
/// git asked again (the second value says so). A blob that cannot be read is left out.
async fn read_blobs(
    dir: &Path,
    oids: &[Oid],
    present: &mut Present,
) -> ApiResult<(HashMap<Oid, Vec<u8>>, bool)> {
    let mut found: HashMap<Oid, Vec<u8>> = oids
        .iter()
        .filter_map(|o| Some((*o, present.texts.get(o)?.to_vec())))
        .collect();
    let mut flushed = false;
    for attempt in 0..2 {
        let wanted: Vec<Oid> = oids
            .iter()
            .filter(|o| !found.contains_key(o))
            .copied()
            .collect();
        if wanted.is_empty() {
            break;
        }
        if attempt == 1 {
            match present.pack.as_mut().filter(|p| !p.is_empty()) {
                Some(pack) => {
                    let pack = std::mem::take(pack);
                    index_pack(dir, PackInput::Bytes(pack.finish().into()), None, &[])
                        .await
                        .map_err(ApiError::internal)?;
                    flushed = true;
                }
                None => break,
            }
        }
        let input: String = wanted.iter().map(|o| format!("{}\n", o.to_hex())).collect();
        let out = run_with_input(dir, &["cat-file", "--batch"], input.into_bytes())
            .await
            .map_err(ApiError::internal)?;
        for (oid, body) in batch_answers(&out) {
            if let (Some(oid), Some(body)) = (Oid::from_hex(oid), body) {
                found.insert(oid, body.to_vec());
            }
        }
    }
    Ok((found, flushed))
}

/// The answers of `git cat-file --batch`, in the order asked: each object's id and its
/// bytes (`None` for one git reports missing). Stops at an answer cut short.
pub(super) fn batch_answers(out: &[u8]) -> Vec<(&str, Option<&[u8]>)> {
    let mut answers = Vec::new();
    let mut rest = out;
    while let Some(nl) = rest.iter().position(|b| *b == b'\n') {
        let header = std::str::from_utf8(&rest[..nl]).unwrap_or("");
        let mut parts = header.split(' ');
        let oid = parts.next().unwrap_or("");
        let size: Option<usize> = parts.nth(1).and_then(|s| s.parse().ok());
        match size {
            Some(size) => {
                let Some(body) = rest.get(nl + 1..nl + 1 + size) else {
                    break;
                };
                answers.push((oid, Some(body)));
                rest = rest.get(nl + 2 + size..).unwrap_or(&[]);
            }
            // `<oid> missing`
            None => {
                answers.push((oid, None));
                rest = &rest[nl + 1..];
            }
        }
    }
    answers
}

/// What one path of a commit's tree holds.
enum Part {
    /// A blob the repository holds, and whether it is executable.
    Same(Oid, bool),
    /// New text.
    Text(String),
    /// A file of the revision, by the sha-256 of its bytes.
    Blob(String),
}

/// The revision laid out whole in Git Sync's layout (the commits of revisions whose
/// parents give nothing to carry). `page_files` holds the page files of the revision laid
/// out before (see [`gitsync::layout_with`]).
fn laid_whole(content: &Revision, page_files: &mut gitsync::PageFiles) -> Vec<(String, Part)> {
    gitsync::layout_with(content, page_files)
        .into_iter()
        .map(|(path, laid)| match laid {
            // Written with the earlier revision's commit.
            Laid::Same(id) => (path, Part::Same(id, false)),
            Laid::New(Content::Text(text)) => (path, Part::Text(text)),
            Laid::New(Content::Blob(sha)) => (path, Part::Blob(sha)),
        })
        .collect()
}

/// Writes the blobs, trees and commit of one revision; returns the commit's id and its
/// files.
fn write_commit(
    dir: &Path,
    parts: Vec<(String, Part)>,
    files: &HashMap<String, String>,
    about: &About,
    present: &mut Present,
) -> anyhow::Result<(Oid, Arc<Tree>)> {
    let seconds = about.seconds;
    let mut blobs = Tree::new();
    for (path, part) in parts {
        let leaf = match part {
            Part::Same(oid, executable) => Leaf { oid, executable },
            Part::Text(text) => {
                let blob = Object::new(Kind::Blob, text.into_bytes());
                write_object(dir, &blob, present)?;
                if present.pack.is_some() {
                    present
                        .texts
                        .entry(blob.id)
                        .or_insert_with(|| Arc::from(blob.body.as_slice()));
                }
                Leaf {
                    oid: blob.id,
                    executable: false,
                }
            }
            Part::Blob(sha) => Leaf {
                oid: files
                    .get(&sha)
                    .and_then(|h| Oid::from_hex(h))
                    .ok_or_else(|| anyhow::anyhow!("file blob {sha} was not written"))?,
                executable: false,
            },
        };
        blobs.insert(path, leaf);
    }
    let (tree, trees) =
        objects::trees_with_modes(blobs.iter().map(|(p, l)| (p.as_str(), l.oid, l.executable)))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    for t in &trees {
        write_object(dir, t, present)?;
    }
    let (name, email) = match about.author.rsplit_once(" <") {
        Some((n, e)) => (n.to_string(), e.trim_end_matches('>').to_string()),
        None => (about.author.clone(), format!("quire@{NOREPLY}")),
    };
    let author = Signature {
        name,
        email,
        seconds,
    };
    let committer = Signature {
        name: COMMITTER.into(),
        email: format!("quire@{NOREPLY}"),
        seconds,
    };
    let commit = objects::commit(tree, &about.parents, &author, &committer, &about.message);
    write_object(dir, &commit, present)?;
    Ok((commit.id, Arc::new(blobs)))
}

/// Writes an object unless the repository holds it already: into the preparation's pack,
/// or loose (written whole, then renamed).
fn write_object(dir: &Path, object: &Object, present: &mut Present) -> std::io::Result<()> {
    if !present.ids.insert(object.id) {
        return Ok(());
    }
    present.written += 1;
    if let Some(pack) = present.pack.as_mut() {
        pack.add(object);
        return Ok(());
    }
    let hex = object.id.to_hex();
    let folder = dir.join("objects").join(&hex[..2]);
    let path = folder.join(&hex[2..]);
    std::fs::create_dir_all(&folder)?;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(format!("{} {}\0", object.kind.as_str(), object.body.len()).as_bytes())?;
    z.write_all(&object.body)?;
    // Named as git names its own temporary objects, so that one a crash leaves is no
    // "bad sha1 file" to `git fsck` and is pruned as git's are.
    let tmp = folder.join(format!("tmp_obj_{}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&tmp, z.finish()?)?;
    std::fs::rename(&tmp, &path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Replaces the repository's branches with `refs` (in `packed-refs`, written whole).
fn write_refs(dir: &Path, mut refs: Vec<(String, String)>) -> std::io::Result<()> {
    refs.sort();
    let mut text = String::from("# pack-refs with: peeled fully-peeled sorted \n");
    for (name, id) in &refs {
        text.push_str(&format!("{id} {name}\n"));
    }
    write_atomic(&dir.join("packed-refs"), text.as_bytes())
}

/// Writes a file whole: readers see the old one or the new one.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cat-file --batch` answers in order: bodies holding newlines, a missing object, and
    /// an answer cut short ends the list.
    #[test]
    fn batch_answers_are_read_in_order() {
        let out = b"aa blob 3\na\nb\nbb missing\ncc blob 1\nx\ndd blob 9\nshort";
        let answers = batch_answers(out);
        assert_eq!(
            answers,
            [
                ("aa", Some(b"a\nb".as_slice())),
                ("bb", None),
                ("cc", Some(b"x".as_slice()))
            ]
        );
    }

    /// Git is started by its path whenever it is installed: by bare name, with `PATH` set
    /// for the child, the standard library would fork the server for every command; so it
    /// would with limits set between fork and exec, which the shell sets instead.
    #[tokio::test]
    async fn git_is_started_by_its_path_under_its_limits() {
        let installed = std::process::Command::new("git")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !installed {
            eprintln!("git is not installed: nothing to check");
            return;
        }
        let cmd = sealed(Path::new("/nonexistent"));
        let std = cmd.as_std();
        let program = Path::new(std.get_program());
        assert!(program.is_absolute(), "{}", program.display());
        let git = match shell() {
            Some(sh) => {
                assert_eq!(program, sh);
                PathBuf::from(std.get_args().nth(2).expect("git's path"))
            }
            None => program.to_path_buf(),
        };
        assert!(git.is_absolute(), "{}", git.display());
        assert_eq!(git.file_name().and_then(|n| n.to_str()), Some("git"));

        // The limits hold in git itself (an alias runs in a shell git starts).
        let dir = tempfile::tempdir().unwrap();
        let out = sealed_with(dir.path(), 42)
            .args([
                "-c",
                "alias.limits=!ulimit -v; ulimit -S -t; ulimit -H -t",
                "limits",
            ])
            .output()
            .await
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stdout);
        let said: Vec<&str> = said.lines().collect();
        assert_eq!(said, [&*(MAX_CHILD_MEMORY >> 10).to_string(), "42", "47"]);
    }
}

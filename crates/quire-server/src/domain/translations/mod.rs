//! Translations of spaces: requesting a run, and the run itself as a durable job.
//!
//! A run reads the source space's current content, and for each page compares the hash of
//! what a translation depends on (the page's own fields and body, both languages, the
//! instructions) with the hash recorded when that page was last translated. Unchanged
//! pages keep their translation from the result space's current content; the others have
//! their text runs (never code, URLs, references or markup: see
//! `quire_content::translate`) sent to the provider, and are reassembled into the source's
//! structure, under the source's page ids. The result revision, the hashes and the stats
//! are written in one transaction at the end: a run that fails leaves everything as it was.
//!
//! States: `pending` (a job waits) → `running` → `completed`, or `failed` with a reason (the
//! result keeps its previous revision). A run requested while one runs is remembered
//! (`queued`) and starts when that one ends: never lost, never run twice at once.

pub mod glossary;
pub mod provider;

use std::collections::HashMap;

use quire_content::model::{Page, PageKind, Revision, SharedDocument};
use quire_content::translate::{is_prose, word_count, Segmented};
use sha2::Digest;

use crate::db::Tx;
use crate::domain::access::{require_role, OrgCtx, Role, SpaceCtx};
use crate::domain::auth::Caller;
use crate::domain::content;
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::spaces::SpaceRow;
use crate::store::translations::{Completed, NewTranslation, TranslationRow};
use crate::values::{EditMode, RevisionType, Visibility};

/// Job kind of a translation run; its payload is the translation's id.
pub const JOB: &str = "translate";

/// The job that runs a translation.
pub const JOB_KIND: crate::state::JobKind = crate::state::JobKind {
    name: JOB,
    run: |state, job| Box::pin(run(state, &job.id, &job.payload)),
    given_up: Some(|tx, job, reason, now| {
        Box::pin(job_failed(tx, &job.id, &job.payload, reason, now))
    }),
};

/// Bumped when what a run produces from the same input changes: every page is then
/// translated again.
const TRANSLATOR_VERSION: &str = "1";

/// Deepest page tree walked (the content engine keeps trees far shallower).
const MAX_TREE_DEPTH: usize = 64;

/// Requests a run inside `tx`, on the translation row as locked there: a job is enqueued
/// unless one already waits (`pending`) or a run is under way, which then runs again when
/// it ends. The worker is woken once `tx` has committed (see [`wake`]).
pub async fn request_run(tx: &mut Tx, row: &TranslationRow, now: i64) -> ApiResult<()> {
    match row.status.as_str() {
        "pending" if row.run_job.is_some() => {}
        "running" => store::translations::mark_queued(tx, &row.id).await?,
        _ => {
            let job = store::jobs::enqueue(tx, JOB, &row.id, now, now).await?;
            store::translations::mark_pending(tx, &row.id, &job, now).await?;
        }
    }
    Ok(())
}

/// Tells this node's job worker that a job is due now.
pub fn wake(state: &AppState) {
    state.jobs_due.notify_one();
}

/// The plain text of an instructions document, as the provider gets it.
pub fn instructions_text(json: &str) -> String {
    serde_json::from_str::<quire_content::Document>(json)
        .map(|d| d.plain_text())
        .unwrap_or_default()
}

/// Runs the translation `translation_id` for the job `job_id`. Provider and content
/// failures are recorded in the translation (the job is done); database failures are
/// returned (the job is tried again, and takes up the run it held).
pub async fn run(state: &AppState, job_id: &str, translation_id: &str) -> anyhow::Result<()> {
    if !store::translations::start(&state.db, translation_id, job_id, state.now()).await? {
        return Ok(());
    }
    match attempt(state, job_id, translation_id).await {
        Ok(()) => Ok(()),
        Err(Outcome::Failed(reason)) => {
            tracing::info!(translation = %translation_id, reason = %reason, "translation run failed");
            end_failed(state, job_id, translation_id, &reason).await?;
            Ok(())
        }
        Err(Outcome::Internal(err)) => Err(err),
    }
}

/// Why a run did not complete.
enum Outcome {
    /// A reason for users; recorded in the translation.
    Failed(String),
    /// Storage trouble: the job is retried.
    Internal(anyhow::Error),
}

impl From<ApiError> for Outcome {
    fn from(e: ApiError) -> Self {
        Outcome::Internal(anyhow::anyhow!("{e:?}"))
    }
}

impl From<sqlx::Error> for Outcome {
    fn from(e: sqlx::Error) -> Self {
        Outcome::Internal(e.into())
    }
}

/// One page to translate, and where its texts are in the run's list.
struct Todo {
    page_id: String,
    hash: String,
    title: bool,
    description: bool,
    body: Option<Segmented>,
    texts: usize,
}

/// The result revision with the unchanged pages filled in, and the pages left to translate.
struct Plan {
    revision: Revision,
    todo: Vec<Todo>,
    texts: Vec<String>,
}

async fn attempt(state: &AppState, job_id: &str, id: &str) -> Result<(), Outcome> {
    let started = state.now();
    let row = store::translations::get_by_id(&state.db, id)
        .await?
        .ok_or_else(|| Outcome::Failed("The translation no longer exists.".into()))?;
    let config = state.config.translation.clone();
    let Some(provider) = config.provider.clone() else {
        return Err(Outcome::Failed(
            "No machine-translation provider is configured on this server: its operator sets \
             one with --translation-openai-url or --translation-libretranslate-url."
                .into(),
        ));
    };
    let source = store::spaces::get(&state.db, &row.source_space)
        .await?
        .filter(|s| s.deleted_at.is_none())
        .ok_or_else(|| {
            Outcome::Failed(format!(
                "The source space `{}` no longer exists.",
                row.source_space
            ))
        })?;
    let source_root = root_of(state, &source).await?;
    let source_rev = content::load_in(state, &source.id, &source_root).await?;
    let result = match &row.result_space {
        Some(space) => store::spaces::get(&state.db, space)
            .await?
            .filter(|s| s.deleted_at.is_none()),
        None => None,
    };
    let previous = match &result {
        Some(space) => {
            let root = root_of(state, space).await?;
            Some(content::load_in(state, &space.id, &root).await?)
        }
        None => None,
    };
    let stored: HashMap<String, String> = store::translations::page_hashes(&state.db, id)
        .await?
        .into_iter()
        .collect();
    let terms = glossary::pairs(state, &row.org_id, &row.source_language, &row.language).await?;
    // The glossary's terms for these languages change what a page becomes.
    let salt = format!(
        "{TRANSLATOR_VERSION}\n{}\n{}\n{}\n{:?}\n",
        row.source_language, row.language, row.instructions, terms
    );
    let plan = {
        let (source_rev, previous) = (source_rev.clone(), previous.clone());
        tokio::task::spawn_blocking(move || plan(&source_rev, previous.as_deref(), &stored, &salt))
            .await
            .map_err(|e| Outcome::Internal(e.into()))?
    };
    let chars: usize = plan.texts.iter().map(|t| t.chars().count()).sum();
    if chars > config.budget_chars {
        return Err(Outcome::Failed(format!(
            "This run would send {chars} characters to the translation provider, more than the \
             server's budget of {} per run.",
            config.budget_chars
        )));
    }
    let words: usize = plan.texts.iter().map(|t| word_count(t)).sum();
    let ask = provider::Ask {
        from: &row.source_language,
        to: &row.language,
        instructions: &instructions_text(&row.instructions),
        glossary: &terms,
    };
    let translated = if plan.texts.is_empty() {
        Vec::new()
    } else {
        provider::translate(state, &config, &provider, &ask, &plan.texts)
            .await
            .map_err(Outcome::Failed)?
    };
    let pages = plan.todo.len();
    let (revision, hashes) = tokio::task::spawn_blocking(move || assemble(plan, &translated))
        .await
        .map_err(|e| Outcome::Internal(e.into()))?
        .map_err(Outcome::Failed)?;
    let finished = state.now();
    let stats = Stats {
        duration_s: ((finished - row.run_started_at.unwrap_or(started)).max(0) + 500) / 1000,
        pages: pages as i64,
        words: words as i64,
    };
    save(
        state, job_id, &row, &source, result, revision, &hashes, &stats,
    )
    .await
}

/// The stats of one run.
struct Stats {
    duration_s: i64,
    pages: i64,
    words: i64,
}

/// A space's current root.
async fn root_of(state: &AppState, space: &SpaceRow) -> ApiResult<String> {
    Ok(content::revision_row(state, &space.id, &space.revision_id)
        .await?
        .map(|r| r.root.clone())
        .unwrap_or_default())
}

/// Decides, page by page, what is kept and what is sent.
fn plan(
    source: &Revision,
    previous: Option<&Revision>,
    stored: &HashMap<String, String>,
    salt: &str,
) -> Plan {
    let mut revision = source.clone();
    let mut todo = Vec::new();
    let mut texts = Vec::new();
    let before: HashMap<&str, &Page> = previous
        .map(|p| {
            p.flatten()
                .into_iter()
                .map(|f| (f.page.id.as_str(), f.page))
                .collect()
        })
        .unwrap_or_default();
    let mut stack: Vec<(&mut Page, usize)> = revision.pages.iter_mut().map(|p| (p, 1)).collect();
    while let Some((page, depth)) = stack.pop() {
        let hash = page_hash(page, salt);
        let kept = stored.get(&page.id) == Some(&hash);
        match before.get(page.id.as_str()) {
            Some(old) if kept && old.type_name() == page.type_name() => {
                page.title.clone_from(&old.title);
                page.description.clone_from(&old.description);
                if let PageKind::Document(done) = &old.kind {
                    if matches!(page.kind, PageKind::Document(_)) {
                        page.kind = PageKind::Document(done.clone());
                    }
                }
            }
            _ => {
                let start = texts.len();
                let title = is_prose(&page.title);
                if title {
                    texts.push(page.title.trim().to_string());
                }
                let description = page.description.as_deref().is_some_and(is_prose);
                if let (true, Some(d)) = (description, &page.description) {
                    texts.push(d.trim().to_string());
                }
                let body = match &page.kind {
                    PageKind::Document(doc) => {
                        let seg = Segmented::of_markdown(&doc.markdown);
                        texts.extend(seg.texts().iter().cloned());
                        Some(seg)
                    }
                    _ => None,
                };
                todo.push(Todo {
                    page_id: page.id.clone(),
                    hash,
                    title,
                    description,
                    body,
                    texts: texts.len() - start,
                });
            }
        }
        if depth < MAX_TREE_DEPTH {
            stack.extend(page.pages.iter_mut().map(|p| (p, depth + 1)));
        }
    }
    Plan {
        revision,
        todo,
        texts,
    }
}

/// What a page's translation depends on: its own fields and body (not its children), the
/// languages and the instructions.
fn page_hash(page: &Page, salt: &str) -> String {
    let mut h = sha2::Sha256::new();
    h.update(salt.as_bytes());
    h.update(serde_json::to_vec(&page.without_children()).unwrap_or_default());
    hex::encode(h.finalize())
}

/// Puts the translations into the planned revision; the hashes of the pages translated.
#[allow(clippy::type_complexity)]
fn assemble(
    plan: Plan,
    translated: &[String],
) -> Result<(Revision, Vec<(String, String)>), String> {
    let Plan {
        mut revision,
        todo,
        texts,
    } = plan;
    if translated.len() != texts.len() {
        return Err("The translation provider answered fewer texts than it was sent.".into());
    }
    let mut at = 0;
    let mut hashes = Vec::with_capacity(todo.len());
    for item in todo {
        let mine = &translated[at..at + item.texts];
        at += item.texts;
        let mut next = mine.iter();
        let Some(page) = revision.page_mut(&item.page_id) else {
            continue;
        };
        if item.title {
            if let Some(t) = next.next() {
                page.title = t.trim().to_string();
            }
        }
        if item.description {
            if let Some(t) = next.next() {
                page.description = Some(t.trim().to_string());
            }
        }
        let fields = match (&item.body, &page.kind) {
            (Some(_), PageKind::Document(doc)) => Some(doc.clone().into_inner()),
            _ => None,
        };
        if let (Some(seg), Some(mut fields)) = (item.body, fields) {
            let rest: Vec<String> = next.cloned().collect();
            fields.markdown = seg.reassemble(&rest).ok_or_else(|| {
                "The translation provider answered a different number of texts.".to_string()
            })?;
            page.kind = PageKind::Document(SharedDocument::new(fields));
        }
        hashes.push((item.page_id, item.hash));
    }
    Ok((revision, hashes))
}

/// Writes the result in one transaction: the result space (created on the first run),
/// its new revision, the page hashes and the stats, only while the run still holds the
/// translation. A queued run is enqueued in the same transaction.
#[allow(clippy::too_many_arguments)]
async fn save(
    state: &AppState,
    job_id: &str,
    row: &TranslationRow,
    source: &SpaceRow,
    result: Option<SpaceRow>,
    revision: Revision,
    hashes: &[(String, String)],
    stats: &Stats,
) -> Result<(), Outcome> {
    let now = state.now();
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(&row.org_id)]);
    let Some(current) = store::translations::lock(&mut tx, &row.id).await? else {
        return Ok(());
    };
    if current.run_job.as_deref() != Some(job_id) || current.status != "running" {
        return Ok(());
    }
    let blobs: Vec<String> = revision.files.iter().map(|f| f.blob.clone()).collect();
    let (space_id, revision_id, saved) = match result {
        None => {
            let space = result_space(&mut tx, row, source, now).await?;
            store::spaces::insert(&mut tx, &space).await?;
            let saved = content::save(state, &mut tx, &space.id, revision).await?;
            store::revisions::insert(
                &mut tx,
                &store::revisions::NewRevision {
                    id: &space.revision_id,
                    space_id: &space.id,
                    parents: &[],
                    kind: RevisionType::Edits,
                    root: &saved.root,
                    created_by: Some(&row.created_by),
                    created_at: now,
                },
            )
            .await?;
            (space.id, space.revision_id, Some(saved))
        }
        Some(space) => {
            let space = store::spaces::get_tx(&mut tx, &space.id)
                .await?
                .ok_or_else(|| Outcome::Internal(anyhow::anyhow!("result space vanished")))?;
            let old_root = store::revisions::root_of(&mut tx, &space.id, &space.revision_id)
                .await?
                .unwrap_or_default();
            let saved = content::save(state, &mut tx, &space.id, revision).await?;
            if saved.root == old_root {
                (space.id, space.revision_id, None)
            } else {
                let revision_id = new_id();
                store::revisions::insert(
                    &mut tx,
                    &store::revisions::NewRevision {
                        id: &revision_id,
                        space_id: &space.id,
                        parents: std::slice::from_ref(&space.revision_id),
                        kind: RevisionType::Edits,
                        root: &saved.root,
                        created_by: Some(&row.created_by),
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
                    return Err(Outcome::Internal(anyhow::anyhow!(
                        "the result space changed during the run"
                    )));
                }
                (space.id, revision_id, Some(saved))
            }
        }
    };
    let blob_refs: Vec<&str> = blobs.iter().map(String::as_str).collect();
    tx.touches(&[crate::cache::Scope::Space(&space_id)]);
    store::objects::add_blob_refs_tx(&mut tx, &space_id, &blob_refs).await?;
    if let Some(saved) = &saved {
        crate::domain::search::reindex(state, &mut tx, &space_id, &revision_id, saved.revision())
            .await?;
    }
    store::translations::put_page_hashes(&mut tx, &row.id, hashes).await?;
    let done = Completed {
        result_space: &space_id,
        result_revision: &revision_id,
        duration_s: stats.duration_s,
        pages: stats.pages,
        words: stats.words,
    };
    store::translations::complete(&mut tx, &row.id, job_id, &done, now).await?;
    let follow = current.queued != 0;
    if follow {
        let job = store::jobs::enqueue(&mut tx, JOB, &row.id, now, now).await?;
        store::translations::mark_pending(&mut tx, &row.id, &job, now).await?;
    }
    tx.commit().await?;
    if let Some(saved) = saved {
        content::remember(state, saved);
    }
    if follow {
        wake(state);
    }
    Ok(())
}

/// The row of a new result space: beside the source at the organization's root, private,
/// in the target language.
async fn result_space(
    tx: &mut Tx,
    row: &TranslationRow,
    source: &SpaceRow,
    now: i64,
) -> ApiResult<SpaceRow> {
    let suffix = format!(" ({})", row.language);
    let keep = 50usize.saturating_sub(suffix.chars().count());
    let title: String = source.title.chars().take(keep).collect::<String>() + &suffix;
    Ok(SpaceRow {
        id: new_id(),
        org_id: source.org_id.clone(),
        parent_id: None,
        title,
        emoji: source.emoji.clone(),
        visibility: Visibility::Private,
        edit_mode: EditMode::Live,
        language: Some(row.language.clone()),
        default_level: Some("inherit".into()),
        revision_id: new_id(),
        change_requests: 0,
        change_requests_open: 0,
        change_requests_draft: 0,
        position: store::spaces::next_position(tx, source.org_id.as_str()).await?,
        created_at: now,
        updated_at: now,
        deleted_at: None,
    })
}

/// Records a failed run (the result is untouched) and starts a queued one.
async fn end_failed(state: &AppState, job_id: &str, id: &str, reason: &str) -> anyhow::Result<()> {
    let now = state.now();
    let mut tx = state.db.begin().await?;
    tx.touches(&[]);
    let follow = job_failed(&mut tx, job_id, id, reason, now).await?;
    tx.commit().await?;
    // Nothing cached rests on a translation's state: its reads go to the database.
    if follow {
        wake(state);
    }
    Ok(())
}

/// Records inside `tx` that the run held by `job_id` failed with `reason` (also for a job
/// given up on: it kept failing, or its process kept stopping), if that job still holds
/// the run, and enqueues a queued one; returns whether it did (wake the worker once
/// committed).
pub async fn job_failed(
    tx: &mut Tx,
    job_id: &str,
    id: &str,
    reason: &str,
    now: i64,
) -> anyhow::Result<bool> {
    let Some(current) = store::translations::lock(tx, id).await? else {
        return Ok(false);
    };
    if current.run_job.as_deref() != Some(job_id) {
        return Ok(false);
    }
    store::translations::fail(tx, id, job_id, reason, now).await?;
    let follow = current.queued != 0;
    if follow {
        let job = store::jobs::enqueue(tx, JOB, id, now, now).await?;
        store::translations::mark_pending(tx, id, &job, now).await?;
    }
    Ok(follow)
}

/// The official `TranslationLanguage` values.
pub const LANGUAGES: &[&str] = &[
    "en", "fr", "de", "es", "it", "pt", "pt-br", "ru", "ja", "zh", "yue", "ko", "ar", "hi", "nl",
    "pl", "tr", "sv", "no", "da", "fi", "el", "cs", "hu", "ro", "th", "vi", "id", "ms", "he", "uk",
    "sk", "bg", "hr", "lt", "lv", "et", "sl",
];

/// An empty instructions document.
pub const NO_INSTRUCTIONS: &str = r#"{"object":"document","data":{},"nodes":[]}"#;

/// Refuses a language outside [`LANGUAGES`], naming `field`.
pub fn check_language(field: &str, value: &str) -> ApiResult<()> {
    if LANGUAGES.contains(&value) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "`{field}`: `{}` is not a supported language (one of {}).",
            value.chars().take(32).collect::<String>(),
            LANGUAGES.join(", ")
        )))
    }
}

/// The same page in the other languages of `ctx`'s space: the spaces translations link it
/// with (its own translations, or its source and the source's other translations), live,
/// readable by `ctx`'s caller, whose current content holds a page of id `page_id` (a run
/// writes the source's pages under their ids). In the order the translations were made.
pub async fn page_alternates(
    state: &AppState,
    ctx: &SpaceCtx,
    page_id: &str,
) -> ApiResult<Vec<String>> {
    let org_id = ctx.space.org_id.as_str();
    let pairs = store::translations::language_group(&state.db, org_id, &ctx.space.id).await?;
    let mut seen = std::collections::HashSet::from([ctx.space.id.clone()]);
    let mut found = Vec::new();
    for id in pairs
        .into_iter()
        .flat_map(|(source, result)| [source, result])
    {
        if !seen.insert(id.clone()) {
            continue;
        }
        let Some(space) = crate::domain::access::space_row(state, &id).await? else {
            continue;
        };
        if space.deleted_at.is_some()
            || space.org_id.as_str() != org_id
            || ctx.grants.space_role(&space).is_none()
        {
            continue;
        }
        let Some(row) = content::revision_row(state, &space.id, &space.revision_id).await? else {
            continue;
        };
        // An empty revision has no root, and no page.
        if !row.root.is_empty()
            && content::page_of(state, &space.id, &row.root, page_id)
                .await?
                .is_some()
        {
            found.push(id);
        }
    }
    Ok(found)
}

/// A translation to make: of `space` from `source_language` into `language`, with the
/// stored JSON of its instructions document.
pub struct New {
    /// The source space's id.
    pub space: String,
    /// The source's language.
    pub source_language: String,
    /// The language to translate into.
    pub language: String,
    /// The instructions document, as stored JSON.
    pub instructions: String,
}

/// Creates a translation of a space the caller reads (create role in the organization)
/// and requests its first run; answers it as stored, its run requested (`pending`).
pub async fn create(
    state: &AppState,
    org: &OrgCtx,
    caller: &Caller,
    new: New,
) -> ApiResult<TranslationRow> {
    require_role(org.role, Role::Create, "translate spaces")?;
    check_language("language", &new.language)?;
    check_language("source.language", &new.source_language)?;
    if new.language == new.source_language {
        return Err(ApiError::bad_request(
            "`language` must differ from `source.language`.",
        ));
    }
    let not_found = || {
        ApiError::bad_request(format!(
            "`source.space`: space `{}` not found in this organization.",
            new.space.chars().take(64).collect::<String>()
        ))
    };
    let space = match crate::domain::access::load_space(state, caller, &new.space).await {
        Ok(ctx) => ctx,
        Err(ApiError::NotFound(_)) => return Err(not_found()),
        Err(other) => return Err(other),
    };
    if space.space.org_id != org.org.id || space.space.deleted_at.is_some() {
        return Err(not_found());
    }
    let now = state.now();
    let id = new_id();
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(org.org.id.as_str())]);
    store::translations::insert(
        &mut tx,
        &NewTranslation {
            id: &id,
            org_id: org.org.id.as_str(),
            source_space: &space.space.id,
            source_language: &new.source_language,
            language: &new.language,
            instructions: &new.instructions,
            created_by: caller.user.id.as_str(),
            now,
        },
    )
    .await?;
    let row = store::translations::lock(&mut tx, &id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("translation vanished")))?;
    request_run(&mut tx, &row, now).await?;
    tx.commit().await?;
    // Read before the worker is woken: the answer shows the run as requested (`pending`).
    let row = store::translations::get(&state.db, org.org.id.as_str(), &id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("translation vanished")))?;
    wake(state);
    Ok(row)
}

/// Requests another run of translation `id` (create role in the organization).
pub async fn run_again(state: &AppState, org: &OrgCtx, id: &str) -> ApiResult<()> {
    require_role(org.role, Role::Create, "translate spaces")?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[]);
    let row = store::translations::lock(&mut tx, id)
        .await?
        .filter(|r| r.org_id == org.org.id.as_str())
        .ok_or_else(|| ApiError::not_found(format!("Translation `{id}` not found.")))?;
    request_run(&mut tx, &row, state.now()).await?;
    tx.commit().await?;
    wake(state);
    Ok(())
}

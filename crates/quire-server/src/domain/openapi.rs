//! OpenAPI specifications: their processing, a durable job ([`JOB`]) that takes the source a
//! spec was last given (text, or a URL fetched through the safe fetcher), checks it with the
//! content engine and stores a new version when the document changed; and the reading of a
//! version's document, for the API and for pages that embed an operation.

use bytes::Bytes;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::db::Tx;
use crate::domain::access::{require_role, OrgCtx, Role};
use crate::error::{ApiError, ApiResult};
use crate::fetch::FetchError;
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::openapi::{PendingSource, SpecRow, VersionRow};

/// Job kind that processes a specification's source (payload: the spec's id and the
/// source's number, space-separated).
pub const JOB: &str = "openapi-process";

/// The job that processes a specification's new version.
pub const JOB_KIND: crate::state::JobKind = crate::state::JobKind {
    name: JOB,
    run: |state, job| Box::pin(process(state, &job.payload)),
    given_up: Some(|tx, job, reason, now| {
        Box::pin(async move {
            job_failed(tx, &job.payload, reason, now).await?;
            Ok(false)
        })
    }),
};

/// How long fetching a source may take.
const FETCH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(20);

/// Most specifications an organization may hold.
pub const MAX_SPECS: i64 = 1000;

/// The slug pattern `^[a-z0-9]+(?:-[a-z0-9]+)*$`, 1 to 100 characters.
pub fn valid_slug(slug: &str) -> bool {
    !slug.is_empty()
        && slug.len() <= 100
        && slug.split('-').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// Enqueues the processing of source `seq` of a spec, in the transaction that gave it.
pub async fn enqueue(tx: &mut Tx, spec_id: &str, seq: i64, now: i64) -> sqlx::Result<()> {
    store::jobs::enqueue(tx, JOB, &format!("{spec_id} {seq}"), now, now).await?;
    Ok(())
}

/// One processing error, as the spec reports it (`lastProcessedErrors`).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ProcessError {
    /// Quire's code for what went wrong (`BROKEN_REF`, `SWAGGER_2_UNSUPPORTED`...).
    pub code: String,
    /// What went wrong.
    pub message: String,
}

/// A failed processing: the official error code and Quire's own.
struct Failure {
    /// `FETCH_TIMEOUT`, `FETCH_ERROR` or `PARSE_ERROR`.
    official: &'static str,
    error: ProcessError,
}

/// Longest message kept for a failed processing, in characters (it is stored on the spec).
const MAX_MESSAGE_CHARS: usize = 2000;

impl Failure {
    fn new(official: &'static str, code: &str, message: impl Into<String>) -> Self {
        let mut message: String = message.into();
        if let Some((cut, _)) = message.char_indices().nth(MAX_MESSAGE_CHARS) {
            message.truncate(cut);
            message.push('…');
        }
        Failure {
            official,
            error: ProcessError {
                code: code.to_string(),
                message,
            },
        }
    }
}

/// The [`JOB`]: processes the spec's current source. A source that cannot be fetched or is
/// not a valid specification is a result (the spec's failed state), not a job failure;
/// only storage errors make the job retry.
pub async fn process(state: &AppState, payload: &str) -> anyhow::Result<()> {
    let (spec_id, seq) = payload
        .split_once(' ')
        .and_then(|(id, seq)| Some((id, seq.parse::<i64>().ok()?)))
        .ok_or_else(|| anyhow::anyhow!("malformed OpenAPI job payload"))?;
    let Some(spec) = store::openapi::by_id(&state.db, spec_id).await? else {
        return Ok(()); // deleted since
    };
    let Some(source) =
        store::openapi::start_processing(&state.db, spec_id, seq, state.now()).await?
    else {
        return Ok(()); // replaced by a newer source, which has its own job
    };
    let outcome = checked_document(state, source).await;
    let now = state.now();
    match outcome {
        Ok(document) => {
            let hash = hex::encode(Sha256::digest(&document));
            let latest = match &spec.last_version {
                Some(id) => store::openapi::version(&state.db, spec_id, id).await?,
                None => None,
            };
            let version = if latest.as_ref().is_some_and(|v| v.hash == hash) {
                None
            } else {
                let size = i64::try_from(document.len()).unwrap_or(i64::MAX);
                state.blobs.put_spec(document).await?;
                Some(VersionRow {
                    id: new_id(),
                    spec_id: spec_id.to_string(),
                    hash,
                    size,
                    created_at: now,
                })
            };
            let mut tx = state.db.begin().await?;
            tx.touches(&[]);
            store::openapi::finish_processing(&mut tx, spec_id, seq, version.as_ref(), None, now)
                .await?;
            tx.commit().await?;
        }
        Err(failure) => {
            tracing::info!(spec = %spec_id, code = %failure.error.code, "OpenAPI processing failed");
            let errors = serde_json::to_string(&[&failure.error])?;
            let mut tx = state.db.begin().await?;
            tx.touches(&[]);
            store::openapi::finish_processing(
                &mut tx,
                spec_id,
                seq,
                None,
                Some((failure.official, &errors)),
                now,
            )
            .await?;
            tx.commit().await?;
        }
    }
    // Nothing cached rests on a spec's processing state: its reads go to the database.
    Ok(())
}

/// Records a processing job given up on (it kept failing, or its process kept stopping
/// while it ran) as the spec's failed processing, unless a newer source arrived since.
pub async fn job_failed(tx: &mut Tx, payload: &str, reason: &str, now: i64) -> anyhow::Result<()> {
    let Some((spec_id, seq)) = payload
        .split_once(' ')
        .and_then(|(id, seq)| Some((id, seq.parse::<i64>().ok()?)))
    else {
        return Ok(());
    };
    let failure = Failure::new(
        "PARSE_ERROR",
        "PROCESSING_FAILED",
        format!("The specification could not be processed: {reason}"),
    );
    let errors = serde_json::to_string(&[&failure.error])?;
    store::openapi::finish_processing(
        tx,
        spec_id,
        seq,
        None,
        Some((failure.official, &errors)),
        now,
    )
    .await?;
    Ok(())
}

/// Most other files a specification fetched from a URL may reference.
pub const MAX_FILES: usize = 20;

/// The source's text, read and checked; the document as compact JSON. A document fetched
/// from a URL brings the other files its `$ref`s name (relative to it), fetched the same way
/// and bundled into it; a document given as text has no place to find them.
async fn checked_document(state: &AppState, source: PendingSource) -> Result<Bytes, Failure> {
    let max = state.config.max_spec_bytes;
    let document = match (source.source_text, source.source_url) {
        (Some(text), _) => {
            if text.len() > max {
                return Err(Failure::new(
                    "PARSE_ERROR",
                    "TOO_LARGE",
                    format!("The specification is larger than {max} bytes."),
                ));
            }
            blocking(move || quire_content::openapi::parse_text(&text)).await?
        }
        (None, Some(url)) => fetch_bundle(state, &url, max).await?,
        (None, None) => {
            return Err(Failure::new(
                "PARSE_ERROR",
                "NO_SOURCE",
                "The specification has no source to process.",
            ))
        }
    };
    // Checking and writing a few megabytes takes a while: off the async threads.
    let bytes = blocking(move || {
        quire_content::openapi::check(&document)?;
        serde_json::to_vec(&document)
            .map_err(|e| quire_content::openapi::SpecError::new("INVALID_SPEC", e.to_string()))
    })
    .await?;
    Ok(Bytes::from(bytes))
}

/// Runs content-engine work on the blocking threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, quire_content::openapi::SpecError> + Send + 'static,
) -> Result<T, Failure> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| {
            Failure::new(
                "PARSE_ERROR",
                "INTERNAL",
                "The specification could not be processed.",
            )
        })?
        .map_err(|e| Failure::new("PARSE_ERROR", e.code, e.message))
}

/// Fetches `url` (at most `max` bytes) as text.
async fn fetch_text(
    state: &AppState,
    url: &str,
    what: &str,
    max: usize,
) -> Result<String, Failure> {
    // Our own deadline, inside the fetcher's: a source that answers too slowly is reported
    // as such (the fetcher itself tells no failure from another).
    let fetched = tokio::time::timeout(FETCH_DEADLINE, state.fetcher.get(url, max))
        .await
        .map_err(|_| {
            Failure::new(
                "FETCH_TIMEOUT",
                "FETCH_TIMEOUT",
                format!(
                    "{what} did not answer within {} seconds.",
                    FETCH_DEADLINE.as_secs()
                ),
            )
        })?;
    let fetched = fetched.map_err(|e| match e {
        FetchError::TooLarge(n) => Failure::new(
            "FETCH_ERROR",
            "TOO_LARGE",
            format!("{what} is larger than {n} bytes."),
        ),
        other => Failure::new("FETCH_ERROR", "FETCH_FAILED", format!("{what} {other}.")),
    })?;
    String::from_utf8(fetched.bytes.to_vec()).map_err(|_| {
        Failure::new(
            "PARSE_ERROR",
            "NOT_TEXT",
            format!("{what} is not UTF-8 text."),
        )
    })
}

/// The document at `url` with the other files its references name, fetched breadth first
/// (at most [`MAX_FILES`], `max` bytes in all) and bundled under
/// [`quire_content::openapi::BUNDLED`], every reference rewritten to point there.
async fn fetch_bundle(
    state: &AppState,
    url: &str,
    max: usize,
) -> Result<serde_json::Value, Failure> {
    use quire_content::openapi::{
        bundle, external_refs, parse_text_within, rewrite_refs, shown, BUNDLED, MAX_SPEC_BYTES,
    };
    let text = fetch_text(state, url, "The source URL", max).await?;
    let mut budget = max.saturating_sub(text.len());
    // What YAML aliases may expand to is shared by all the files, as the bytes fetched are.
    let (main, used) = blocking(move || parse_text_within(&text, MAX_SPEC_BYTES)).await?;
    let mut expand = MAX_SPEC_BYTES.saturating_sub(used);
    let base = reqwest::Url::parse(url).map_err(|_| {
        Failure::new(
            "FETCH_ERROR",
            "FETCH_FAILED",
            "The source URL is not a URL.",
        )
    })?;
    let mut files: Vec<(reqwest::Url, serde_json::Value)> = vec![(base, main)];
    let mut next = 0;
    while next < files.len() {
        let refs = external_refs(&files[next].1);
        let from = files[next].0.clone();
        for file in refs {
            let Ok(mut target) = from.join(&file) else {
                continue; // not a place to fetch: left as it is
            };
            target.set_fragment(None);
            if !matches!(target.scheme(), "http" | "https")
                || files.iter().any(|(u, _)| *u == target)
            {
                continue;
            }
            if files.len() > MAX_FILES {
                return Err(Failure::new(
                    "PARSE_ERROR",
                    "TOO_MANY_FILES",
                    format!("The specification references more than {MAX_FILES} other files."),
                ));
            }
            let what = format!("The referenced file `{}`", shown(&file));
            let text = fetch_text(state, target.as_str(), &what, budget).await?;
            budget = budget.saturating_sub(text.len());
            let (doc, used) = blocking(move || parse_text_within(&text, expand))
                .await
                .map_err(|mut f| {
                    f.error.message = format!("In `{}`: {}", shown(&file), f.error.message);
                    f
                })?;
            expand = expand.saturating_sub(used);
            files.push((target, doc));
        }
        next += 1;
    }
    let urls: Vec<reqwest::Url> = files.iter().map(|(u, _)| u.clone()).collect();
    for (index, (at, doc)) in files.iter_mut().enumerate() {
        let at = at.clone();
        rewrite_refs(doc, &|file, fragment| {
            let target = if file.is_empty() {
                index
            } else {
                let mut u = at.join(file).ok()?;
                u.set_fragment(None);
                urls.iter().position(|x| *x == u)?
            };
            match target {
                0 if file.is_empty() => None,
                0 => Some(format!("#{fragment}")),
                n => Some(format!("#/{BUNDLED}/{}{fragment}", n - 1)),
            }
        });
    }
    let mut files = files.into_iter().map(|(_, doc)| doc);
    let mut main = files.next().unwrap_or_default();
    bundle(&mut main, files.collect());
    Ok(main)
}

/// The errors of the spec's last processing, if it failed.
pub fn last_errors(spec: &SpecRow) -> Vec<ProcessError> {
    spec.last_errors
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}

/// The stored document of a version.
pub async fn document(state: &AppState, version: &VersionRow) -> anyhow::Result<Option<Bytes>> {
    state.blobs.get_spec(&version.hash).await
}

/// Removes the documents no version uses any more (after a spec's deletion).
pub async fn forget_documents(state: &AppState, hashes: &[String]) -> anyhow::Result<()> {
    for hash in hashes {
        if !store::openapi::hash_in_use(&state.db, hash).await? {
            state.blobs.delete_spec(hash).await?;
        }
    }
    Ok(())
}

/// The latest version of an organization's spec, by slug, if it has one.
pub async fn latest(
    state: &AppState,
    org_id: &str,
    slug: &str,
) -> anyhow::Result<Option<VersionRow>> {
    if !valid_slug(slug) {
        return Ok(None);
    }
    let Some(spec) = store::openapi::get(&state.db, org_id, slug).await? else {
        return Ok(None);
    };
    let Some(version) = spec.last_version.as_deref() else {
        return Ok(None);
    };
    Ok(store::openapi::version(&state.db, &spec.id, version).await?)
}

/// The spec a computed content's `source` reads (`builtin:openapi`, its `spec` dependency by
/// reference or resolved), as `(slug, parsed document of its latest version)`. Other
/// sources are refused naming the field: a translation is a space of its own in Quire, and
/// integrations are not part of it.
pub async fn computed_source(
    state: &AppState,
    org_id: &str,
    source: &serde_json::Value,
) -> ApiResult<(String, serde_json::Value)> {
    let kind = source
        .get("type")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| ApiError::bad_request("`source.type` is required."))?;
    match kind {
        "builtin:openapi" => {}
        "builtin:translation" => {
            return Err(ApiError::bad_request(
                "`source.type`: Quire computes no translated content; a translation is a space                  of its own (see the organization's translations).",
            ))
        }
        k if k.starts_with("integration:") => {
            return Err(ApiError::bad_request(
                "`source.type`: content computed by integrations is not part of Quire.",
            ))
        }
        _ => {
            return Err(ApiError::bad_request(
                "`source.type` must be `builtin:openapi`, `builtin:translation` or `integration:…`.",
            ))
        }
    }
    let slug = source
        .pointer("/dependencies/spec/ref")
        .filter(|r| r.get("kind").and_then(serde_json::Value::as_str) == Some("openapi"))
        .and_then(|r| r.get("spec"))
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| {
            ApiError::bad_request(
                "`source.dependencies.spec.ref` must name a specification: `{\"kind\": \"openapi\", \"spec\": <slug>}`.",
            )
        })?;
    let missing = || {
        ApiError::bad_request(format!(
            "`source.dependencies.spec`: the organization has no processed OpenAPI specification `{slug}`."
        ))
    };
    let version = latest(state, org_id, slug)
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(missing)?;
    let bytes = document(state, &version)
        .await
        .map_err(ApiError::internal)?
        .ok_or_else(missing)?;
    // A processed document may be megabytes: parsed off the async workers.
    let doc = tokio::task::spawn_blocking(move || serde_json::from_slice(&bytes))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    Ok((slug.to_string(), doc))
}

/// The slugs of the specs whose operations a page's markdown embeds
/// (`{% openapi-operation spec="..." %}`), at most `max`, without repeats.
pub fn embedded_specs(markdown: &str, max: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = markdown;
    while let Some(at) = rest.find("{% openapi-operation") {
        rest = &rest[at + 2..];
        let tag = &rest[..rest.find("%}").unwrap_or(rest.len())];
        if let Some(start) = tag.find("spec=\"") {
            let value = &tag[start + 6..];
            if let Some(end) = value.find('"') {
                let slug = &value[..end];
                if valid_slug(slug) && !out.iter().any(|s| s == slug) {
                    out.push(slug.to_string());
                    if out.len() >= max {
                        break;
                    }
                }
            }
        }
    }
    out
}

// ---- Writes shared by the API and the app ------------------------------------------

/// A source, checked: `(url, text)`, one of them set.
pub fn check_source(
    state: &AppState,
    source: (&Option<String>, &Option<String>),
) -> ApiResult<(Option<String>, Option<String>)> {
    match source {
        (Some(url), None) => {
            crate::validate::url("source.url", url)?;
            Ok((Some(url.clone()), None))
        }
        (None, Some(text)) => {
            if text.is_empty() {
                return Err(ApiError::bad_request("`source.text` must not be empty."));
            }
            let max = state.config.max_spec_bytes;
            if text.len() > max {
                return Err(ApiError::PayloadTooLarge(format!(
                    "`source.text` is larger than {max} bytes."
                )));
            }
            Ok((None, Some(text.clone())))
        }
        _ => Err(ApiError::bad_request(
            "`source` needs exactly one of `url` or `text`.",
        )),
    }
}

/// Refuses a slug outside the spec's pattern, naming it.
pub fn check_slug(slug: &str) -> ApiResult<()> {
    if valid_slug(slug) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "`slug` must be 1 to 100 lower-case letters, digits and single hyphens (`^[a-z0-9]+(?:-[a-z0-9]+)*$`), not `{}`.",
            slug.chars().take(120).collect::<String>()
        )))
    }
}

/// Creates the spec row, within the organization's limit, and enqueues its processing.
pub async fn create_row(
    tx: &mut crate::db::Tx,
    org: &OrgCtx,
    slug: &str,
    url: Option<&str>,
    text: Option<&str>,
    now: i64,
) -> ApiResult<()> {
    if store::openapi::count(tx, &org.org.id).await? >= MAX_SPECS {
        return Err(ApiError::bad_request(format!(
            "An organization holds at most {} OpenAPI specifications.",
            MAX_SPECS
        )));
    }
    let id = new_id();
    store::openapi::insert(tx, &id, &org.org.id, slug, url, text, now)
        .await
        .map_err(slug_taken)?;
    enqueue(tx, &id, 1, now).await?;
    Ok(())
}

/// Two creations of one slug racing: the loser is told the slug exists.
pub fn slug_taken(err: sqlx::Error) -> ApiError {
    match &err {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            ApiError::conflict("An OpenAPI specification with this slug already exists.")
        }
        _ => err.into(),
    }
}

/// Creates specification `slug` from a URL or a text, or gives the existing one this new
/// source (processed into a new version if the document changed); whether it was created.
/// The caller has the create role in the organization.
pub async fn put(
    state: &AppState,
    org: &OrgCtx,
    slug: &str,
    source: (&Option<String>, &Option<String>),
) -> ApiResult<bool> {
    require_role(
        org.role,
        Role::Create,
        "add or update OpenAPI specifications",
    )?;
    check_slug(slug)?;
    let (url, text) = check_source(state, source)?;
    let now = state.now();
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(org.org.id.as_str())]);
    let existing = store::openapi::get_for_update(&mut tx, &org.org.id, slug).await?;
    let created = match existing {
        Some(spec) => {
            let seq =
                store::openapi::set_source(&mut tx, &spec.id, url.as_deref(), text.as_deref(), now)
                    .await?;
            enqueue(&mut tx, &spec.id, seq, now).await?;
            false
        }
        None => {
            create_row(&mut tx, org, slug, url.as_deref(), text.as_deref(), now).await?;
            true
        }
    };
    tx.commit().await?;
    state.jobs_due.notify_one();
    Ok(created)
}

/// Creates specification `slug` (create role in the organization) from a URL or a text,
/// pending its processing; 409 when the slug is taken.
pub async fn create(
    state: &AppState,
    org: &OrgCtx,
    slug: &str,
    source: (Option<String>, Option<String>),
) -> ApiResult<()> {
    require_role(org.role, Role::Create, "add OpenAPI specifications")?;
    check_slug(slug)?;
    let (url, text) = check_source(state, (&source.0, &source.1))?;
    let now = state.now();
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Org(org.org.id.as_str())]);
    if store::openapi::get_for_update(&mut tx, &org.org.id, slug)
        .await?
        .is_some()
    {
        return Err(ApiError::conflict(format!(
            "An OpenAPI specification with slug `{slug}` already exists."
        )));
    }
    create_row(&mut tx, org, slug, url.as_deref(), text.as_deref(), now).await?;
    tx.commit().await?;
    state.jobs_due.notify_one();
    Ok(())
}

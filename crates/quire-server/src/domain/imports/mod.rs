//! Content imports (`importContent` and its change-request and page forms): the source is
//! downloaded through the safe fetcher and converted by the content engine
//! ([`quire_content::convert`]); its images and attachments become files of the space; the
//! pages land as one new revision — of the space (which moves to it) or of a change request
//! (only the change request moves). A source that cannot be read is a 400 naming what was
//! wrong, and nothing is written.

pub mod sources;

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use quire_content::convert::{self, Assembled, Bundle};
use quire_content::model::{File, PageKind, Revision};

use crate::domain::access::{Role, SpaceCtx};
use crate::domain::change_requests::{self as crs, Attempts, Landing};
use crate::domain::content;
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::revisions::NewRevision;
use crate::values::{ChangeRequestStatus, EditMode, RevisionType};

/// The official `ImportContentSource` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A website, crawled.
    Website,
    /// A Word document.
    Docx,
    /// One markdown file.
    Markdown,
    /// One HTML page.
    Html,
    /// A zip of markdown files.
    Zip,
    /// A Confluence space export.
    Confluence,
    /// A GitHub wiki's repository.
    GithubWiki,
    /// A Notion export.
    Notion,
    /// A Google document.
    GoogleDocs,
}

impl Source {
    /// Every value, as the spec spells them.
    pub const ALL: [(&'static str, Source); 9] = [
        ("website", Source::Website),
        ("docx", Source::Docx),
        ("markdown", Source::Markdown),
        ("html", Source::Html),
        ("zip", Source::Zip),
        ("confluence", Source::Confluence),
        ("github-wiki", Source::GithubWiki),
        ("notion", Source::Notion),
        ("google-docs", Source::GoogleDocs),
    ];

    /// The value named `name`; 400 naming the allowed ones otherwise.
    pub fn parse(name: &str) -> ApiResult<Source> {
        Source::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, s)| *s)
            .ok_or_else(|| {
                let names: Vec<&str> = Source::ALL.iter().map(|(n, _)| *n).collect();
                ApiError::bad_request(format!("`source` must be one of {}.", names.join(", ")))
            })
    }
}

/// Where the import lands.
pub enum Target<'a> {
    /// The space's own content.
    Space,
    /// A change request (id or number).
    ChangeRequest(&'a str),
}

/// What an import did.
#[derive(Debug)]
pub struct Outcome {
    /// The new revision.
    pub revision: String,
    /// Pages and files created.
    pub imported: usize,
    /// Pages and files found in the source.
    pub total: usize,
}

/// Imports `url` as `source` into `target`, under the page `page` when given.
pub async fn import(
    state: &AppState,
    ctx: &SpaceCtx,
    by: &str,
    source: Source,
    url: &str,
    target: Target<'_>,
    page: Option<&str>,
) -> ApiResult<Outcome> {
    ctx.require_live()?;
    ctx.require(Role::Edit, "import content into this space")?;
    let parsed = url::Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"));
    if parsed.is_none() {
        return Err(ApiError::bad_request(
            "`url` must be an absolute http(s) URL.",
        ));
    }
    let cr = match target {
        Target::Space => None,
        Target::ChangeRequest(id) => Some(crs::load(state, ctx, id).await?),
    };
    // A page that is not there fails before anything is downloaded.
    if let Some(page_id) = page {
        let at = match &cr {
            Some(c) => c.revision_id.clone(),
            None => crs::current_revision(state, &ctx.space.id).await?,
        };
        let rev = load(state, &ctx.space.id, &at).await?;
        check_page(&rev, page_id)?;
    }
    if cr.is_none() && ctx.space.edit_mode == EditMode::Locked {
        return Err(ApiError::forbidden(
            "The space is locked (`editMode` is `locked`): nothing can be imported into it.",
        ));
    }
    // The turn covers the download too: the source is held in memory until the import ends.
    let _turn = crate::domain::heavy::take(state, &state.imports, "imports").await?;
    let (bundle, missed) = sources::bundle(state, source, url).await?;
    let bundle = Arc::new(bundle);
    let limits = sources::limits(state);
    let page_owned = page.map(str::to_string);
    // A first assembly tells which assets pages use: only those are stored.
    let first_at = match &cr {
        Some(c) => c.revision_id.clone(),
        None => crs::current_revision(state, &ctx.space.id).await?,
    };
    let first_rev = load(state, &ctx.space.id, &first_at).await?;
    let first_built = assemble(&bundle, &first_rev, page_owned.clone(), &limits).await?;
    convert::archive::check_declared(
        first_built
            .0
            .files
            .iter()
            .map(|(index, _)| &bundle.assets[*index].content),
    )
    .map_err(|e| ApiError::bad_request(format!("`url`: the source {}.", e.0)))?;
    let mut stored: HashMap<usize, File> = HashMap::new();
    for (index, _) in &first_built.0.files {
        // One asset at a time: an archive's are inflated only now, and let go once stored.
        let (held, index) = (bundle.clone(), *index);
        let bytes = tokio::task::spawn_blocking(move || {
            held.assets[index]
                .content
                .read()
                .map(|b| Bytes::from(b.into_owned()))
        })
        .await
        .map_err(ApiError::internal)?
        .map_err(|e| ApiError::bad_request(format!("`url`: the source {}.", e.0)))?;
        let asset = &bundle.assets[index];
        // A name from another system: shown as people can read it, never `.` or `..`.
        let name = crate::validate::file_name("name", &asset.name)
            .unwrap_or_else(|_| format!("file-{}", index + 1));
        let file = crate::domain::uploads::store_bytes(state, &name, bytes, None).await?;
        crate::store::objects::add_blob_ref(&state.db, &ctx.space.id, &file.blob).await?;
        stored.insert(index, file);
    }
    // The first attempt lands what was just assembled, unless another write moved the target.
    let mut first = Some((first_at, first_built));
    let total = bundle.assets.len() + missed;
    let target = match &cr {
        Some(c) => crs::Target::ChangeRequest(&c.id),
        None => crs::Target::Space(&ctx.space.id),
    };
    let mut attempts = Attempts::begin(state, "the import", &[target]).await;
    loop {
        let (at, current_cr) = match &cr {
            Some(c) => {
                let hold = attempts.next(state, ctx, &c.id).await?;
                if hold.cr.status == ChangeRequestStatus::Merged {
                    return Err(ApiError::conflict(
                        "A merged change request can no longer be edited.",
                    ));
                }
                (hold.cr.revision_id.clone(), Some(hold))
            }
            None => {
                attempts.take().await?;
                (crs::current_revision(state, &ctx.space.id).await?, None)
            }
        };
        let current = load(state, &ctx.space.id, &at).await?;
        let (assembled, rev) = match first.take() {
            Some((seen, built)) if seen == at => built,
            _ => assemble(&bundle, &current, page_owned.clone(), &limits).await?,
        };
        let outcome_counts = (
            assembled.page_count + assembled.files.len() + assembled.reusable_contents.len(),
            assembled.page_count + total + assembled.reusable_contents.len(),
        );
        let files: Vec<File> = assembled
            .files
            .iter()
            .filter_map(|(index, id)| {
                stored.get(index).map(|f| File {
                    id: id.clone(),
                    ..f.clone()
                })
            })
            .collect();
        let mut rev = rev;
        rev.files.extend(files);
        let landed = match current_cr {
            Some(hold) => {
                let parents = vec![hold.cr.revision_id.clone()];
                crs::land(
                    state,
                    hold,
                    Landing {
                        revision: rev,
                        kind: RevisionType::Edits,
                        parents,
                        new_base: None,
                        by,
                        contributes: true,
                        pushed: None,
                    },
                )
                .await?
            }
            None => land_space(state, &ctx.space.id, &at, rev, by).await?,
        };
        if let Some(revision) = landed {
            return Ok(Outcome {
                revision,
                imported: outcome_counts.0,
                total: outcome_counts.1,
            });
        }
    }
}

async fn load(state: &AppState, space_id: &str, revision_id: &str) -> ApiResult<Arc<Revision>> {
    let row = content::revision_row(state, space_id, revision_id)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!("Revision `{revision_id}` not found in this space."))
        })?;
    content::load_in(state, space_id, &row.root).await
}

fn check_page(rev: &Revision, page_id: &str) -> ApiResult<()> {
    match rev.page(page_id) {
        None => Err(ApiError::not_found(format!(
            "Page `{page_id}` not found in this content."
        ))),
        Some(p) if matches!(p.kind, PageKind::Link(_)) => Err(ApiError::bad_request(format!(
            "Page `{page_id}` is a link: content cannot be imported into it."
        ))),
        Some(_) => Ok(()),
    }
}

/// Assembles the bundle on top of `current` (off the async threads): the new content,
/// without the files (which the caller adds with their stored bytes).
async fn assemble(
    bundle: &Arc<Bundle>,
    current: &Arc<Revision>,
    page: Option<String>,
    limits: &convert::Limits,
) -> ApiResult<(Assembled, Revision)> {
    let (bundle, current, limits) = (bundle.clone(), current.clone(), limits.clone());
    tokio::task::spawn_blocking(move || -> ApiResult<(Assembled, Revision)> {
        let mut rev = (*current).clone();
        let siblings = match &page {
            None => Some(&rev.pages),
            Some(id) => rev.page(id).map(|p| &p.pages),
        }
        .ok_or_else(|| ApiError::not_found("The page was deleted meanwhile."))?;
        let taken: Vec<&str> = siblings.iter().map(|p| p.slug.as_str()).collect();
        let mut assembled =
            convert::assemble(&bundle, &taken, page.is_some(), &limits, &mut new_id)
                .map_err(|e| ApiError::bad_request(format!("`url`: the source {}.", e.0)))?;
        let pages = std::mem::take(&mut assembled.pages);
        rev.reusable_contents
            .extend(assembled.reusable_contents.iter().cloned());
        match &page {
            None => rev.pages.extend(pages),
            Some(id) => {
                let target = rev
                    .page_mut(id)
                    .ok_or_else(|| ApiError::not_found("The page was deleted meanwhile."))?;
                let mut pages = pages;
                // One imported page fills the page itself; several become its children.
                if pages.len() == 1 {
                    if let (PageKind::Document(doc), PageKind::Document(new)) =
                        (&mut target.kind, &pages[0].kind)
                    {
                        doc.markdown = new.markdown.clone();
                        let one = pages.remove(0);
                        pages = one.pages;
                    }
                }
                let mut taken: Vec<String> = target.pages.iter().map(|p| p.slug.clone()).collect();
                for mut p in pages {
                    p.slug = quire_content::model::unique_slug(
                        &p.slug,
                        taken.iter().map(String::as_str),
                    );
                    taken.push(p.slug.clone());
                    target.pages.push(p);
                }
            }
        }
        rev.validate().map_err(|e| {
            ApiError::bad_request(format!(
                "`url`: the imported content cannot be placed: {e}."
            ))
        })?;
        Ok((assembled, rev))
    })
    .await
    .map_err(ApiError::internal)?
}

/// Saves `rev` as the space's new revision, only while the space is still at `expected`;
/// `None` when it moved meanwhile.
async fn land_space(
    state: &AppState,
    space_id: &str,
    expected: &str,
    rev: Revision,
    by: &str,
) -> ApiResult<Option<String>> {
    let now = state.now();
    let saved = content::encode(state, space_id, rev).await?;
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Space(space_id)]);
    content::write(&mut tx, &saved).await?;
    let revision_id = new_id();
    let parents: Vec<String> = if expected.is_empty() {
        Vec::new()
    } else {
        vec![expected.to_string()]
    };
    store::revisions::insert(
        &mut tx,
        &NewRevision {
            id: &revision_id,
            space_id,
            parents: &parents,
            kind: RevisionType::Edits,
            root: &saved.root,
            created_by: Some(by),
            created_at: now,
        },
    )
    .await?;
    if !content::advance_space(&mut tx, space_id, expected, &revision_id, now).await? {
        return Ok(None);
    }
    crate::domain::search::reindex(state, &mut tx, space_id, &revision_id, saved.revision())
        .await?;
    tx.commit().await?;
    content::remember(state, saved);
    Ok(Some(revision_id))
}

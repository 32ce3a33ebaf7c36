//! Links and backlinks of revisions: the content engine's [`revision_links`], cached per
//! revision, with each page body's references cached by the body's hash. A revision that
//! differs from its parent in a few pages therefore reads only those pages again (the
//! others' bodies, and so their references, are the parent's).

use std::sync::Arc;

use quire_content::links::{page_links, revision_links, Context, PageLinks, RevisionLinks};
use quire_content::model::Revision;
use quire_content::store::body_hash;

use crate::cache::ContentCache;
use crate::domain::content;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// The links of the revision of `space_id` whose root is `root`.
pub async fn of_revision(
    state: &AppState,
    space_id: &str,
    root: &str,
) -> ApiResult<Arc<RevisionLinks>> {
    let key = format!("{space_id}:{root}");
    if let Some(links) = state.content.links.get(&key) {
        return Ok(links);
    }
    let rev = content::load_in(state, space_id, root).await?;
    let (cache, space, app) = (
        state.content.clone(),
        space_id.to_string(),
        state.public_url.to_string(),
    );
    let links = tokio::task::spawn_blocking(move || Arc::new(compute(&rev, &space, &app, &cache)))
        .await
        .map_err(ApiError::internal)?;
    state.content.links.insert(key, links.clone());
    Ok(links)
}

/// The links of `rev` (a revision of `space_id`, served at `app_url`), reading each page
/// body's references from `cache` when another revision already read that body.
pub fn compute(
    rev: &Revision,
    space_id: &str,
    app_url: &str,
    cache: &ContentCache,
) -> RevisionLinks {
    revision_links(
        rev,
        &Context { space_id, app_url },
        |doc| -> Arc<PageLinks> {
            let hash = body_hash(doc);
            match cache.page_links.get(&hash) {
                Some(l) => l,
                None => {
                    let l = Arc::new(page_links(&doc.markdown));
                    cache.page_links.insert(hash, l.clone());
                    l
                }
            }
        },
    )
}

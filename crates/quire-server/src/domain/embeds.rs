//! Link previews (`getEmbedByUrl`): a URL's title, site and icon, read from the page through
//! the safe fetcher and kept an hour per node. Always a `link` embed: Quire never hands
//! out another site's HTML to be put in a page.

use std::sync::Arc;

use quire_content::convert::html::{summary, PageSummary};
use url::Url;

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

/// Most bytes of a page read for its preview.
const MAX_PAGE_BYTES: usize = 512 * 1024;

/// A link preview (`Embed` of type `link`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    pub title: String,
    pub site: String,
    pub icon: Option<String>,
}

/// The preview of `url`. A page that cannot be read (unreachable, refused by the fetcher's
/// address rules, not HTML) is previewed by its address alone.
pub async fn preview(state: &AppState, url: &str) -> ApiResult<Preview> {
    let parsed = Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
        .filter(|_| url.len() <= 2048)
        .ok_or_else(|| {
            ApiError::bad_request("`url` must be an http(s) URL of at most 2048 characters.")
        })?;
    let found = match state.embeds.get(url) {
        Some(found) => found,
        // A page that could not be read is asked again next time.
        None => match read(state, url).await {
            Some(found) => {
                let found = Arc::new(found);
                state.embeds.insert(url.to_string(), found.clone());
                found
            }
            None => Arc::new(PageSummary::default()),
        },
    };
    let host = parsed.host_str().unwrap_or_default().to_string();
    Ok(Preview {
        title: found.title.clone().unwrap_or_else(|| url.to_string()),
        site: found.site_name.clone().unwrap_or(host),
        icon: found
            .icon
            .as_deref()
            .and_then(|href| parsed.join(href).ok())
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .map(String::from),
    })
}

/// What the page at `url` says of itself (nothing when it is not HTML); `None` when it
/// could not be read, or this node is reading as many pages for previews as it may.
async fn read(state: &AppState, url: &str) -> Option<PageSummary> {
    // Bounded: many previews at once read only so many pages; the others are not kept, and
    // are asked again next time.
    let _turn = state.embed_reads.try_acquire().ok()?;
    match state.fetcher.get(url, MAX_PAGE_BYTES).await {
        Ok(page)
            if page
                .content_type
                .as_deref()
                .is_none_or(|t| t.contains("html")) =>
        {
            let text = String::from_utf8_lossy(&page.bytes).into_owned();
            tokio::task::spawn_blocking(move || summary(&text))
                .await
                .ok()
        }
        Ok(_) => Some(PageSummary::default()),
        Err(err) => {
            tracing::info!(error = %err, "a link preview read nothing");
            None
        }
    }
}

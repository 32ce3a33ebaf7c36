//! Searches of a published site, for one visitor: the ranking of [`query::run_for`] (text
//! under a condition that does not hold for them neither matches nor shows), kept to the
//! pages the caller says that visitor may open. The site's `~search` page, its MCP server's
//! tool and `searchSiteContent` all read their results here.

use serde_json::Value;

use super::query::{self, FoundPage};
use crate::error::ApiResult;
use crate::state::AppState;
use crate::store::search::SpaceState;

/// How far down the ranking a search reads to fill its results once pages the visitor may
/// not see are left out.
pub const DEPTH: usize = 200;

/// Hits rendered (excerpts cut) per step while filling the results.
const STEP: usize = 40;

/// The best hits of `text` in `states` (live spaces with fresh indexes) for `visitor`, in
/// ranking order, at most `want`: only pages `url_of(space id, page id)` gives a published
/// URL for, each with it. Pages elsewhere in the ranking are skipped, so a hidden page or one
/// the visitor's conditions exclude never shows, not even as a count.
pub async fn visible_hits(
    state: &AppState,
    states: &[SpaceState],
    text: &str,
    visitor: &Value,
    want: usize,
    url_of: impl Fn(&str, &str) -> Option<String>,
) -> ApiResult<Vec<(FoundPage, String)>> {
    if states.is_empty() || want == 0 {
        return Ok(Vec::new());
    }
    let parsed = query::parse(text);
    let mut ranked = query::run_for(state, states, &parsed, DEPTH, Some(visitor)).await?;
    ranked.check_phrases(state, states, DEPTH).await?;
    let end = ranked.count().min(DEPTH);
    let mut out = Vec::new();
    let mut from = 0;
    while out.len() < want && from < end {
        let to = (from + STEP).min(end);
        for found in ranked.render(state, states, from, to).await? {
            let Some(url) = url_of(&states[found.space].space_id, &found.id) else {
                continue;
            };
            out.push((found, url));
            if out.len() == want {
                break;
            }
        }
        from = to;
    }
    Ok(out)
}

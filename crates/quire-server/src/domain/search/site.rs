//! Searches of a published site, for one visitor: the ranking of [`ask::ask`] for that
//! visitor (text under a condition that does not hold for them neither matches nor shows),
//! kept to the pages the caller says that visitor may open. The site's `~search` page, its
//! MCP server's tool and `searchSiteContent` all read their results here.

use serde_json::Value;

use super::ask::{self, Answer};
use super::query::FoundPage;
use crate::error::ApiResult;
use crate::state::AppState;

/// How far down the ranking a search reads to fill its results once pages the visitor may
/// not see are left out.
pub const DEPTH: usize = 200;

/// Hits rendered (excerpts cut) per step while filling the results.
const STEP: usize = 40;

/// Ranks `text` over the live spaces among `space_ids` for `visitor`, as far as the search
/// reads ([`DEPTH`]): the same ranking as a member's search, but for what the visitor sees.
pub async fn for_visitor(
    state: &AppState,
    space_ids: &[&str],
    text: &str,
    visitor: &Value,
) -> ApiResult<Answer> {
    ask::ask(state, space_ids, text, Some(visitor), DEPTH).await
}

/// The best hits of `answer` (from [`for_visitor`]), in ranking order, at most `want`: only pages
/// `url_of(space id, page id)` gives a published URL for, each with it. Pages elsewhere in
/// the ranking are skipped, so a hidden page or one the visitor's conditions exclude never
/// shows, not even as a count.
pub async fn visible_hits(
    state: &AppState,
    answer: &Answer,
    want: usize,
    url_of: impl Fn(&str, &str) -> Option<String>,
) -> ApiResult<Vec<(FoundPage, String)>> {
    if answer.states.is_empty() || want == 0 {
        return Ok(Vec::new());
    }
    let end = answer.count().min(DEPTH);
    let mut out = Vec::new();
    let mut from = 0;
    while out.len() < want && from < end {
        let to = (from + STEP).min(end);
        for found in answer.render(state, from, to).await? {
            let Some(url) = url_of(&answer.states[found.space].space_id, &found.id) else {
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

//! The one way every search surface asks the index: `searchSpaceContent`,
//! `searchOrganizationContent`, the app's search screens and quick find, and a published
//! site's search (its `~search` page, `searchSiteContent`, its MCP server's tool).
//!
//! Surfaces only translate HTTP: each accepts the query with [`accept`] (same limits, the
//! text kept as typed), gets the spaces it searches (an organization's with [`org_spaces`]),
//! and ranks with [`ask`], which parses the text, keeps the spaces in the order given (ties
//! between spaces break in that order), and ranks for a member or for a site's visitor.
//! So the same words over the same content give the same pages in the same order
//! everywhere; a site's visitor differs only by what their conditions hide.

use serde_json::Value;

use super::query::{self, FoundPage, Ranked, MAX_QUERY_CHARS};
use crate::domain::access::grants::Grants;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::store;
use crate::store::search::SpaceState;
use crate::store::spaces::SpaceRow;

/// Why a query is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Nothing but spaces.
    Empty,
    /// Longer than [`MAX_QUERY_CHARS`].
    TooLong,
}

/// A query as every surface accepts it: some words, at most [`MAX_QUERY_CHARS`] characters
/// as sent. The text comes back as given, not trimmed: a space after the last word says it
/// is complete, so it is not completed as a word being typed.
pub fn accept(text: &str) -> Result<&str, Refused> {
    if text.trim().is_empty() {
        Err(Refused::Empty)
    } else if text.chars().count() > MAX_QUERY_CHARS {
        Err(Refused::TooLong)
    } else {
        Ok(text)
    }
}

/// The ranked answer to a query over some spaces.
pub struct Answer {
    /// The live spaces searched, in the order asked (results name them by index).
    pub states: Vec<SpaceState>,
    ranked: Ranked,
}

/// Ranks `text` over the live spaces among `space_ids` (deleted ones have no results;
/// equal scores go to the space named first), for a member (`visitor`: `None`) or for a
/// published site's visitor (text under a condition that does not hold for them counts for
/// nothing). The ranking is ordered, and its phrases checked, as far as `upto`.
pub async fn ask(
    state: &AppState,
    space_ids: &[&str],
    text: &str,
    visitor: Option<&Value>,
    upto: usize,
) -> ApiResult<Answer> {
    let states = super::fresh_states(state, space_ids).await?;
    let parsed = query::parse(text);
    let mut ranked = query::run_for(state, &states, &parsed, upto, visitor).await?;
    ranked.check_phrases(state, &states, upto).await?;
    Ok(Answer { states, ranked })
}

impl Answer {
    /// How many pages match (exact as far as `upto`; beyond, an upper bound when the query
    /// has phrases).
    pub fn count(&self) -> usize {
        self.ranked.count()
    }

    /// The results at ranking positions `from..to` (within `upto`), best first.
    pub async fn render(
        &self,
        state: &AppState,
        from: usize,
        to: usize,
    ) -> ApiResult<Vec<FoundPage>> {
        self.ranked.render(state, &self.states, from, to).await
    }
}

/// The spaces of an organization that a member's `grants` let them read and search: the
/// live ones, in the organization's order.
pub async fn org_spaces(
    state: &AppState,
    org_id: &str,
    grants: &Grants,
) -> ApiResult<Vec<SpaceRow>> {
    let spaces = store::spaces::list_live(&state.db, org_id, None).await?;
    Ok(spaces
        .into_iter()
        .filter(|s| grants.space_role(s).is_some())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_accepted_as_typed() {
        assert_eq!(accept("  "), Err(Refused::Empty));
        assert_eq!(accept(""), Err(Refused::Empty));
        assert_eq!(accept("instal "), Ok("instal "));
        assert_eq!(accept(" instal"), Ok(" instal"));
        let long = "a".repeat(MAX_QUERY_CHARS + 1);
        assert_eq!(accept(&long), Err(Refused::TooLong));
        assert!(accept(&long[1..]).is_ok());
    }
}

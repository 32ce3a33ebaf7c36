//! An organization's translation glossary: each entry is one term in several languages
//! (`GlossaryTranslations`). A run from language `a` to `b` asks its provider to translate
//! every entry's `a` term as its `b` term, and a change to those pairs translates the pages
//! again (they are part of each page's hash).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::check_language;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::glossary::EntryRow;

/// Entries an organization may have.
pub const MAX_ENTRIES: i64 = 2000;
/// Operations in one batch.
pub const MAX_OPERATIONS: usize = 500;
/// Longest term, in characters.
const MAX_TERM_CHARS: usize = 255;

/// `GlossaryBatchOperation`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum Operation {
    Insert {
        translations: BTreeMap<String, String>,
    },
    Update {
        id: String,
        translations: BTreeMap<String, String>,
    },
    Delete {
        id: String,
    },
}

/// Checks one entry's terms: known language codes, one line of 1 to 255 characters each.
fn check_terms(at: usize, terms: &BTreeMap<String, String>) -> ApiResult<String> {
    if terms.is_empty() {
        return Err(ApiError::bad_request(format!(
            "`operations[{at}].translations` must name at least one language."
        )));
    }
    for (language, term) in terms {
        check_language(&format!("operations[{at}].translations"), language)?;
        let chars = term.chars().count();
        if chars == 0 || chars > MAX_TERM_CHARS || term.contains(['\n', '\r']) {
            return Err(ApiError::bad_request(format!(
                "`operations[{at}].translations.{language}` must be one line of 1 to \
                 {MAX_TERM_CHARS} characters."
            )));
        }
    }
    serde_json::to_string(terms).map_err(ApiError::internal)
}

/// `updateGlossaryEntries`: applies every operation or none; an `update` or `delete` of an
/// entry the organization does not have refuses the whole batch, naming it.
pub async fn apply(state: &AppState, org_id: &str, ops: Vec<Operation>) -> ApiResult<()> {
    if ops.len() > MAX_OPERATIONS {
        return Err(ApiError::bad_request(format!(
            "`operations` holds {} operations; at most {MAX_OPERATIONS} at once.",
            ops.len()
        )));
    }
    let mut checked = Vec::with_capacity(ops.len());
    for (at, op) in ops.iter().enumerate() {
        checked.push(match op {
            Operation::Insert { translations } | Operation::Update { translations, .. } => {
                Some(check_terms(at, translations)?)
            }
            Operation::Delete { .. } => None,
        });
    }
    let now = state.now();
    let mut tx = state.db.begin().await?;
    tx.touches(&[]);
    for (at, (op, terms)) in ops.iter().zip(checked).enumerate() {
        let missing = |id: &str| {
            ApiError::bad_request(format!(
                "`operations[{at}].id`: the organization has no glossary entry `{id}`."
            ))
        };
        match op {
            Operation::Insert { .. } => {
                let entry = EntryRow {
                    id: crate::ids::new_id(),
                    org_id: org_id.to_string(),
                    translations: terms.unwrap_or_default(),
                    created_at: now,
                    updated_at: now,
                };
                store::glossary::insert(&mut tx, &entry).await?;
            }
            Operation::Update { id, .. } => {
                let terms = terms.unwrap_or_default();
                if !store::glossary::update(&mut tx, org_id, id, &terms, now).await? {
                    return Err(missing(id));
                }
            }
            Operation::Delete { id } => {
                if !store::glossary::delete(&mut tx, org_id, id).await? {
                    return Err(missing(id));
                }
            }
        }
    }
    let count = store::glossary::count_tx(&mut tx, org_id).await?;
    if count > MAX_ENTRIES {
        return Err(ApiError::bad_request(format!(
            "`operations`: the glossary would hold {count} entries; at most {MAX_ENTRIES}."
        )));
    }
    tx.commit().await?;
    Ok(())
}

/// The terms to keep from `from` to `to`: each entry that has both, as (source, target),
/// in the glossary's order.
pub async fn pairs(
    state: &AppState,
    org_id: &str,
    from: &str,
    to: &str,
) -> ApiResult<Vec<(String, String)>> {
    let rows = store::glossary::all(&state.db, org_id).await?;
    Ok(rows
        .iter()
        .filter_map(|row| {
            let terms: BTreeMap<String, String> = serde_json::from_str(&row.translations).ok()?;
            Some((terms.get(from)?.clone(), terms.get(to)?.clone()))
        })
        .collect())
}

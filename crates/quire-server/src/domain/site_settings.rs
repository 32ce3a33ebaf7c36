//! What a site space overrides of its site's customization: the override is stored alone
//! (only the fields it sets) and laid over the site's customization whenever it is read, so a
//! later change of the site's settings still shows where the site space sets nothing.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::sites::{customization_of, overlay};
use crate::clock::iso;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::site_settings::SpaceCustomizationRow;
use crate::store::sites::SiteRow;

/// The most JSON one override holds once stored, as for a site's customization.
const MAX_OVERRIDE_BYTES: usize = 64 * 1024;

/// Top-level settings an override sets field by field (a `null` field resets it).
const GROUPS: &[&str] = &[
    "styling",
    "internationalization",
    "header",
    "footer",
    "themes",
    "pdf",
    "feedback",
    "git",
    "externalLinks",
    "pagination",
    "trademark",
    "privacyPolicy",
    "socialPreview",
];

/// Top-level settings an override sets whole.
const WHOLE: &[&str] = &["title", "favicon", "announcement"];

/// The object at `key` of `map`, made an empty one when missing or not an object.
fn object_at<'a>(map: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let slot = map
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    match slot {
        Value::Object(inner) => inner,
        _ => unreachable!("made an object above"),
    }
}

/// Merges `patch` into the object at `key` of `stored` (`field` names it in errors): `null`
/// removes a field, an object named in `nested` merges field by field one level more,
/// anything else replaces. An object left empty is removed.
fn merge_into(
    stored: &mut Map<String, Value>,
    key: &str,
    field: &str,
    patch: Value,
    nested: &[&str],
) -> ApiResult<()> {
    let patch = match patch {
        Value::Null => {
            stored.remove(key);
            return Ok(());
        }
        Value::Object(patch) => patch,
        _ => {
            return Err(ApiError::bad_request(format!(
                "`{field}` must be an object or null."
            )))
        }
    };
    let slot = object_at(stored, key);
    for (k, v) in patch {
        if nested.contains(&k.as_str()) {
            merge_into(slot, &k, &format!("{field}.{k}"), v, &[])?;
        } else if v.is_null() {
            slot.remove(&k);
        } else {
            slot.insert(k, v);
        }
    }
    if slot.is_empty() {
        stored.remove(key);
    }
    Ok(())
}

/// Applies the body of `overrideSiteSpaceCustomizationById` to a stored override: fields
/// left out stay, `null` resets one, groups (`styling`, `header`...) merge field by field
/// (`styling.sidebar` too, and nothing deeper). An unknown top-level field is a 400 naming
/// it.
pub fn apply_override(stored: &mut Map<String, Value>, patch: Map<String, Value>) -> ApiResult<()> {
    for (key, value) in patch {
        if WHOLE.contains(&key.as_str()) {
            if value.is_null() {
                stored.remove(&key);
            } else {
                stored.insert(key, value);
            }
        } else if GROUPS.contains(&key.as_str()) {
            let nested: &[&str] = if key == "styling" { &["sidebar"] } else { &[] };
            merge_into(stored, &key, &key, value, nested)?;
        } else {
            return Err(ApiError::bad_request(format!(
                "`{key}` is not a setting a site space can override."
            )));
        }
    }
    Ok(())
}

/// The customization a site space shows: its site's with the override on top.
pub fn effective(site: &SiteRow, over: Option<&SpaceCustomizationRow>) -> ApiResult<Value> {
    let mut value = customization_of(site)?;
    if let Some(row) = over {
        let stored: Value = serde_json::from_str(&row.settings).map_err(ApiError::internal)?;
        overlay(&mut value, stored);
        value["updatedAt"] = Value::String(iso(row.updated_at));
    }
    Ok(value)
}

/// The customization of each site space of `site` that overrides its site's.
pub async fn effective_by_site_space(
    state: &AppState,
    site: &SiteRow,
) -> ApiResult<HashMap<String, Value>> {
    let rows = store::site_settings::space_customizations(&state.db, &site.id).await?;
    rows.iter()
        .map(|row| Ok((row.site_space_id.clone(), effective(site, Some(row))?)))
        .collect()
}

/// The customization site space `site_space_id` of `site` shows.
pub async fn site_space_customization(
    state: &AppState,
    site: &SiteRow,
    site_space_id: &str,
) -> ApiResult<Value> {
    let mut found = effective_by_site_space(state, site).await?;
    match found.remove(site_space_id) {
        Some(value) => Ok(value),
        None => customization_of(site),
    }
}

/// 404 unless `site_space_id` is a site space of the (locked) site.
async fn require_site_space(
    tx: &mut crate::db::Tx,
    site_id: &str,
    site_space_id: &str,
) -> ApiResult<()> {
    let structure = store::sites::structure_tx(tx, site_id).await?;
    if structure.site_spaces.iter().any(|x| x.id == site_space_id) {
        Ok(())
    } else {
        Err(ApiError::not_found(format!(
            "Site space `{site_space_id}` not found."
        )))
    }
}

/// Locks the site of an organization; 404 when it is gone.
async fn lock_site(tx: &mut crate::db::Tx, org_id: &str, site_id: &str) -> ApiResult<SiteRow> {
    store::sites::lock(tx, org_id, site_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Site `{site_id}` not found.")))
}

/// `getSiteSpaceCustomizationById`: what the site space shows (404 for a site space the
/// site does not have).
pub async fn get(state: &AppState, site: &SiteRow, site_space_id: &str) -> ApiResult<Value> {
    let structure = store::sites::structure(&state.db, &site.id).await?;
    if !structure.site_spaces.iter().any(|x| x.id == site_space_id) {
        return Err(ApiError::not_found(format!(
            "Site space `{site_space_id}` not found."
        )));
    }
    site_space_customization(state, site, site_space_id).await
}

/// `overrideSiteSpaceCustomizationById`: merges `patch` into the stored override (checked by
/// `check` once merged, inside the site's lock so two writes do not lose each other's
/// fields) and answers what the site space now shows.
pub async fn override_with(
    state: &AppState,
    org_id: &str,
    site_id: &str,
    site_space_id: &str,
    patch: Map<String, Value>,
    check: impl Fn(&Map<String, Value>) -> ApiResult<()>,
) -> ApiResult<Value> {
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(site_id)]);
    let site = lock_site(&mut tx, org_id, site_id).await?;
    require_site_space(&mut tx, site_id, site_space_id).await?;
    let old = store::site_settings::space_customization_tx(&mut tx, site_id, site_space_id).await?;
    let mut stored: Map<String, Value> = match &old {
        Some(row) => serde_json::from_str(&row.settings).map_err(ApiError::internal)?,
        None => Map::new(),
    };
    apply_override(&mut stored, patch)?;
    check(&stored)?;
    let text = serde_json::to_string(&stored).map_err(ApiError::internal)?;
    if text.len() > MAX_OVERRIDE_BYTES {
        return Err(ApiError::bad_request(
            "The site space's customization must be at most 64 KiB of JSON.",
        ));
    }
    let now = state.now();
    store::site_settings::put_space_customization(&mut tx, site_id, site_space_id, &text, now)
        .await?;
    tx.commit().await?;
    effective(
        &site,
        Some(&SpaceCustomizationRow {
            site_space_id: site_space_id.to_string(),
            settings: text,
            updated_at: now,
        }),
    )
}

/// `deleteSiteSpaceCustomizationById`: whether there was an override to remove (the site
/// space then shows its site's customization again).
pub async fn remove(
    state: &AppState,
    org_id: &str,
    site_id: &str,
    site_space_id: &str,
) -> ApiResult<bool> {
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(site_id)]);
    lock_site(&mut tx, org_id, site_id).await?;
    let removed =
        store::site_settings::delete_space_customization(&mut tx, site_id, site_space_id).await?;
    tx.commit().await?;
    Ok(removed)
}

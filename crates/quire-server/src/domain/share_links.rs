//! Share links of a site: secret keys that open a `share-link` site to whoever holds one.
//! The API's `SITE/share-links` and the app's site screen write them here.

use crate::error::{ApiError, ApiResult};
use crate::ids::{new_id, random_string};
use crate::state::AppState;
use crate::store;
use crate::store::sites::ShareLinkRow;

/// Longest name of a link.
const MAX_NAME: usize = 50;

/// A new active link of `site_id` named `name`, with a new secret key.
pub async fn create(state: &AppState, site_id: &str, name: String) -> ApiResult<ShareLinkRow> {
    crate::validate::length("name", &name, 0, MAX_NAME)?;
    let link = ShareLinkRow {
        id: new_id(),
        site_id: site_id.to_string(),
        name,
        // 32 random characters: the key is the whole secret of the link.
        share_key: random_string(32),
        active: 1,
        created_at: state.now(),
    };
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(site_id)]);
    store::sites::insert_share_link(&mut tx, &link).await?;
    tx.commit().await?;
    Ok(link)
}

/// Renames a link and/or turns it on or off (an inactive link opens nothing); 404 when the
/// site has no such link.
pub async fn update(
    state: &AppState,
    site_id: &str,
    id: &str,
    name: Option<String>,
    active: Option<bool>,
) -> ApiResult<ShareLinkRow> {
    if active.is_none() && name.is_none() {
        return Err(ApiError::bad_request(
            "Request body must set `active` or `name`.",
        ));
    }
    if let Some(name) = &name {
        crate::validate::length("name", name, 0, MAX_NAME)?;
    }
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(site_id)]);
    let mut link = store::sites::get_share_link_tx(&mut tx, site_id, id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Share link `{id}` not found.")))?;
    if let Some(name) = name {
        link.name = name;
    }
    if let Some(active) = active {
        link.active = i64::from(active);
    }
    store::sites::update_share_link(&mut tx, &link).await?;
    tx.commit().await?;
    Ok(link)
}

/// Deletes a link (nothing when the site has none by that id).
pub async fn delete(state: &AppState, site_id: &str, id: &str) -> ApiResult<()> {
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(site_id)]);
    store::sites::delete_share_link(&mut tx, site_id, id).await?;
    tx.commit().await?;
    Ok(())
}

//! Published content for renderers: a published URL resolved to the site, section, site
//! space, space and revision it shows, and the short-lived read-only token that reads that
//! content and nothing else.
//!
//! Published URLs are `{public-url}/sites/{siteId}/[~share/{key}/][section/][site-space/]page/path`:
//! the default section and the default site space of a section take no segment.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::domain::sites::{self as rules};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::sites::{SectionRow, SiteRow, SiteSpaceRow, Structure};
use crate::values::SiteVisibility;

/// How long a published-content token lives.
pub const TOKEN_SECONDS: i64 = 3600;

/// The audience that marks a published-content token (and no other token of Quire's).
const AUDIENCE: &str = "quire:published-content";

/// What a published-content token may read.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Scope {
    /// Organization of the site.
    pub org: String,
    /// The site.
    pub site: String,
    /// The site space resolved.
    pub site_space: String,
    /// Its space.
    pub space: String,
    /// The space's revision when the token was issued.
    pub revision: String,
}

#[derive(Serialize, Deserialize)]
struct Claims {
    aud: String,
    iat: i64,
    exp: i64,
    scope: Scope,
}

/// Signs a token for `scope`, valid for [`TOKEN_SECONDS`].
pub fn issue(state: &AppState, scope: Scope) -> ApiResult<String> {
    let now = state.now() / 1000;
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &Claims {
            aud: AUDIENCE.into(),
            iat: now,
            exp: now + TOKEN_SECONDS,
            scope,
        },
        &jsonwebtoken::EncodingKey::from_secret(state.keys.jwt_secret()),
    )
    .map_err(ApiError::internal)
}

/// The scope of a bearer token when it is a valid, unexpired published-content token.
pub fn scope_of(state: &AppState, token: &str) -> Option<Scope> {
    if token.matches('.').count() != 2 {
        return None;
    }
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::HS256);
    validation.set_audience(&[AUDIENCE]);
    // Expiry is checked against the server's clock below, not the system's.
    validation.validate_exp = false;
    let data = jsonwebtoken::decode::<Claims>(
        token,
        &jsonwebtoken::DecodingKey::from_secret(state.keys.jwt_secret()),
        &validation,
    )
    .ok()?;
    (data.claims.exp > state.now() / 1000).then_some(data.claims.scope)
}

/// The visitor of a resolution: unsigned claims, as the conditions read them.
pub fn visitor_context(unsigned: Option<&Value>) -> Value {
    let unsigned = unsigned.cloned().unwrap_or_else(|| json!({}));
    json!({ "visitor": { "claims": { "unsigned": unsigned } } })
}

/// What a published URL shows.
#[derive(Debug)]
pub struct Resolved {
    pub site: SiteRow,
    pub section: Option<SectionRow>,
    pub site_space: SiteSpaceRow,
    pub space_revision: String,
    pub share_key: Option<String>,
    /// The page path inside the site space (no leading or trailing `/`).
    pub pathname: String,
    /// The URL path of the site space (ends with `/`).
    pub base_path: String,
    /// The URL path of the site (ends with `/`).
    pub site_base_path: String,
    /// The site's structure, as the resolution read it.
    pub structure: Structure,
}

/// The audience decision, in one place: whether `visitor` (who came in through
/// `share_key`, if any) may read the published `site`. Every published read (the API's
/// resolution and the site's HTML) passes here.
pub fn admits(site: &SiteRow, share_key: Option<&str>, _visitor: &Value) -> bool {
    match site.visibility {
        SiteVisibility::Public | SiteVisibility::Unlisted => true,
        SiteVisibility::ShareLink => share_key.is_some(),
        // Visitor-authenticated sites need a signed visitor token, which Quire does not
        // verify yet: its check belongs here, on the verified claims in `visitor`.
        SiteVisibility::VisitorAuth => false,
    }
}

/// Whether an item with this visibility condition shows to `visitor` (no condition: yes).
pub fn visible(condition: Option<&str>, visitor: &Value) -> bool {
    match condition {
        None => true,
        Some(c) => quire_content::condition::parse_condition(c)
            .map(|e| quire_content::condition::evaluate(&e, visitor))
            .unwrap_or(false),
    }
}

/// Resolves a published URL for a visitor; 404 when it shows nothing that visitor may read.
pub async fn resolve(state: &AppState, url: &str, visitor: &Value) -> ApiResult<Resolved> {
    let nothing = || ApiError::not_found(format!("No published content at `{url}`."));
    let prefix = state.url("/sites/");
    let rest = url.strip_prefix(&prefix).ok_or_else(nothing)?;
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let mut segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    if segments.is_empty() || segments.len() > 64 {
        return Err(nothing());
    }
    let site_id = segments.remove(0);
    let site = store::sites::get_by_id(&state.db, site_id)
        .await?
        .filter(|s| s.published != 0)
        .ok_or_else(nothing)?;
    let mut site_base = format!("/sites/{}/", site.id);
    let mut share_key = None;
    if segments.first() == Some(&"~share") && segments.len() >= 2 {
        let key = segments[1];
        let link = store::sites::active_share_link(&state.db, &site.id, key)
            .await?
            .ok_or_else(nothing)?;
        site_base = format!("{site_base}~share/{}/", link.share_key);
        share_key = Some(link.share_key);
        segments.drain(..2);
    }
    if !admits(&site, share_key.as_deref(), visitor) {
        return Err(nothing());
    }
    let structure = store::sites::structure(&state.db, &site.id).await?;
    let mut base = site_base.clone();
    let section = if structure.sections.is_empty() {
        None
    } else {
        let shown: Vec<&SectionRow> = rules::ordered_sections(&structure)
            .into_iter()
            .filter(|x| visible(x.condition.as_deref(), visitor))
            .collect();
        let named = segments
            .first()
            .and_then(|seg| shown.iter().find(|x| x.path == *seg).copied());
        let default = rules::default_section(&site, &structure)
            .filter(|d| shown.iter().any(|x| x.id == d.id))
            .or_else(|| shown.first().copied());
        let chosen = match named {
            Some(x) if default.is_none_or(|d| d.id != x.id) => {
                segments.remove(0);
                base = format!("{base}{}/", x.path);
                x
            }
            _ => default.ok_or_else(nothing)?,
        };
        Some(chosen.clone())
    };
    let site_space = pick_site_space(
        &site,
        &structure,
        section.as_ref(),
        &mut segments,
        &mut base,
        visitor,
    )
    .ok_or_else(nothing)?;
    let space = store::spaces::get(&state.db, &site_space.space_id)
        .await?
        .filter(|s| s.deleted_at.is_none())
        .ok_or_else(nothing)?;
    Ok(Resolved {
        site,
        section,
        site_space,
        space_revision: space.revision_id,
        share_key,
        pathname: segments.join("/"),
        base_path: base,
        site_base_path: site_base,
        structure,
    })
}

fn pick_site_space(
    site: &SiteRow,
    s: &Structure,
    section: Option<&SectionRow>,
    segments: &mut Vec<&str>,
    base: &mut String,
    visitor: &Value,
) -> Option<SiteSpaceRow> {
    let shown: Vec<&SiteSpaceRow> = rules::site_spaces_in(s, section.map(|x| x.id.as_str()))
        .into_iter()
        .filter(|x| visible(x.condition.as_deref(), visitor))
        .collect();
    let default = rules::default_site_space(site, s, section)
        .filter(|d| shown.iter().any(|x| x.id == d.id))
        .or_else(|| shown.first().copied())?;
    let named = segments
        .first()
        .and_then(|seg| shown.iter().find(|x| x.path == *seg).copied());
    match named {
        Some(x) if x.id != default.id => {
            segments.remove(0);
            *base = format!("{base}{}/", x.path);
            Some(x.clone())
        }
        _ => Some(default.clone()),
    }
}

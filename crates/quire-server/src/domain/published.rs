//! Published content for renderers: a published URL resolved to the site, section, site
//! space, space and revision it shows, and the short-lived read-only token that reads that
//! content and nothing else.
//!
//! Published URLs are `{public-url}/sites/{siteId}/[~share/{key}/][section/][site-space/]page/path`:
//! the default section and the default site space of a section take no segment.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::access;
use crate::domain::sites::{self as rules};
use crate::domain::visitor::{self, SignedClaims};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::sites::{PublishingAuthRow, SectionRow, SiteRow, SiteSpaceRow, Structure};
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

/// Signs a token for `scope`, valid for [`TOKEN_SECONDS`] but never past `until` (seconds):
/// content opened by a visitor token closes when that token expires.
pub fn issue(state: &AppState, scope: Scope, until: Option<i64>) -> ApiResult<String> {
    let now = state.now() / 1000;
    let exp = until.map_or(now + TOKEN_SECONDS, |u| u.min(now + TOKEN_SECONDS));
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &Claims {
            aud: AUDIENCE.into(),
            iat: now,
            exp,
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

/// What a resolution request says about its visitor.
#[derive(Debug, Default, Clone, Copy)]
pub struct Visitor<'a> {
    /// A visitor token signed with the site's private key (`visitor.jwtToken`).
    pub jwt_token: Option<&'a str>,
    /// Claims the visitor states without proof (`visitor.unsignedClaims`).
    pub unsigned_claims: Option<&'a Value>,
}

/// The visitor of a resolution as the conditions read it: the claims of a valid token at
/// `visitor.claims`, unsigned claims at `visitor.claims.unsigned`.
pub fn visitor_context(signed: Option<&SignedClaims>, unsigned: Option<&Value>) -> Value {
    visitor::context(signed, unsigned)
}

/// What a published URL answers a visitor.
#[derive(Debug)]
pub enum Resolution {
    /// The content the URL shows them.
    Shown(Box<Resolved>),
    /// The URL is on a visitor-authenticated site and the visitor brought no valid token:
    /// the site's `fallbackURL`, where such visitors are sent, if it has one.
    Unauthenticated { fallback_url: Option<String> },
}

/// What a published URL shows.
#[derive(Debug)]
pub struct Resolved {
    pub site: SiteRow,
    pub section: Option<SectionRow>,
    pub site_space: SiteSpaceRow,
    pub space_revision: String,
    pub share_key: Option<String>,
    /// The `exp` (seconds) of the visitor token that opened a `visitor-auth` site.
    pub visitor_until: Option<i64>,
    /// The page path inside the site space (no leading or trailing `/`).
    pub pathname: String,
    /// The URL path of the site space (ends with `/`).
    pub base_path: String,
    /// The URL path of the site (ends with `/`).
    pub site_base_path: String,
    /// The site's structure, as the resolution read it.
    pub structure: Arc<Structure>,
    /// The site's customization (the defaults with what was stored on top).
    pub customization: Arc<Value>,
    /// A digest of what the site's row and structure hold, for the versions of its pages.
    pub site_digest: Arc<str>,
    /// The visitor as conditions read them (signed and unsigned claims), for what the
    /// resolved content shows in turn (navigation, pages).
    pub visitor: Value,
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

/// What a published page needs of its site, read together.
struct SiteState {
    /// The site's row (`None`: no such site).
    site: Option<SiteRow>,
    structure: Arc<Structure>,
    /// Its visitor-authentication settings (`None`: no key yet).
    auth: Option<PublishingAuthRow>,
    /// Its customization, built once rather than on every page.
    customization: Arc<Value>,
    /// A digest of the row and structure (see [`Resolved::site_digest`]).
    digest: Arc<str>,
}

/// A site's row, structure and visitor key, through the access cache: like tokens and
/// spaces, a change (unpublishing, visibility, structure, a regenerated key) is seen by the
/// next request on the node that made it, and by other nodes within the cache's bound.
async fn site_state(state: &AppState, site_id: &str) -> ApiResult<Arc<SiteState>> {
    let now = state.clock.now_ms();
    if let Some(found) = state.cache.site::<SiteState>(site_id, now) {
        return Ok(found);
    }
    let generation = state
        .cache
        .generation_of(crate::cache::Scope::Site(site_id));
    let site = store::sites::get_by_id(&state.db, site_id).await?;
    let (structure, auth, customization) = match &site {
        Some(row) => (
            store::sites::structure(&state.db, site_id).await?,
            store::sites::publishing_auth(&state.db, site_id).await?,
            rules::customization_of(row)?,
        ),
        None => Default::default(),
    };
    let digest = site.as_ref().map_or_else(String::new, |row| {
        use sha2::Digest;
        let id = format!(
            "{}\n{}\n{:?}\n{:?}",
            row.id, row.updated_at, row.customization, structure
        );
        hex::encode(&sha2::Sha256::digest(id.as_bytes())[..16])
    });
    let found = Arc::new(SiteState {
        site,
        structure: Arc::new(structure),
        auth,
        customization: Arc::new(customization),
        digest: digest.into(),
    });
    state
        .cache
        .put_site(site_id, found.clone(), now, generation);
    Ok(found)
}

/// Resolves a published URL for a visitor; 404 when it shows nothing that visitor may read
/// (an unknown site and a site the visitor may not see answer alike). A valid visitor token
/// opens a `visitor-auth` site, and its claims count on any site.
pub async fn resolve(state: &AppState, url: &str, who: Visitor<'_>) -> ApiResult<Resolution> {
    let nothing = || ApiError::not_found(format!("No published content at `{url}`."));
    let prefix = state.url("/sites/");
    let rest = url.strip_prefix(&prefix).ok_or_else(nothing)?;
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let mut segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    if segments.is_empty() || segments.len() > 64 {
        return Err(nothing());
    }
    let site_id = segments.remove(0);
    let known = site_state(state, site_id).await?;
    let site = known
        .site
        .clone()
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
    // A site without a key yet has signed no token.
    let signed = match (who.jwt_token, &known.auth) {
        (Some(token), Some(auth)) => visitor::verify(&auth.private_key, token, state.now()),
        _ => None,
    };
    match site.visibility {
        SiteVisibility::Public | SiteVisibility::Unlisted => {}
        SiteVisibility::ShareLink if share_key.is_some() => {}
        // A share-link site needs its key.
        SiteVisibility::ShareLink => return Err(nothing()),
        SiteVisibility::VisitorAuth if signed.is_some() => {}
        SiteVisibility::VisitorAuth => {
            return Ok(Resolution::Unauthenticated {
                fallback_url: known.auth.as_ref().and_then(|a| a.fallback_url.clone()),
            });
        }
    }
    let visitor_until = (site.visibility == SiteVisibility::VisitorAuth)
        .then(|| {
            signed
                .as_ref()
                .and_then(|c| c.get("exp"))
                .and_then(Value::as_f64)
        })
        .flatten()
        .map(|exp| exp.ceil() as i64);
    let context = visitor_context(signed.as_ref(), who.unsigned_claims);
    let visitor = &context;
    let structure = known.structure.clone();
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
    let space = access::space_row(state, &site_space.space_id)
        .await?
        .filter(|s| s.deleted_at.is_none())
        .ok_or_else(nothing)?;
    Ok(Resolution::Shown(Box::new(Resolved {
        site,
        section,
        site_space,
        space_revision: space.revision_id.clone(),
        share_key,
        visitor_until,
        pathname: segments.join("/"),
        base_path: base,
        site_base_path: site_base,
        structure,
        customization: known.customization.clone(),
        site_digest: known.digest.clone(),
        visitor: context,
    })))
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

//! Published content for renderers: a published URL resolved to the site, section, site
//! space, space and revision it shows, and the short-lived read-only token that reads that
//! content and nothing else.
//!
//! Published URLs are `{public-url}/sites/{siteId}/[~share/{key}/][section/][site-space/]page/path`:
//! the default section and the default site space of a section take no segment.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use quire_content::condition::ContextPath;
use quire_content::model::{Page, PageKind, Revision};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::access;
use crate::domain::sites::{self as rules};
use crate::domain::visitor::{self, SignedClaims};
use crate::error::{ApiError, ApiResult};
use crate::ids::OrgId;
use crate::state::AppState;
use crate::store;
use crate::store::orgs::OrgRow;
use crate::store::sites::{PublishingAuthRow, SectionRow, SiteRow, SiteSpaceRow, Structure};
use crate::values::SiteVisibility;

/// How long a published-content token lives.
pub const TOKEN_SECONDS: i64 = 3600;

/// How long a stored scope outlives the token that last asked for it: a token issued for a
/// scope stored at most this long ago needs no write.
const SCOPE_SECONDS: i64 = 2 * TOKEN_SECONDS;

/// Stored scopes one caller may hold live at once: each distinct visitor context (the
/// claims the site's conditions read) of each site space is one.
pub const MAX_LIVE_SCOPES: i64 = 1000;

/// The largest stored scope: what the site's conditions read of a visitor is kept whole.
const MAX_SCOPE_BYTES: usize = 16 * 1024;

/// What a published-content token may read, and for whom: the grounds it was issued on,
/// checked again at each use ([`still_open`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
    /// The share link's key the URL held, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_key: Option<String>,
    /// The visitor as conditions read them, cut down to the claims the site's conditions
    /// read (see [`reads_of_site`]).
    pub visitor: Value,
    /// The `exp` (seconds) of the visitor token that opened a `visitor-auth` site, and a
    /// digest of the site key that signed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visitor_auth: Option<(i64, String)>,
}

/// A published-content token's scope, for the handlers that answer such a token: content
/// reads show the scope's visitor what they may see, and nothing else.
#[derive(Debug, Clone)]
pub struct Reading(pub Arc<Scope>);

/// What a published-content token holds: when it expires and which stored scope it names.
/// No more, so that the token stays short: renderers put it in the names of the files they
/// cache pages in, which may be at most 255 bytes long.
#[derive(Serialize, Deserialize)]
struct Claims {
    exp: i64,
    sid: String,
}

/// What [`Keys::sign`](crate::keys::Keys::sign) is told a published-content token is for, so
/// that no other signature of Quire's passes as one.
const TOKEN_PURPOSE: &str = "published-content token";

/// The header of every published-content token, `{"alg":"HS256"}` in base64url.
const TOKEN_HEADER: &str = "eyJhbGciOiJIUzI1NiJ9";

/// Bytes of the HMAC-SHA256 a token carries: 128 bits, in 22 characters.
const TOKEN_MAC_BYTES: usize = 16;

/// The name of a scope: a digest of its JSON keyed by the server's secret, in 12 base64url
/// characters (72 bits). Short, for the token; keyed, so that no one outside can look for
/// two scopes of one name (and [`issue`] refuses a name that another scope holds).
fn scope_id(state: &AppState, json: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(&state.keys.sign("published-content scope", json.as_bytes())[..9])
}

/// A token for `claims`: shaped as a JWT (header, claims and signature in base64url, so
/// that a renderer can read its `exp`), with the HMAC cut to [`TOKEN_MAC_BYTES`]. 96
/// characters until the year 2286.
fn sign_token(state: &AppState, claims: &Claims) -> ApiResult<String> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload = serde_json::to_vec(claims).map_err(ApiError::internal)?;
    let signed = format!("{TOKEN_HEADER}.{}", b64.encode(payload));
    let mac = state.keys.sign(TOKEN_PURPOSE, signed.as_bytes());
    Ok(format!("{signed}.{}", b64.encode(&mac[..TOKEN_MAC_BYTES])))
}

/// A digest of a site's visitor-signing key, as a scope records it.
fn key_digest(private_key: &str) -> String {
    use sha2::Digest;
    hex::encode(&sha2::Sha256::digest(private_key.as_bytes())[..8])
}

/// The cache key of a stored scope.
fn cached_scope(id: &str) -> String {
    format!("published-scope:{id}")
}

/// Signs a token for `scope` (stored first, once per scope, on `caller`'s account), valid
/// for [`TOKEN_SECONDS`] but never past the visitor token that opened the site: a JWT of
/// 96 characters whose payload holds its `exp` and the stored scope's name, which
/// any node sharing the database reads back.
pub async fn issue(state: &AppState, caller: &str, scope: &Scope) -> ApiResult<String> {
    let now = state.now() / 1000;
    let exp = match &scope.visitor_auth {
        Some((until, _)) => (*until).min(now + TOKEN_SECONDS),
        None => now + TOKEN_SECONDS,
    };
    let json = serde_json::to_string(scope).map_err(ApiError::internal)?;
    if json.len() > MAX_SCOPE_BYTES {
        return Err(ApiError::bad_request(format!(
            "`visitor`: the claims this site's conditions read weigh more than {} KiB.",
            MAX_SCOPE_BYTES / 1024
        )));
    }
    let id = scope_id(state, &json);
    let known = state
        .content
        .pages
        .get(&cached_scope(&id))
        .and_then(|b| stored_until(&b));
    if known.is_none_or(|until| until < exp) {
        let stored = store::published::get(&state.db, &id).await?;
        match stored {
            // Two scopes of one name (72 bits: never by chance, and only the server can
            // compute names): refused rather than handing one's token to the other.
            Some((stored_json, _)) if stored_json != json => {
                return Err(ApiError::internal(anyhow::anyhow!(
                    "published-content scope {id} names another scope"
                )));
            }
            Some((_, until)) if until >= exp => {
                keep_cached(state, &id, until, &json);
            }
            found => {
                if found.is_none()
                    && store::published::live_of(&state.db, caller, now).await? >= MAX_LIVE_SCOPES
                {
                    return Err(ApiError::TooManyRequests(format!(
                        "This caller holds {MAX_LIVE_SCOPES} live published-content scopes (one per site space and visitor whose claims the site's conditions tell apart); retry when some expire."
                    )));
                }
                let until = now + SCOPE_SECONDS;
                store::published::keep(&state.db, &id, &json, caller, until, now).await?;
                keep_cached(state, &id, until, &json);
            }
        }
    }
    sign_token(state, &Claims { exp, sid: id })
}

/// Keeps a stored scope in this node's content cache, with its row's expiry: it never
/// changes but for that (its name is its hash).
fn keep_cached(state: &AppState, id: &str, until: i64, json: &str) {
    state.content.pages.insert(
        cached_scope(id),
        bytes::Bytes::from(format!("{until}\n{json}")),
    );
}

/// The expiry a cached scope records.
fn stored_until(cached: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(cached).ok()?;
    text.split_once('\n')?.0.parse().ok()
}

/// The name of the stored scope of a bearer token, when it is a valid, unexpired
/// published-content token.
pub fn scope_of(state: &AppState, token: &str) -> Option<String> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    if token.len() > 128 {
        return None;
    }
    let (signed, mac) = token.rsplit_once('.')?;
    let payload = signed.strip_prefix(TOKEN_HEADER)?.strip_prefix('.')?;
    let mac = b64.decode(mac).ok()?;
    if mac.len() != TOKEN_MAC_BYTES || !state.keys.verify(TOKEN_PURPOSE, signed.as_bytes(), &mac) {
        return None;
    }
    let claims: Claims = serde_json::from_slice(&b64.decode(payload).ok()?).ok()?;
    // Expiry is checked against the server's clock, not the system's.
    (claims.exp > state.now() / 1000).then_some(claims.sid)
}

/// The scope named `id` (from [`scope_of`]): from this node's cache, else from the database
/// (then cached); `None` when no longer stored.
pub async fn stored_scope(state: &AppState, id: &str) -> ApiResult<Option<Arc<Scope>>> {
    let cached = state.content.pages.get(&cached_scope(id));
    let text = match cached {
        Some(bytes) => bytes,
        None => match store::published::get(&state.db, id).await? {
            Some((json, until)) => {
                keep_cached(state, id, until, &json);
                bytes::Bytes::from(format!("{until}\n{json}"))
            }
            None => return Ok(None),
        },
    };
    let json = std::str::from_utf8(&text)
        .ok()
        .and_then(|t| t.split_once('\n'))
        .map(|(_, json)| json)
        .unwrap_or("");
    Ok(serde_json::from_str::<Scope>(json).ok().map(Arc::new))
}

/// Whether the grounds `scope` was issued on still hold: the site is published, its
/// visibility still lets the token in (share link still active, visitor token unexpired and
/// signed with the site's current key), the site space is still in the structure and shown
/// to the scope's visitor, and the space is not deleted. Read through the access cache:
/// no read of the database while its entries are fresh.
pub async fn still_open(state: &AppState, scope: &Scope) -> ApiResult<bool> {
    let known = site_state(state, &scope.site).await?;
    let Some(site) = known.site.as_ref() else {
        return Ok(false);
    };
    if site.published == 0 || site.org_id != scope.org {
        return Ok(false);
    }
    let now = state.now() / 1000;
    let allowed = match site.visibility {
        SiteVisibility::Public | SiteVisibility::Unlisted => true,
        SiteVisibility::ShareLink => match &scope.share_key {
            Some(key) => share_link_active(state, &site.id, key).await?,
            None => false,
        },
        SiteVisibility::VisitorAuth => match (&scope.visitor_auth, &known.auth) {
            (Some((until, digest)), Some(auth)) => {
                *until > now && *digest == key_digest(&auth.private_key)
            }
            _ => false,
        },
    };
    if !allowed {
        return Ok(false);
    }
    let s = &known.structure;
    let Some(ss) = s
        .site_spaces
        .iter()
        .find(|x| x.id == scope.site_space && x.space_id == scope.space)
    else {
        return Ok(false);
    };
    let section_shown = match &ss.section_id {
        None => true,
        Some(id) => s
            .sections
            .iter()
            .any(|x| x.id == *id && visible(x.condition.as_deref(), &scope.visitor)),
    };
    if !section_shown || !visible(ss.condition.as_deref(), &scope.visitor) {
        return Ok(false);
    }
    Ok(access::space_row(state, &scope.space)
        .await?
        .is_some_and(|x| x.deleted_at.is_none()))
}

/// Whether the site's share link `key` is active, through the access cache.
async fn share_link_active(state: &AppState, site_id: &str, key: &str) -> ApiResult<bool> {
    let now = state.clock.now_ms();
    let name = format!("{site_id}\n~share\n{key}");
    if let Some(found) = state.cache.site::<bool>(&name, now) {
        return Ok(*found);
    }
    let generation = state
        .cache
        .generation_of(crate::cache::Scope::Site(site_id));
    let active = store::sites::active_share_link(&state.db, site_id, key)
        .await?
        .is_some();
    state
        .cache
        .put_site(&name, Arc::new(active), now, generation);
    Ok(active)
}

/// A site's row, through the access cache (`None`: no such site).
pub async fn site_row(state: &AppState, site_id: &str) -> ApiResult<Option<SiteRow>> {
    Ok(site_state(state, site_id).await?.site.clone())
}

/// A site's row and structure, through the access cache (`None`: no such site).
pub async fn site_with_structure(
    state: &AppState,
    site_id: &str,
) -> ApiResult<Option<(SiteRow, Arc<Structure>)>> {
    let known = site_state(state, site_id).await?;
    Ok(known
        .site
        .clone()
        .map(|site| (site, known.structure.clone())))
}

/// The organization of a published site, through the access cache (`None`: no such site).
pub async fn site_org(state: &AppState, site_id: &str) -> ApiResult<Option<Arc<OrgRow>>> {
    Ok(site_state(state, site_id).await?.org.clone())
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
    /// The path every URL path above starts with: Quire's public path, or the path a site
    /// on its own address is served under (`crate::hosts`); empty at a host's root.
    pub path_root: String,
    /// The site's own path from the host's root (no share key): what its cookies are for.
    pub site_path: String,
    /// The absolute URL the paths above are joined to: Quire's public URL, or the site's
    /// own origin with its `path_root`.
    pub url_root: String,
    /// Whether no site segment (a section's or a site space's path) could follow
    /// `base_path`: false when the URL ended where a default was taken and a segment could
    /// still have named another section or site space.
    pub complete: bool,
    /// The site's structure, as the resolution read it.
    pub structure: Arc<Structure>,
    /// The site's customization (the defaults with what was stored on top).
    pub customization: Arc<Value>,
    /// A digest of what the site's row and structure hold, for the versions of its pages.
    pub site_digest: Arc<str>,
    /// The visitor as conditions read them (signed and unsigned claims), for what the
    /// resolved content shows in turn (navigation, pages).
    pub visitor: Value,
    /// What the conditions of the site's structure read of a visitor.
    pub site_reads: Arc<Reads>,
    /// A digest of the key that signed the visitor token that opened a `visitor-auth` site.
    pub key_digest: Option<String>,
}

/// Paths of a visitor's context that some conditions read (see
/// [`quire_content::condition::reads`]).
pub type Reads = BTreeSet<ContextPath>;

/// Adds what `condition` reads to `reads`. A condition that does not parse reads nothing:
/// it hides its content from every visitor alike.
pub fn add_reads(condition: &str, reads: &mut Reads) {
    if let Ok(expr) = quire_content::condition::parse_condition(condition) {
        quire_content::condition::reads(&expr, reads);
    }
}

/// What the `{% if %}` blocks of a markdown body may read (every line that may open one
/// counts: see [`quire_content::audience::condition_texts`]).
pub fn add_block_reads(markdown: &str, reads: &mut Reads) {
    for condition in quire_content::audience::condition_texts(markdown) {
        add_reads(condition, reads);
    }
}

/// What the page conditions of a revision read, and with `bodies` what the conditions of
/// its page bodies and reusable contents may read too: once per revision on each node (the
/// stored page tree, which lacks bodies, is never asked for those).
pub fn revision_reads(state: &AppState, root: &str, rev: &Revision, bodies: bool) -> Arc<Reads> {
    let key = format!("claim-reads:{bodies}:{root}");
    if let Some(found) = state
        .content
        .pages
        .get(&key)
        .and_then(|b| serde_json::from_slice::<Reads>(&b).ok())
    {
        return Arc::new(found);
    }
    let mut reads = Reads::new();
    let mut stack: Vec<&quire_content::model::Page> = rev.pages.iter().collect();
    while let Some(page) = stack.pop() {
        if let Some(c) = page.condition.as_deref() {
            add_reads(c, &mut reads);
        }
        if bodies {
            if let Some(markdown) = page.markdown() {
                add_block_reads(markdown, &mut reads);
            }
        }
        stack.extend(page.pages.iter());
    }
    if bodies {
        for rc in &rev.reusable_contents {
            add_block_reads(&rc.markdown, &mut reads);
        }
    }
    if let Ok(bytes) = serde_json::to_vec(&reads) {
        state.content.pages.insert(key, bytes.into());
    }
    Arc::new(reads)
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

/// A page body as `visitor` sees it: its document with each `{% if %}` block whose
/// condition does not hold for them removed, and each one that holds giving way to its
/// content. Every output of published content (HTML, markdown, agents' files, the MCP
/// server, the renderer's API) shows a page through this, and nothing else of it.
pub fn visitor_document(markdown: &str, visitor: &Value) -> quire_content::document::Document {
    let doc = quire_content::markdown::markdown_to_document(markdown);
    quire_content::audience::visible_document(&doc, &mut |e| visible(Some(e), visitor))
}

/// [`visitor_document`] as markdown: the stored markdown itself when it cannot hold a
/// conditional block.
pub fn visitor_markdown<'a>(markdown: &'a str, visitor: &Value) -> std::borrow::Cow<'a, str> {
    if !quire_content::audience::may_have_conditions(markdown) {
        return std::borrow::Cow::Borrowed(markdown);
    }
    std::borrow::Cow::Owned(quire_content::markdown::document_to_markdown(
        &visitor_document(markdown, visitor),
    ))
}

/// The page `id` of `pages` when `visitor` may read it: its condition and its ancestors'
/// hold for them.
pub fn visitor_page<'a>(pages: &'a [Page], id: &str, visitor: &Value) -> Option<&'a Page> {
    let mut stack: Vec<&Page> = pages.iter().collect();
    while let Some(page) = stack.pop() {
        if !visible(page.condition.as_deref(), visitor) {
            continue;
        }
        if page.id == id {
            return Some(page);
        }
        stack.extend(page.pages.iter());
    }
    None
}

/// The pages `visitor` may read (a page whose condition does not hold takes its subpages
/// along), each body as they see it, and no condition left for a reader to evaluate.
pub fn visitor_pages(pages: &[Page], visitor: &Value) -> Vec<Page> {
    pages
        .iter()
        .filter(|p| visible(p.condition.as_deref(), visitor))
        .map(|p| {
            let mut shown = p.without_children();
            shown.condition = None;
            if let PageKind::Document(doc) = &mut shown.kind {
                let seen = match visitor_markdown(&doc.markdown, visitor) {
                    std::borrow::Cow::Owned(md) => Some(md),
                    std::borrow::Cow::Borrowed(_) => None,
                };
                // Only a body that changes is copied: the others stay shared.
                if let Some(md) = seen {
                    doc.markdown = md;
                }
            }
            shown.pages = visitor_pages(&p.pages, visitor);
            shown
        })
        .collect()
}

/// The files a visitor's view of a revision shows: those its visible pages (`shown`, from
/// [`visitor_pages`]) and the visitor's view of its reusable contents refer to. A file that
/// only hidden content uses is neither listed nor served to that visitor.
pub fn visitor_files(
    shown: &[Page],
    reusable: &[quire_content::model::ReusableContent],
    visitor: &Value,
) -> std::collections::BTreeSet<String> {
    let mut files = std::collections::BTreeSet::new();
    let mut note = |markdown: &str| {
        for (target, _) in quire_content::links::page_links(markdown).refs {
            if let quire_content::model::ContentRef::File { file } = target {
                files.insert(file);
            }
        }
    };
    // A stack rather than recursion: page trees are as deep as their input allows.
    let mut pending: Vec<&Page> = shown.iter().collect();
    while let Some(page) = pending.pop() {
        if let PageKind::Document(doc) = &page.kind {
            note(&doc.markdown);
        }
        pending.extend(page.pages.iter());
    }
    for r in reusable {
        note(&visitor_markdown(&r.markdown, visitor));
    }
    files
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
    /// The customization of each site space that overrides the site's, by site space id.
    space_customizations: HashMap<String, Arc<Value>>,
    /// A digest of the row and structure (see [`Resolved::site_digest`]).
    digest: Arc<str>,
    /// The site's organization (`None`: no such site).
    org: Option<Arc<OrgRow>>,
    /// What the conditions of its structure (sections, site spaces) read of a visitor.
    reads: Arc<Reads>,
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
    let (structure, auth, customization, org) = match &site {
        Some(row) => (
            store::sites::structure(&state.db, site_id).await?,
            store::sites::publishing_auth(&state.db, site_id).await?,
            rules::customization_of(row)?,
            store::orgs::get(&state.db, &OrgId::new(row.org_id.clone()))
                .await?
                .map(Arc::new),
        ),
        None => Default::default(),
    };
    let space_customizations: HashMap<String, Arc<Value>> = match &site {
        Some(row) => super::site_settings::effective_by_site_space(state, row)
            .await?
            .into_iter()
            .map(|(id, value)| (id, Arc::new(value)))
            .collect(),
        None => HashMap::new(),
    };
    let mut reads = Reads::new();
    for condition in structure
        .sections
        .iter()
        .filter_map(|x| x.condition.as_deref())
        .chain(
            structure
                .site_spaces
                .iter()
                .filter_map(|x| x.condition.as_deref()),
        )
    {
        add_reads(condition, &mut reads);
    }
    let digest = site.as_ref().map_or_else(String::new, |row| {
        use sha2::Digest;
        // Overrides in site space order, so the digest is the same on every node.
        let overrides: std::collections::BTreeMap<_, _> = space_customizations.iter().collect();
        let id = format!(
            "{}\n{}\n{:?}\n{:?}\n{:?}",
            row.id, row.updated_at, row.customization, structure, overrides
        );
        hex::encode(&sha2::Sha256::digest(id.as_bytes())[..16])
    });
    let found = Arc::new(SiteState {
        site,
        structure: Arc::new(structure),
        auth,
        customization: Arc::new(customization),
        space_customizations,
        digest: digest.into(),
        org,
        reads: Arc::new(reads),
    });
    state
        .cache
        .put_site(site_id, found.clone(), now, generation);
    Ok(found)
}

/// A URL on a site's own address (`crate::hosts`): the site and the path it is served
/// under, the rest of the path, and the absolute URL of that root.
async fn on_own_address(
    state: &AppState,
    url: &str,
) -> ApiResult<Option<(crate::hosts::Routed, String, String)>> {
    let Ok(parsed) = url::Url::parse(url) else {
        return Ok(None);
    };
    let Some(host) = parsed.host_str().map(str::to_ascii_lowercase) else {
        return Ok(None);
    };
    let domain = state.config.sites_domain.as_deref();
    let map = state
        .site_hosts
        .map(&state.db, state.now(), domain.is_some())
        .await?;
    let Some(routed) = map.route(&host, parsed.path(), domain) else {
        return Ok(None);
    };
    let path = parsed.path();
    let rest = path
        .strip_prefix(routed.root.as_str())
        .unwrap_or(path)
        .trim_start_matches('/')
        .to_string();
    let origin = match parsed.port() {
        Some(port) => format!("{}://{host}:{port}{}", parsed.scheme(), routed.root),
        None => format!("{}://{host}{}", parsed.scheme(), routed.root),
    };
    Ok(Some((routed, rest, origin)))
}

/// Resolves a published URL for a visitor; 404 when it shows nothing that visitor may read
/// (an unknown site and a site the visitor may not see answer alike). A valid visitor token
/// opens a `visitor-auth` site, and its claims count on any site.
pub async fn resolve(state: &AppState, url: &str, who: Visitor<'_>) -> ApiResult<Resolution> {
    let nothing = || ApiError::not_found(format!("No published content at `{url}`."));
    let (rest, site_id, root) = match url.strip_prefix(&state.url("/sites/")) {
        Some(rest) => {
            let rest = rest.split(['?', '#']).next().unwrap_or("");
            let (site_id, rest) = rest.split_once('/').unwrap_or((rest, ""));
            (rest.to_string(), site_id.to_string(), None)
        }
        None => {
            let (routed, rest, url_root) = on_own_address(state, url).await?.ok_or_else(nothing)?;
            (rest, routed.site_id, Some((routed.root, url_root)))
        }
    };
    let rest = rest.split(['?', '#']).next().unwrap_or("");
    let mut segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    if site_id.is_empty() || segments.len() > 64 {
        return Err(nothing());
    }
    let known = site_state(state, &site_id).await?;
    let site = known
        .site
        .clone()
        .filter(|s| s.published != 0)
        .ok_or_else(nothing)?;
    let (path_root, url_root, mut site_base) = match root {
        Some((path, url)) => (path, url, "/".to_string()),
        None => (
            state.public_path.to_string(),
            state.public_url.to_string(),
            format!("/sites/{}/", site.id),
        ),
    };
    let site_own = site_base.clone();
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
    let mut complete = true;
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
            _ => {
                complete &= !(segments.is_empty() && shown.len() > 1);
                default.ok_or_else(nothing)?
            }
        };
        Some(chosen.clone())
    };
    let (site_space, space_complete) = pick_site_space(
        &site,
        &structure,
        section.as_ref(),
        &mut segments,
        &mut base,
        visitor,
    )
    .ok_or_else(nothing)?;
    complete &= space_complete;
    let space = access::space_row(state, &site_space.space_id)
        .await?
        .filter(|s| s.deleted_at.is_none())
        .ok_or_else(nothing)?;
    let customization = known
        .space_customizations
        .get(&site_space.id)
        .unwrap_or(&known.customization)
        .clone();
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
        site_path: format!("{path_root}{site_own}"),
        path_root,
        url_root,
        complete,
        structure,
        customization,
        site_digest: known.digest.clone(),
        visitor: context,
        site_reads: known.reads.clone(),
        key_digest: visitor_until
            .and(known.auth.as_ref())
            .map(|auth| key_digest(&auth.private_key)),
    })))
}

/// The site space a URL's segments name (taking its segment), else the default one; and
/// whether no segment could still name another (see [`Resolved::complete`]).
fn pick_site_space(
    site: &SiteRow,
    s: &Structure,
    section: Option<&SectionRow>,
    segments: &mut Vec<&str>,
    base: &mut String,
    visitor: &Value,
) -> Option<(SiteSpaceRow, bool)> {
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
            Some((x.clone(), true))
        }
        _ => Some((default.clone(), !(segments.is_empty() && shown.len() > 1))),
    }
}

/// A readable page of the site space, in tree order.
pub struct Entry<'a> {
    /// The page.
    pub page: &'a Page,
    /// Its path inside the site space.
    pub path: String,
    /// Its ancestors, outermost first.
    pub parents: Vec<&'a Page>,
    /// Whether navigation lists it (neither it nor an ancestor is hidden).
    pub listed: bool,
}

/// The pages a visitor may read: those whose condition (and whose ancestors' conditions)
/// holds for them. Hidden pages stay readable by their URL.
pub fn entries<'a>(rev: &'a Revision, visitor: &Value) -> Vec<Entry<'a>> {
    fn walk<'a>(
        pages: &'a [Page],
        parents: &[&'a Page],
        parent_path: &str,
        listed: bool,
        visitor: &Value,
        out: &mut Vec<Entry<'a>>,
    ) {
        for page in pages {
            if !visible(page.condition.as_deref(), visitor) {
                continue;
            }
            let mut path = quire_content::model::join_path(parent_path, &page.slug);
            let listed = listed && !page.hidden;
            // Most pages are leaves: they need no list of ancestors for children, nor a
            // copy of their path (a large tree's first page pays for every allocation).
            let leaf = page.pages.is_empty();
            out.push(Entry {
                page,
                path: if leaf {
                    std::mem::take(&mut path)
                } else {
                    path.clone()
                },
                parents: parents.to_vec(),
                listed,
            });
            if leaf {
                continue;
            }
            let mut inner = parents.to_vec();
            inner.push(page);
            walk(&page.pages, &inner, &path, listed, visitor, out);
        }
    }
    let mut out = Vec::new();
    walk(&rev.pages, &[], "", true, visitor, &mut out);
    out
}

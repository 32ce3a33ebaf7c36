//! Which site a request's host serves. A site is always published at
//! `{public-url}/sites/{siteId}/`; it is also served
//! - at `/` of its custom hostname (`hostname`, one site per hostname on the server), once
//!   its control is proven (`domain::hostnames`); before that the hostname answers a page
//!   saying so;
//! - under its proxy's path (`proxy`, `example.com/docs`: a proxy in front of Quire sends
//!   `example.com/docs/...` here, path unchanged);
//! - at `/{basename}/` of its organization's hostname under `--sites-domain`
//!   (`{org-hostname}.{domain}`), and at `/` there for the organization's oldest site
//!   without a basename.
//!
//! Every node keeps a snapshot of these addresses, read again once it is older than the
//! access cache's bound (`--access-cache-ms`) or as soon as this node writes to a site or an
//! organization, so another node's change is seen within that bound.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use axum::http::{header, HeaderMap, Uri};

use crate::db::Db;
use crate::store;

/// The addresses of the sites served on hosts other than Quire's own.
#[derive(Debug, Default)]
pub struct HostMap {
    /// Custom hostname → site, for the hostnames whose control is proven.
    hostnames: HashMap<String, String>,
    /// Custom hostnames of sites whose control is not proven yet: they serve nothing.
    unproven: HashSet<String>,
    /// Proxy host → (its path with a trailing `/`, site), longest path first.
    proxies: HashMap<String, Vec<(String, String)>>,
    /// Organization hostname → (basename, site), oldest site first.
    orgs: HashMap<String, Vec<(Option<String>, String)>>,
}

/// The site a host and path name, and the part of the path that is the site's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routed {
    pub site_id: String,
    /// The path the site is served under, without a trailing `/` (empty at a host's root).
    pub root: String,
}

impl HostMap {
    /// The site `host` (lower case, no port) serves at `path`, if any.
    pub fn route(&self, host: &str, path: &str, sites_domain: Option<&str>) -> Option<Routed> {
        if let Some(site) = self.hostnames.get(host) {
            return Some(Routed {
                site_id: site.clone(),
                root: String::new(),
            });
        }
        if let Some(proxied) = self.proxies.get(host) {
            for (prefix, site) in proxied {
                let root = prefix.trim_end_matches('/');
                if path.starts_with(prefix.as_str()) || path == root {
                    return Some(Routed {
                        site_id: site.clone(),
                        root: root.to_string(),
                    });
                }
            }
        }
        let org = host
            .strip_suffix(sites_domain?)
            .and_then(|h| h.strip_suffix('.'))?;
        let sites = self.orgs.get(org)?;
        let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
        if let Some((_, site)) = sites
            .iter()
            .find(|(basename, _)| basename.as_deref() == Some(first) && !first.is_empty())
        {
            return Some(Routed {
                site_id: site.clone(),
                root: format!("/{first}"),
            });
        }
        sites
            .iter()
            .find(|(basename, _)| basename.is_none())
            .map(|(_, site)| Routed {
                site_id: site.clone(),
                root: String::new(),
            })
    }

    /// Whether `host` is a site's custom hostname whose control is not proven yet.
    pub fn unproven(&self, host: &str) -> bool {
        self.unproven.contains(host)
    }

    /// Reads the addresses from the database.
    async fn load(db: &Db, with_orgs: bool) -> sqlx::Result<Self> {
        let mut map = HostMap::default();
        for site in store::hostnames::hosted(db).await? {
            match (site.hostname, site.hostname_verified_at) {
                (Some(host), Some(_)) => {
                    map.hostnames.insert(host, site.id.clone());
                }
                (Some(host), None) => {
                    map.unproven.insert(host);
                }
                (None, _) => {}
            }
            if let Some((host, path)) = site.proxy.as_deref().and_then(|p| p.split_once('/')) {
                map.proxies
                    .entry(host.to_ascii_lowercase())
                    .or_default()
                    .push((format!("/{}/", path.trim_matches('/')), site.id));
            }
        }
        for proxied in map.proxies.values_mut() {
            proxied.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        }
        if with_orgs {
            for s in store::hostnames::org_sites(db).await? {
                map.orgs
                    .entry(s.org_hostname.to_ascii_lowercase())
                    .or_default()
                    .push((s.basename, s.id));
            }
        }
        Ok(map)
    }
}

/// This node's snapshot of the [`HostMap`].
#[derive(Debug)]
pub struct SiteHosts {
    /// The snapshot, when it was read, and the addresses' generation before it was.
    kept: RwLock<Option<(i64, u64, Arc<HostMap>)>>,
    ttl_ms: i64,
}

impl SiteHosts {
    /// A snapshot read again once older than `ttl_ms`.
    pub fn new(ttl_ms: u64) -> Self {
        SiteHosts {
            kept: RwLock::new(None),
            ttl_ms: i64::try_from(ttl_ms).unwrap_or(i64::MAX),
        }
    }

    /// The addresses as of at most the bound ago, and as of this node's last write to an
    /// organization or a site.
    pub async fn map(&self, db: &Db, now: i64, with_orgs: bool) -> sqlx::Result<Arc<HostMap>> {
        let generation = db.generations().addresses();
        if let Some((at, seen, map)) = self.kept.read().ok().and_then(|k| k.clone()) {
            if now.saturating_sub(at) < self.ttl_ms && seen == generation {
                return Ok(map);
            }
        }
        let map = Arc::new(HostMap::load(db, with_orgs).await?);
        if let Ok(mut kept) = self.kept.write() {
            *kept = Some((now, generation, map.clone()));
        }
        Ok(map)
    }
}

/// The folder of the published sites' own stylesheet and script: `/sites/~assets/` on
/// Quire's host, and under a site's root on the site's own address.
pub const ASSETS_FOLDER: &str = "~assets";

/// Set on a request to a site on its own address, once it is routed as the request to
/// `/sites/{siteId}/...` it is served as.
#[derive(Debug, Clone)]
pub struct Hosted {
    /// The path the site is served under (empty at the host's root).
    pub root: String,
    /// The absolute URL of that root: `scheme://host[:port]{root}`.
    pub url_root: String,
}

/// The answer on a custom hostname whose control is not proven yet: 404, plain text, and
/// nothing of the site that names it.
pub fn unproven_answer() -> axum::response::Response {
    let mut res = axum::response::Response::new(axum::body::Body::from(
        "This hostname is not verified yet: the site naming it is served here once its \
         administrators prove they control it (a DNS TXT record; see the site's settings).\n",
    ));
    *res.status_mut() = axum::http::StatusCode::NOT_FOUND;
    let headers = res.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    res
}

/// Set on a request once its host was looked up (routed or not), so that it is not again.
#[derive(Debug, Clone, Copy)]
pub struct Looked;

/// The path and query a request to `uri` on a site's own address is served as: under
/// `/sites/{siteId}/`, or the assets' folder for its stylesheet and script.
pub fn rewrite(uri: &Uri, routed: &Routed) -> Option<Uri> {
    let path = uri.path();
    let rest = path
        .strip_prefix(routed.root.as_str())
        .unwrap_or(path)
        .trim_start_matches('/');
    let assets = format!("sites/{ASSETS_FOLDER}/");
    let mut target = match rest.strip_prefix(&assets) {
        Some(asset) => format!("/sites/{ASSETS_FOLDER}/{asset}"),
        None => format!("/sites/{}/{rest}", routed.site_id),
    };
    if let Some(query) = uri.query() {
        target.push('?');
        target.push_str(query);
    }
    target.parse().ok()
}

/// How a request names its host: the host (lower case, no port) and the origin its links
/// are written against (`scheme://host[:port]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHost {
    pub host: String,
    pub origin: String,
}

/// The host a request was sent to (`X-Forwarded-Host` and `X-Forwarded-Proto` when
/// `trusted`), unless it is Quire's own (`public_host`) or not a plausible host name.
pub fn foreign(
    headers: &HeaderMap,
    uri: &Uri,
    trusted: bool,
    public_url: &str,
    public_host: &str,
) -> Option<RequestHost> {
    let forwarded = |name: &str| {
        trusted
            .then(|| headers.get(name)?.to_str().ok())
            .flatten()
            .and_then(|v| v.split(',').next())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let given = forwarded("x-forwarded-host")
        .or_else(|| headers.get(header::HOST)?.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()))?;
    // Every request passes here: Quire's own host is told apart without allocating.
    if given.len() > 300
        || host_part(given)
            .trim_end_matches('.')
            .eq_ignore_ascii_case(public_host)
    {
        return None;
    }
    let authority: axum::http::uri::Authority = given.parse().ok()?;
    let host = authority.host().trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() || host == public_host {
        return None;
    }
    let scheme = match forwarded("x-forwarded-proto") {
        Some("https") => "https",
        Some("http") => "http",
        _ if public_url.starts_with("https:") => "https",
        _ => "http",
    };
    let origin = match authority.port_u16() {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    };
    Some(RequestHost { host, origin })
}

/// The host of `host[:port]` (an IPv6 host keeps its brackets, as URLs write it).
fn host_part(authority: &str) -> &str {
    match authority.rfind(':') {
        Some(at)
            if !authority[at + 1..].is_empty()
                && authority[at + 1..].bytes().all(|b| b.is_ascii_digit())
                && (!authority.starts_with('[') || authority[..at].ends_with(']')) =>
        {
            &authority[..at]
        }
        _ => authority,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> HostMap {
        let mut m = HostMap::default();
        m.hostnames
            .insert("docs.example.com".into(), "site_a".into());
        m.proxies.insert(
            "example.com".into(),
            vec![
                ("/docs/api/".into(), "site_c".into()),
                ("/docs/".into(), "site_b".into()),
            ],
        );
        m.orgs.insert(
            "acme".into(),
            vec![
                (None, "site_root".into()),
                (Some("guides".into()), "site_g".into()),
            ],
        );
        m
    }

    fn routed(site: &str, root: &str) -> Option<Routed> {
        Some(Routed {
            site_id: site.into(),
            root: root.into(),
        })
    }

    #[test]
    fn hosts_and_paths_name_their_sites() {
        let m = map();
        let domain = Some("docs.test");
        assert_eq!(
            m.route("docs.example.com", "/x", domain),
            routed("site_a", "")
        );
        assert_eq!(
            m.route("example.com", "/docs/api/x", domain),
            routed("site_c", "/docs/api")
        );
        assert_eq!(
            m.route("example.com", "/docs", domain),
            routed("site_b", "/docs")
        );
        assert_eq!(m.route("example.com", "/docsx", domain), None);
        assert_eq!(m.route("example.com", "/", domain), None);
        assert_eq!(
            m.route("acme.docs.test", "/guides/a", domain),
            routed("site_g", "/guides")
        );
        assert_eq!(
            m.route("acme.docs.test", "/a", domain),
            routed("site_root", "")
        );
        assert_eq!(m.route("acme.docs.test", "/a", None), None);
        assert_eq!(m.route("other.docs.test", "/a", domain), None);
        assert_eq!(m.route("xacme.docs.test", "/a", domain), None);
    }

    #[test]
    fn requests_are_served_under_their_site() {
        let site = |root: &str| Routed {
            site_id: "s1".into(),
            root: root.into(),
        };
        let to = |uri: &str, root: &str| {
            rewrite(&uri.parse().unwrap(), &site(root))
                .unwrap()
                .to_string()
        };
        assert_eq!(to("/", ""), "/sites/s1/");
        assert_eq!(to("/a/b.md?x=1", ""), "/sites/s1/a/b.md?x=1");
        assert_eq!(to("/docs/a", "/docs"), "/sites/s1/a");
        assert_eq!(to("/docs", "/docs"), "/sites/s1/");
        assert_eq!(
            to("/docs/sites/~assets/site.css", "/docs"),
            "/sites/~assets/site.css"
        );
    }

    #[test]
    fn a_host_is_read_without_its_port() {
        assert_eq!(host_part("example.com:8080"), "example.com");
        assert_eq!(host_part("example.com"), "example.com");
        assert_eq!(host_part("[::1]:80"), "[::1]");
        assert_eq!(host_part("[::1]"), "[::1]");
        let h = HeaderMap::from_iter([(header::HOST, "LOCALHOST.:9".parse().unwrap())]);
        let uri: Uri = "/".parse().unwrap();
        assert_eq!(
            foreign(&h, &uri, false, "http://localhost:9", "localhost"),
            None
        );
    }

    #[test]
    fn the_forwarded_host_counts_only_when_trusted() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, "127.0.0.1:8080".parse().unwrap());
        h.insert("x-forwarded-host", "Docs.Example.com".parse().unwrap());
        h.insert("x-forwarded-proto", "https".parse().unwrap());
        let uri: Uri = "/x".parse().unwrap();
        let public = "http://127.0.0.1:8080";
        assert_eq!(foreign(&h, &uri, false, public, "127.0.0.1"), None);
        assert_eq!(
            foreign(&h, &uri, true, public, "127.0.0.1"),
            Some(RequestHost {
                host: "docs.example.com".into(),
                origin: "https://docs.example.com".into()
            })
        );
        h.insert(header::HOST, "docs.example.com:8080".parse().unwrap());
        assert_eq!(
            foreign(&h, &uri, false, public, "127.0.0.1").map(|r| r.origin),
            Some("http://docs.example.com:8080".into())
        );
    }
}

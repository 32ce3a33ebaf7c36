//! The one safe fetcher: every request the server makes to another service (file URLs,
//! imports, OpenAPI sources, translation providers) goes through it. Downloads are GETs;
//! provider calls are POSTs of JSON ([`Fetcher::post_json`]) under the same vetting and caps.
//!
//! - Loopback, private, link-local (cloud metadata), CGNAT, multicast, reserved and
//!   documentation addresses are refused, also in their IPv4-mapped, IPv4-compatible, NAT64
//!   and 6to4 IPv6 forms. IP literals are checked before connecting; names are resolved
//!   here and only vetted addresses are connected to, so DNS cannot answer differently
//!   between the check and the connection. Redirects are followed by hand, and each hop is
//!   checked again.
//! - No proxy from the environment. Caps on bytes (streamed, whether or not the response
//!   declares its length), total time and redirects.
//! - Errors do not tell what answered: a refused address, a closed port, a timeout or a
//!   TLS failure all read the same to the caller (details go to the log).
//! - An operator lets chosen networks through (`--fetch-allow`); the tests allow loopback.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use ipnet::IpNet;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::redirect::Policy;
use reqwest::Url;

/// Redirect hops followed at most.
const MAX_REDIRECTS: usize = 5;

/// Why a fetch failed, in terms that reveal nothing about what answered.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// Not an absolute http(s) URL.
    #[error("must be an absolute http(s) URL")]
    BadUrl,
    /// Refused, unreachable, timed out, failed TLS, or answered with an error status.
    #[error("could not be fetched")]
    Unavailable,
    /// More than the allowed redirects.
    #[error("redirects more than {MAX_REDIRECTS} times")]
    TooManyRedirects,
    /// The body is larger than the cap.
    #[error("is larger than {0} bytes")]
    TooLarge(usize),
    /// A POST answered with this error status (only [`Fetcher::post_json`] says which: its
    /// targets are services the operator configured, not URLs a user gave).
    #[error("answered with status {0}")]
    Status(u16),
}

impl FetchError {
    /// Whether trying again later may succeed (unreachable, overloaded, rate limited).
    pub fn is_transient(&self) -> bool {
        match self {
            FetchError::Unavailable => true,
            FetchError::Status(code) => *code == 408 || *code == 429 || *code >= 500,
            _ => false,
        }
    }
}

/// A fetched body with its declared content type.
#[derive(Debug)]
pub struct Fetched {
    /// The body.
    pub bytes: Bytes,
    /// The `Content-Type` without parameters, if any.
    pub content_type: Option<String>,
    /// The URL that answered, after redirects.
    pub url: String,
    /// The answer's headers.
    pub headers: reqwest::header::HeaderMap,
}

/// The fetcher: one HTTP client that connects only to vetted addresses.
#[derive(Clone, Debug)]
pub struct Fetcher {
    client: reqwest::Client,
    allow: Arc<Vec<IpNet>>,
}

impl Fetcher {
    /// A fetcher letting through only public addresses and the `allow` networks, giving up
    /// after `timeout`.
    pub fn new(allow: Vec<IpNet>, timeout: Duration) -> anyhow::Result<Self> {
        let allow = Arc::new(allow);
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(Policy::none())
            .dns_resolver(Arc::new(VettingResolver {
                allow: allow.clone(),
            }))
            .connect_timeout(Duration::from_secs(10))
            .timeout(timeout)
            .user_agent(concat!("quire/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { client, allow })
    }

    /// GETs `url`, following at most [`MAX_REDIRECTS`] redirects, and reads at most
    /// `max_bytes` of the body.
    pub async fn get(&self, url: &str, max_bytes: usize) -> Result<Fetched, FetchError> {
        let mut url = Url::parse(url).map_err(|_| FetchError::BadUrl)?;
        for _ in 0..=MAX_REDIRECTS {
            self.check_url(&url)?;
            let res = self.client.get(url.clone()).send().await.map_err(|e| {
                tracing::info!(url = %shown(&url), error = %without_url(&e), "fetch failed");
                FetchError::Unavailable
            })?;
            if res.status().is_redirection() {
                let next = res
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|l| url.join(l).ok())
                    .ok_or(FetchError::Unavailable)?;
                url = next;
                continue;
            }
            if !res.status().is_success() {
                tracing::info!(url = %shown(&url), status = %res.status(), "fetch answered an error");
                return Err(FetchError::Unavailable);
            }
            return read_capped(res, max_bytes).await;
        }
        Err(FetchError::TooManyRedirects)
    }

    /// POSTs `body` of `content_type` to a URL a user gave (a git server's `git-upload-pack`),
    /// under the same vetting and caps as [`Fetcher::post_json`]; an error status reads as any
    /// other failure, so nothing tells what answered.
    pub async fn post_opaque(
        &self,
        url: &str,
        content_type: &str,
        body: &[u8],
        max_bytes: usize,
        timeout: Duration,
    ) -> Result<Fetched, FetchError> {
        self.post_with(url, content_type, &[], body, max_bytes, timeout)
            .await
            .map_err(|e| match e {
                FetchError::Status(_) => FetchError::Unavailable,
                e => e,
            })
    }

    /// POSTs `body` as JSON to `url` with `headers` (e.g. a provider's key), giving up after
    /// `timeout`, and reads at most `max_bytes` of the answer. Only redirects that keep the
    /// method and body (307, 308) to the same origin are followed, each hop vetted again:
    /// the headers never travel to another host. An error status is reported as such.
    pub async fn post_json(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        max_bytes: usize,
        timeout: Duration,
    ) -> Result<Fetched, FetchError> {
        self.post_with(url, "application/json", headers, body, max_bytes, timeout)
            .await
    }

    async fn post_with(
        &self,
        url: &str,
        content_type: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        max_bytes: usize,
        timeout: Duration,
    ) -> Result<Fetched, FetchError> {
        let first = Url::parse(url).map_err(|_| FetchError::BadUrl)?;
        let mut url = first.clone();
        for _ in 0..=MAX_REDIRECTS {
            self.check_url(&url)?;
            let mut req = self
                .client
                .post(url.clone())
                .timeout(timeout)
                .header(reqwest::header::CONTENT_TYPE, content_type)
                .body(body.to_vec());
            for (name, value) in headers {
                req = req.header(*name, *value);
            }
            // The URL only: headers may hold keys, and are never logged.
            let res = req.send().await.map_err(|e| {
                tracing::info!(url = %shown(&url), error = %without_url(&e), "post failed");
                FetchError::Unavailable
            })?;
            let status = res.status();
            if status == reqwest::StatusCode::TEMPORARY_REDIRECT
                || status == reqwest::StatusCode::PERMANENT_REDIRECT
            {
                let next = res
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|l| url.join(l).ok())
                    .ok_or(FetchError::Unavailable)?;
                if next.origin() != first.origin() {
                    tracing::info!(url = %shown(&url), "post refused a redirect to another origin");
                    return Err(FetchError::Unavailable);
                }
                url = next;
                continue;
            }
            if status.is_redirection() {
                return Err(FetchError::Unavailable);
            }
            if !status.is_success() {
                tracing::info!(url = %shown(&url), status = %status, "post answered an error");
                return Err(FetchError::Status(status.as_u16()));
            }
            return read_capped(res, max_bytes).await;
        }
        Err(FetchError::TooManyRedirects)
    }

    /// Only http(s), and an IP literal host must be allowed (names are vetted when resolved).
    fn check_url(&self, url: &Url) -> Result<(), FetchError> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(FetchError::BadUrl);
        }
        let ip = match url.host() {
            Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
            Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
            Some(url::Host::Domain(_)) => return Ok(()),
            None => return Err(FetchError::BadUrl),
        };
        if allowed(ip, &self.allow) {
            Ok(())
        } else {
            tracing::info!(url = %shown(url), "fetch refused: address not allowed");
            Err(FetchError::Unavailable)
        }
    }
}

/// A URL as logs show it: without credentials (a git remote's URL may carry a token).
fn shown(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.to_string()
}

/// A request error without its URL (which the caller logs itself).
fn without_url(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    if let Some(url) = e.url() {
        text = text.replace(url.as_str(), "");
    }
    text
}

/// Streams the body, stopping as soon as it passes `max_bytes`.
async fn read_capped(mut res: reqwest::Response, max_bytes: usize) -> Result<Fetched, FetchError> {
    if res.content_length().is_some_and(|n| n > max_bytes as u64) {
        return Err(FetchError::TooLarge(max_bytes));
    }
    let url = res.url().to_string();
    let headers = res.headers().clone();
    let content_type = res
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or(v).trim().to_string());
    let mut body = BytesMut::new();
    while let Some(chunk) = res.chunk().await.map_err(|e| {
        tracing::info!(error = %e, "fetch body failed");
        FetchError::Unavailable
    })? {
        if body.len() + chunk.len() > max_bytes {
            return Err(FetchError::TooLarge(max_bytes));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Fetched {
        bytes: body.freeze(),
        content_type,
        url,
        headers,
    })
}

/// Resolves names and keeps only the addresses the fetcher may connect to.
struct VettingResolver {
    allow: Arc<Vec<IpNet>>,
}

impl Resolve for VettingResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow = self.allow.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let vetted: Vec<SocketAddr> = found.filter(|a| allowed(a.ip(), &allow)).collect();
            if vetted.is_empty() {
                tracing::info!(host = %host, "fetch refused: no allowed address");
                return Err("no allowed address".into());
            }
            Ok(Box::new(vetted.into_iter()) as Addrs)
        })
    }
}

/// Whether the fetcher may connect to `ip`: an allowed network, or a public address.
pub fn allowed(ip: IpAddr, allow: &[IpNet]) -> bool {
    allow.iter().any(|net| net.contains(&ip)) || is_public(ip)
}

/// Whether `ip` is a public unicast address (none of the special ranges).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || a >= 240 // reserved
        || (a == 100 && (64..128).contains(&b)) // CGNAT 100.64/10
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (18..20).contains(&b))) // benchmarking 198.18/15
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let seg = ip.segments();
    let embedded =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    // Forms that carry an IPv4 address are judged by it.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    if seg[..6] == [0, 0, 0, 0, 0, 0] && !ip.is_loopback() && !ip.is_unspecified() {
        return is_public_v4(embedded(seg[6], seg[7])); // IPv4-compatible
    }
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(embedded(seg[6], seg[7])); // NAT64
    }
    if seg[0] == 0x2002 {
        return is_public_v4(embedded(seg[1], seg[2])); // 6to4
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (seg[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
        || (seg[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (seg[0] == 0x2001 && seg[1] == 0x0db8) // documentation
        || (seg[0] == 0x2001 && seg[1] == 0)) // Teredo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_addresses_are_refused_in_every_form() {
        for text in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "2001:db8::1",
        ] {
            let ip: IpAddr = text.parse().unwrap();
            assert!(!is_public(ip), "{text} must be refused");
        }
        for text in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            let ip: IpAddr = text.parse().unwrap();
            assert!(is_public(ip), "{text} is public");
        }
    }

    #[test]
    fn allowed_networks_let_chosen_addresses_through() {
        let allow: Vec<IpNet> = vec!["127.0.0.1/32".parse().unwrap()];
        assert!(allowed("127.0.0.1".parse().unwrap(), &allow));
        assert!(!allowed("127.0.0.2".parse().unwrap(), &allow));
        assert!(!allowed("10.0.0.1".parse().unwrap(), &allow));
    }
}

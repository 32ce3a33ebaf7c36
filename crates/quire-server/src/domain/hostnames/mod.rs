//! Custom hostnames (`crate::hosts` serves them): who may see and change one, its DNS
//! check and the proof of its control. A custom hostname is a site's `hostname`; the
//! organization that owns the site administers it, and to anyone else it does not exist.
//!
//! A hostname is served only once its control is proven: a TXT record
//! `_quire-challenge.{hostname}` holding the site's token for it ([`challenge`]), read when
//! its admins ask for a check (`dnsRevalidateCustomHostname`, or the app's site screen).
//! Otherwise anyone could name another's hostname on their own site and capture the traffic
//! that reaches this server for it. A proof stays until the hostname leaves the site.

mod dns;

use std::net::IpAddr;
use std::time::Duration;

use crate::domain::access::load_org;
use crate::domain::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::OrgId;
use crate::state::AppState;
use crate::store;
use crate::store::hostnames::Holder;

/// How long a DNS check waits for the resolver.
const DNS_WAIT: Duration = Duration::from_secs(5);

/// The site holding `host`, for an admin of its organization; 404 for anyone else.
pub async fn administered(state: &AppState, caller: &Caller, host: &str) -> ApiResult<Holder> {
    let missing = || ApiError::not_found(format!("Custom hostname `{host}` not found."));
    if host.len() > 512 {
        return Err(missing());
    }
    let holder = store::hostnames::holder(&state.db, &host.to_ascii_lowercase())
        .await?
        .ok_or_else(missing)?;
    // Not a member: the hostname does not exist for them (a server error stays one).
    let org = load_org(state, caller, &OrgId::new(holder.org_id.clone()))
        .await
        .map_err(|e| match e.status().is_client_error() {
            true => missing(),
            false => e,
        })?;
    if !org.is_admin() {
        return Err(missing());
    }
    Ok(holder)
}

/// `removeCustomHostname`: whether a site held `host` (then it no longer does). Someone who
/// does not administer its site is told there was none.
pub async fn remove(state: &AppState, caller: &Caller, host: &str) -> ApiResult<bool> {
    let host = host.to_ascii_lowercase();
    let holder = match administered(state, caller, &host).await {
        Ok(holder) => holder,
        Err(e) if e.status().is_client_error() => return Ok(false),
        Err(e) => return Err(e),
    };
    Ok(store::hostnames::remove(&state.db, &holder.site_id, &host, state.now()).await?)
}

/// The label under a hostname whose TXT record proves its control.
pub const CHALLENGE_LABEL: &str = "_quire-challenge";

/// What proves the control of a hostname for a site: a TXT record `name` holding `value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// The record's name: `_quire-challenge.{hostname}`.
    pub name: String,
    /// The text it holds.
    pub value: String,
}

/// The record proving that whoever controls `host` wants site `site_id` served there. Made
/// from the server's secret, the site and the hostname: a record placed for one site proves
/// nothing for another site naming the same hostname, and nothing needs to be stored.
pub fn challenge(state: &AppState, site_id: &str, host: &str) -> Challenge {
    let host = host.to_ascii_lowercase();
    let mac = state
        .keys
        .sign("custom-hostname", format!("{site_id}\n{host}").as_bytes());
    Challenge {
        name: format!("{CHALLENGE_LABEL}.{host}"),
        value: format!("quire-verification={}", hex::encode(&mac[..16])),
    }
}

/// `dnsRevalidateCustomHostname`: looks for the proof of control of `host` (kept once
/// found) and resolves it. Its status: `dns_no_cname` when it does not resolve,
/// `dns_wrong_cname` when it resolves elsewhere than this server (an address of the public
/// URL's host), `dns_passed` when it resolves here but its control is not proven, `live`
/// when both hold. Only a proven hostname serves its site, whatever it resolves to.
pub async fn revalidate(state: &AppState, caller: &Caller, host: &str) -> ApiResult<()> {
    let host = host.to_ascii_lowercase();
    let holder = administered(state, caller, &host).await?;
    let proven = holder.hostname_verified_at.is_some() || proves(state, &holder, &host).await;
    let ours = addresses(&state.public_host).await;
    let theirs = addresses(&host).await;
    let status = if theirs.is_empty() {
        "dns_no_cname"
    } else if !theirs.iter().any(|a| ours.contains(a)) {
        "dns_wrong_cname"
    } else if proven {
        "live"
    } else {
        "dns_passed"
    };
    let proven_at = proven.then(|| state.now());
    store::hostnames::set_checked(&state.db, &holder.site_id, &host, status, proven_at).await?;
    Ok(())
}

/// Whether the TXT record of [`challenge`] holds the site's token now.
async fn proves(state: &AppState, holder: &Holder, host: &str) -> bool {
    // Reserved never to resolve (RFC 6761): no server need be asked.
    if host == "invalid" || host.ends_with(".invalid") {
        return false;
    }
    let Some(server) = dns::server(state.config.dns_server) else {
        tracing::warn!(hostname = %host, "no DNS server to ask for a hostname's proof (--dns-server)");
        return false;
    };
    let wanted = challenge(state, &holder.site_id, host);
    match dns::txt(server, &wanted.name, DNS_WAIT).await {
        Ok(records) => records.iter().any(|r| r.trim() == wanted.value),
        Err(err) => {
            tracing::info!(hostname = %host, error = %err, "a hostname's proof could not be read");
            false
        }
    }
}

/// The addresses `host` resolves to (an IP literal to itself), none past [`DNS_WAIT`].
async fn addresses(host: &str) -> Vec<IpAddr> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return vec![ip];
    }
    // Reserved never to resolve (RFC 6761): no resolver need be asked.
    if bare == "invalid" || bare.ends_with(".invalid") {
        return Vec::new();
    }
    match tokio::time::timeout(DNS_WAIT, tokio::net::lookup_host((bare, 0))).await {
        Ok(Ok(found)) => found.map(|a| a.ip()).collect(),
        _ => Vec::new(),
    }
}

/// The organization whose hostname (its subdomain) is `subdomain`.
pub async fn subdomain_owner(state: &AppState, subdomain: &str) -> ApiResult<Option<String>> {
    Ok(store::hostnames::org_with_hostname(&state.db, subdomain).await?)
}

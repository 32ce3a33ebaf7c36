//! Custom hostnames (`crate::hosts` serves them): who may see and change one, and its DNS
//! check. A custom hostname is a site's `hostname`; the organization that owns the site
//! administers it, and to anyone else it does not exist.

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

/// `dnsRevalidateCustomHostname`: resolves `host` and records whether it points at this
/// server (an address of the public URL's host): `live`, `dns_wrong_cname` when it points
/// elsewhere, `dns_no_cname` when it does not resolve.
pub async fn revalidate(state: &AppState, caller: &Caller, host: &str) -> ApiResult<()> {
    let host = host.to_ascii_lowercase();
    let holder = administered(state, caller, &host).await?;
    let ours = addresses(&state.public_host).await;
    let theirs = addresses(&host).await;
    let status = if theirs.is_empty() {
        "dns_no_cname"
    } else if theirs.iter().any(|a| ours.contains(a)) {
        "live"
    } else {
        "dns_wrong_cname"
    };
    store::hostnames::set_status(&state.db, &holder.site_id, &host, status).await?;
    Ok(())
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

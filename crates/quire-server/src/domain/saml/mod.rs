//! SAML single sign-on: the service-provider side of Quire. Provider settings are checked
//! here ([`parse_certificate`]); a login starts with an AuthnRequest sent through the
//! HTTP-Redirect binding ([`start`]), and ends when the identity provider posts its signed
//! response to the ACS ([`verify`] checks it, [`login::complete`] acts on it).

pub mod login;
pub mod providers;
pub mod verify;

use std::io::Write;

use base64::Engine;

use crate::state::AppState;
use crate::store;
use crate::store::saml::ProviderRow;

/// How long an AuthnRequest may be answered.
pub const REQUEST_TTL_MS: i64 = 10 * 60 * 1000;
/// Clock skew tolerated between Quire and an identity provider.
pub const SKEW_MS: i64 = 2 * 60 * 1000;
/// How long a browser session lasts.
pub const SESSION_TTL_MS: i64 = 8 * 60 * 60 * 1000;
/// The largest SAML response accepted, once base64-decoded.
pub const MAX_RESPONSE_BYTES: usize = 256 * 1024;

/// SAML 2.0 protocol namespace.
pub const NS_PROTOCOL: &str = "urn:oasis:names:tc:SAML:2.0:protocol";
/// SAML 2.0 assertion namespace.
pub const NS_ASSERTION: &str = "urn:oasis:names:tc:SAML:2.0:assertion";

/// Quire's endpoints for one provider, all under the public URL.
#[derive(Debug, Clone)]
pub struct ServiceUrls {
    /// Where the identity provider posts its response (HTTP-POST binding).
    pub acs: String,
    /// Where a browser starts a login.
    pub start: String,
    /// Quire's entity id for this provider: the URL of its metadata.
    pub entity_id: String,
}

/// The service-provider endpoints of provider `id`.
pub fn service_urls(state: &AppState, id: &str) -> ServiceUrls {
    ServiceUrls {
        acs: state.url(&format!("/saml/{id}/acs")),
        start: state.url(&format!("/saml/{id}/start")),
        entity_id: state.url(&format!("/saml/{id}/metadata")),
    }
}

/// The DER bytes of an X.509 certificate given in PEM, with or without its armour lines;
/// refused unless it parses as a certificate with a public key Quire can verify with.
pub fn parse_certificate(text: &str) -> Result<Vec<u8>, String> {
    let body: String = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("-----"))
        .collect::<Vec<_>>()
        .concat()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    if text.matches("-----BEGIN").count() > 1 {
        return Err("must hold one certificate".into());
    }
    if text.contains("-----BEGIN") && !text.contains("-----BEGIN CERTIFICATE-----") {
        return Err("must be a PEM `CERTIFICATE`".into());
    }
    let der = base64::engine::general_purpose::STANDARD
        .decode(body.as_bytes())
        .map_err(|_| "is not base64 (PEM)".to_string())?;
    bergshamra_keys::loader::load_x509_cert_der(&der)
        .map_err(|_| "does not parse as an X.509 certificate".to_string())?;
    Ok(der)
}

/// Escapes text for XML content and attribute values.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// The service-provider metadata of a provider's endpoints.
pub fn metadata_xml(urls: &ServiceUrls) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<md:EntityDescriptor xmlns:md=\"urn:oasis:names:tc:SAML:2.0:metadata\" entityID=\"{entity}\">\n\
  <md:SPSSODescriptor AuthnRequestsSigned=\"false\" WantAssertionsSigned=\"true\" \
protocolSupportEnumeration=\"{NS_PROTOCOL}\">\n\
    <md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>\n\
    <md:AssertionConsumerService Binding=\"urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST\" \
Location=\"{acs}\" index=\"0\" isDefault=\"true\"/>\n\
  </md:SPSSODescriptor>\n\
</md:EntityDescriptor>\n",
        entity = xml_escape(&urls.entity_id),
        acs = xml_escape(&urls.acs),
    )
}

/// Why a login was refused: the status of the error page and what it says.
#[derive(Debug)]
pub struct Refusal {
    /// HTTP status of the page (4xx).
    pub status: u16,
    /// What was wrong, for the person and the log.
    pub reason: String,
}

impl Refusal {
    /// A refusal with status `status`.
    pub fn new(status: u16, reason: impl Into<String>) -> Self {
        Self {
            status,
            reason: reason.into(),
        }
    }
}

/// A login refused, or an internal failure on the way.
#[derive(Debug)]
pub enum LoginError {
    /// The request or the assertion was refused.
    Refused(Refusal),
    /// Something failed inside Quire.
    Internal(anyhow::Error),
}

impl From<Refusal> for LoginError {
    fn from(r: Refusal) -> Self {
        LoginError::Refused(r)
    }
}

impl From<sqlx::Error> for LoginError {
    fn from(e: sqlx::Error) -> Self {
        LoginError::Internal(e.into())
    }
}

/// Starts a login through an active provider: records a new AuthnRequest (in the database,
/// so that any node can finish it) and returns the identity provider's URL carrying it.
/// With `link_user_id`, the login links the provider to that account (signed in to Quire
/// otherwise: the caller checked it) instead of finding one.
pub async fn start(
    state: &AppState,
    provider: &ProviderRow,
    relay_state: Option<&str>,
    link_user_id: Option<&str>,
) -> Result<String, LoginError> {
    if !provider.is_active() {
        return Err(Refusal::new(
            409,
            "This SAML provider is not fully configured yet (it needs entityID, ssoURL and certificate).",
        )
        .into());
    }
    let now = state.now();
    // Ids must not start with a digit (xs:ID).
    let request_id = format!("quire-{}", crate::ids::random_string(32));
    store::saml::insert_request(
        &state.db,
        &request_id,
        &provider.id,
        link_user_id,
        now,
        now + REQUEST_TTL_MS,
    )
    .await?;
    // Old rows of every node are forgotten as new logins start.
    store::saml::purge_expired(&state.db, now).await?;
    store::sessions::purge_expired(&state.db, now).await?;
    let urls = service_urls(state, &provider.id);
    let xml = authn_request(provider, &urls, &request_id, now);
    redirect_url(&provider.sso_url, &xml, relay_state).map_err(LoginError::Internal)
}

/// Starts a login through provider `provider_id` that links it to the account `user_id`,
/// whose owner is signed in (a session or a token of theirs); returns the identity
/// provider's URL. The provider must then assert the account's own address
/// ([`login::complete`]).
pub async fn link(
    state: &AppState,
    provider_id: &str,
    user_id: &str,
) -> Result<String, LoginError> {
    let provider = store::saml::get_by_id(&state.db, provider_id)
        .await?
        .ok_or_else(|| Refusal::new(404, format!("There is no SAML provider `{provider_id}`.")))?;
    start(state, &provider, Some("/account"), Some(user_id)).await
}

/// An AuthnRequest asking for a response posted to the ACS.
fn authn_request(provider: &ProviderRow, urls: &ServiceUrls, id: &str, now: i64) -> String {
    let instant = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(now)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%SZ");
    format!(
        "<samlp:AuthnRequest xmlns:samlp=\"{NS_PROTOCOL}\" xmlns:saml=\"{NS_ASSERTION}\" \
ID=\"{id}\" Version=\"2.0\" IssueInstant=\"{instant}\" Destination=\"{dest}\" \
ProtocolBinding=\"urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST\" \
AssertionConsumerServiceURL=\"{acs}\"><saml:Issuer>{issuer}</saml:Issuer>\
<samlp:NameIDPolicy Format=\"urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress\" \
AllowCreate=\"true\"/></samlp:AuthnRequest>",
        dest = xml_escape(&provider.sso_url),
        acs = xml_escape(&urls.acs),
        issuer = xml_escape(&urls.entity_id),
    )
}

/// The HTTP-Redirect binding: the request deflated, base64-encoded and added to the
/// identity provider's URL with the relay state.
fn redirect_url(sso_url: &str, xml: &str, relay_state: Option<&str>) -> anyhow::Result<String> {
    let mut deflater =
        flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
    deflater.write_all(xml.as_bytes())?;
    let encoded = base64::engine::general_purpose::STANDARD.encode(deflater.finish()?);
    let mut url = url::Url::parse(sso_url)?;
    {
        let mut query = url.query_pairs_mut();
        query.append_pair("SAMLRequest", &encoded);
        if let Some(relay) = relay_state {
            query.append_pair("RelayState", relay);
        }
    }
    Ok(url.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_carries_a_deflated_request() {
        let url = redirect_url("https://idp.example/sso?x=1", "<a/>", Some("r")).unwrap();
        let parsed = url::Url::parse(&url).unwrap();
        let pairs: std::collections::HashMap<_, _> = parsed.query_pairs().collect();
        assert_eq!(pairs["x"], "1");
        assert_eq!(pairs["RelayState"], "r");
        let raw = base64::engine::general_purpose::STANDARD
            .decode(pairs["SAMLRequest"].as_bytes())
            .unwrap();
        let mut out = String::new();
        std::io::Read::read_to_string(&mut flate2::read::DeflateDecoder::new(&raw[..]), &mut out)
            .unwrap();
        assert_eq!(out, "<a/>");
    }

    #[test]
    fn certificates_need_to_parse() {
        assert!(parse_certificate("not a certificate").is_err());
        assert!(
            parse_certificate("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----")
                .is_err()
        );
        assert!(
            parse_certificate("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----")
                .is_err()
        );
    }
}

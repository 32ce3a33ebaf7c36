//! Visitor authentication of published sites: the site's signing key and the visitor tokens
//! it signs.
//!
//! A site owner's service signs a JWT (HS256, with the site's private key, `exp` required)
//! for each visitor it lets in; its claims become the visitor's signed claims, which
//! conditions read as `visitor.claims.<name>` (unsigned claims stay under
//! `visitor.claims.unsigned`). Both the URL resolution of the API and the HTML rendering of
//! published sites check tokens here.

use serde_json::{Map, Value};

use crate::error::{ApiError, ApiResult};
use crate::ids::random_string;
use crate::state::AppState;
use crate::store;
use crate::store::sites::{PublishingAuthPatch, PublishingAuthRow, SiteRow};

/// Length of a site's private key: 64 alphanumeric characters (about 380 random bits,
/// above the 256 bits HS256 wants), URL-safe as they are.
pub const KEY_LENGTH: usize = 64;

/// The signed claims of a valid visitor token.
pub type SignedClaims = Map<String, Value>;

/// A new random private key.
pub fn new_key() -> String {
    random_string(KEY_LENGTH)
}

/// The visitor-authentication settings of a site, created (with a new key) on first use.
pub async fn settings(state: &AppState, site_id: &str) -> ApiResult<PublishingAuthRow> {
    if let Some(row) = store::sites::publishing_auth(&state.db, site_id).await? {
        return Ok(row);
    }
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(site_id)]);
    store::sites::create_publishing_auth(&mut tx, site_id, &new_key(), state.now()).await?;
    let row = store::sites::publishing_auth_tx(&mut tx, site_id).await?;
    tx.commit().await?;
    // Even when a read made it: published pages cache the site's key, absent until now.
    row.ok_or_else(|| {
        crate::error::ApiError::internal(anyhow::anyhow!("publishing auth of `{site_id}` lost"))
    })
}

/// Replaces a site's private key: tokens signed with the old one are refused from the commit
/// on. The settings as stored after.
pub async fn regenerate(state: &AppState, site: &SiteRow) -> ApiResult<PublishingAuthRow> {
    let mut tx = state.db.begin().await?;
    tx.touches(&[crate::cache::Scope::Site(&site.id)]);
    locked_settings(state, &mut tx, site).await?;
    let patch = PublishingAuthPatch {
        private_key: Some(new_key()),
        ..PublishingAuthPatch::default()
    };
    store::sites::patch_publishing_auth(&mut tx, &site.id, &patch, state.now()).await?;
    let row = store::sites::publishing_auth_tx(&mut tx, &site.id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("publishing auth not stored")))?;
    tx.commit().await?;
    Ok(row)
}

/// Locks the site and reads its settings (creating them) in `tx`: writers of one site's
/// settings take turns.
pub async fn locked_settings(
    state: &AppState,
    tx: &mut crate::db::Tx,
    site: &SiteRow,
) -> ApiResult<PublishingAuthRow> {
    store::sites::lock(tx, &site.org_id, &site.id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Site `{}` not found.", site.id)))?;
    store::sites::create_publishing_auth(tx, &site.id, &new_key(), state.now()).await?;
    store::sites::publishing_auth_tx(tx, &site.id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("publishing auth not stored")))
}

/// The claims of `token` when it is an HS256 JWT signed with `private_key` whose `exp`
/// (seconds) is after `now_ms` and whose `nbf`, if any, is not; `None` for any other token:
/// another algorithm (`none` included), a wrong key, no signature, no or a past `exp`.
pub fn verify(private_key: &str, token: &str, now_ms: i64) -> Option<SignedClaims> {
    if token.len() > 16 * 1024 || token.matches('.').count() != 2 {
        return None;
    }
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::HS256);
    // Time is checked below against the server's clock (tests move it), not the system's.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.required_spec_claims.clear();
    // The site owner chooses the audience of its tokens; the key alone says they are its.
    validation.validate_aud = false;
    let data = jsonwebtoken::decode::<SignedClaims>(
        token,
        &jsonwebtoken::DecodingKey::from_secret(private_key.as_bytes()),
        &validation,
    )
    .ok()?;
    let now = now_ms.div_euclid(1000);
    let exp = data.claims.get("exp").and_then(Value::as_f64)?;
    if exp <= now as f64 {
        return None;
    }
    if let Some(nbf) = data.claims.get("nbf") {
        if nbf.as_f64().is_none_or(|nbf| nbf > now as f64) {
            return None;
        }
    }
    Some(data.claims)
}

/// The condition context of a visitor: signed claims at `visitor.claims`, unsigned ones at
/// `visitor.claims.unsigned` (a signed claim of that name cannot stand in for them).
pub fn context(signed: Option<&SignedClaims>, unsigned: Option<&Value>) -> Value {
    let mut claims = signed.cloned().unwrap_or_default();
    claims.insert(
        "unsigned".into(),
        unsigned
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
    );
    let mut visitor = Map::new();
    visitor.insert("claims".into(), Value::Object(claims));
    let mut root = Map::new();
    root.insert("visitor".into(), Value::Object(visitor));
    Value::Object(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
    use serde_json::json;

    const KEY: &str = "a-test-key-of-enough-length-for-hs256-0123456789";
    const NOW: i64 = 1_700_000_000_000;

    fn sign(alg: Algorithm, key: &str, claims: Value) -> String {
        encode(
            &Header::new(alg),
            &claims,
            &EncodingKey::from_secret(key.as_bytes()),
        )
        .unwrap()
    }

    #[test]
    fn valid_tokens_give_their_claims() {
        let t = sign(
            Algorithm::HS256,
            KEY,
            json!({ "exp": NOW / 1000 + 60, "pro": true }),
        );
        let claims = verify(KEY, &t, NOW).unwrap();
        assert_eq!(claims["pro"], json!(true));
    }

    #[test]
    fn other_tokens_are_refused() {
        let exp = NOW / 1000 + 60;
        // Expired, by the clock given (not the system's).
        let t = sign(Algorithm::HS256, KEY, json!({ "exp": NOW / 1000 - 1 }));
        assert!(verify(KEY, &t, NOW).is_none());
        // No `exp`.
        let t = sign(Algorithm::HS256, KEY, json!({ "pro": true }));
        assert!(verify(KEY, &t, NOW).is_none());
        // Not yet valid.
        let t = sign(
            Algorithm::HS256,
            KEY,
            json!({ "exp": exp, "nbf": NOW / 1000 + 30 }),
        );
        assert!(verify(KEY, &t, NOW).is_none());
        // Wrong key, another algorithm.
        let t = sign(Algorithm::HS256, "another-key", json!({ "exp": exp }));
        assert!(verify(KEY, &t, NOW).is_none());
        let t = sign(Algorithm::HS512, KEY, json!({ "exp": exp }));
        assert!(verify(KEY, &t, NOW).is_none());
        // `alg: none`, and a good token stripped of its signature.
        use base64::Engine;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let none = format!(
            "{}.{}.",
            b64.encode(r#"{"alg":"none","typ":"JWT"}"#),
            b64.encode(json!({ "exp": exp }).to_string())
        );
        assert!(verify(KEY, &none, NOW).is_none());
        let good = sign(Algorithm::HS256, KEY, json!({ "exp": exp }));
        let unsigned = &good[..=good.rfind('.').unwrap()];
        assert!(verify(KEY, unsigned, NOW).is_none());
        assert!(verify(KEY, "not a token", NOW).is_none());
    }

    #[test]
    fn the_context_puts_signed_claims_beside_the_unsigned_ones() {
        let mut signed = SignedClaims::new();
        signed.insert("pro".into(), json!(true));
        signed.insert("unsigned".into(), json!({ "forged": true }));
        let ctx = context(Some(&signed), Some(&json!({ "beta": true })));
        assert_eq!(
            ctx,
            json!({ "visitor": { "claims": { "pro": true, "unsigned": { "beta": true } } } })
        );
        assert_eq!(
            context(None, None),
            json!({ "visitor": { "claims": { "unsigned": {} } } })
        );
    }
}

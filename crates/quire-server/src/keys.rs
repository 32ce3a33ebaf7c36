//! The server's signing secret, kept in the database so that every node shares it: it signs
//! list cursors and the visitor-claims tokens of `POST ORG/ping`.

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The shared secret and what it signs.
#[derive(Clone)]
pub struct Keys {
    secret: Vec<u8>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keys(<redacted>)")
    }
}

impl Keys {
    /// The keys made from the shared secret (see `store::keys::signing_secret`).
    pub fn from_secret(secret: String) -> Self {
        Self {
            secret: secret.into_bytes(),
        }
    }

    /// HMAC-SHA256 of `data`, keyed by the secret and a purpose label.
    pub fn sign(&self, purpose: &str, data: &[u8]) -> Vec<u8> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).expect("any key length");
        mac.update(purpose.as_bytes());
        mac.update(&[0]);
        mac.update(data);
        mac.finalize().into_bytes().to_vec()
    }

    /// Checks a signature made by [`Keys::sign`] in constant time.
    pub fn verify(&self, purpose: &str, data: &[u8], signature: &[u8]) -> bool {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).expect("any key length");
        mac.update(purpose.as_bytes());
        mac.update(&[0]);
        mac.update(data);
        mac.verify_truncated_left(signature).is_ok() && signature.len() >= 16
    }

    /// The raw secret for JWT signing.
    pub fn jwt_secret(&self) -> &[u8] {
        &self.secret
    }
}

/// Whether two byte strings are equal, in a time that depends on their length only: how
/// much of another caller's token a request's matches must not show.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len()
        && std::hint::black_box(a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y))) == 0
}

/// SHA-256 of an API token, hex: the only form in which tokens are stored.
pub fn hash_token(token: &str) -> String {
    TokenDigest::of(token).as_str().to_string()
}

/// The hex SHA-256 digest of a token, held on the stack: every request looks its token up
/// by it, and only a miss needs it as a `String`.
#[derive(Clone, Copy)]
pub struct TokenDigest([u8; 64]);

thread_local! {
    /// The last token digested on this thread, with its digest: a client sends one token
    /// on every request of its connection, and hashing it again cost a served-from-memory
    /// answer a tenth of its own time.
    static LAST_DIGEST: std::cell::RefCell<(String, TokenDigest)> =
        const { std::cell::RefCell::new((String::new(), TokenDigest([0; 64]))) };
}

impl TokenDigest {
    /// The digest of `token`.
    pub fn of(token: &str) -> Self {
        LAST_DIGEST.with(|last| {
            let mut last = last.borrow_mut();
            let same = !last.0.is_empty() && same_bytes(last.0.as_bytes(), token.as_bytes());
            if !same {
                *last = (token.to_string(), Self::computed(token));
            }
            last.1
        })
    }

    /// The digest, computed.
    fn computed(token: &str) -> Self {
        let mut out = [0u8; 64];
        // 32 bytes always fill 64 hex digits.
        let _ = hex::encode_to_slice(Sha256::digest(token.as_bytes()), &mut out);
        Self(out)
    }

    /// The digest as text (hex digits are ASCII).
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// The token of a request's `Authorization: Bearer <token>` header, if it has a non-empty
/// one.
pub fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// URL-safe base64 without padding.
pub fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(data)
}

/// Decodes URL-safe base64 without padding.
pub fn unb64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_remembered_digest_is_only_ever_its_own_tokens() {
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        for token in ["abc", "abc", "abd", "ab", "abc", "abcd", "abc"] {
            let digest = super::TokenDigest::of(token);
            let fresh = super::TokenDigest::computed(token);
            assert_eq!(digest.as_str(), fresh.as_str(), "{token}");
            assert_eq!(token == "abc", digest.as_str() == abc, "{token}");
        }
    }

    #[test]
    fn token_hashes_are_sha256_in_lower_case_hex() {
        assert_eq!(
            super::hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}

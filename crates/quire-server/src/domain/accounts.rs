//! Local accounts of the app: passwords (argon2id) and sign-in, shared by the app's screens
//! and `quire admin`.
//!
//! Password rules follow NIST SP 800-63B: at least 8 characters, at most 256, no rules of
//! composition, and not one of a short built-in list of the most common passwords (nor the
//! account's own address). Hashes are argon2id with the crate's default parameters, in PHC
//! form, so that parameters can change later without invalidating stored hashes.

use std::net::IpAddr;
use std::sync::OnceLock;
use std::time::Duration;

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHasher, SaltString};
use argon2::Argon2;

use crate::db::Db;
use crate::keys::Keys;
use crate::passwords::{Busy, Hashing};
use crate::store;
use crate::store::users::UserRow;

/// Shortest password accepted.
pub const MIN_PASSWORD: usize = 8;
/// Longest password accepted (hashing cost grows with length).
pub const MAX_PASSWORD: usize = 256;

/// Failed sign-ins per account, and per client address, within [`FAILURE_WINDOW`] before
/// further attempts are refused until it passes.
const FAILURES_PER_ACCOUNT: u32 = 10;
const FAILURES_PER_ADDRESS: u32 = 50;
const FAILURE_WINDOW: Duration = Duration::from_secs(15 * 60);

/// The most common passwords (from public breach corpora), refused whatever their length.
const COMMON: &[&str] = &[
    "password",
    "password1",
    "password12",
    "password123",
    "password1234",
    "12345678",
    "123456789",
    "1234567890",
    "12345678910",
    "11111111",
    "00000000",
    "87654321",
    "qwertyui",
    "qwertyuiop",
    "qwerty123",
    "qwerty12345",
    "1q2w3e4r",
    "1q2w3e4r5t",
    "1qaz2wsx",
    "zaq12wsx",
    "iloveyou",
    "iloveyou1",
    "sunshine",
    "princess",
    "football",
    "baseball",
    "superman",
    "starwars",
    "welcome1",
    "welcome123",
    "letmein1",
    "trustno1",
    "passw0rd",
    "p@ssw0rd",
    "p@ssword",
    "abc12345",
    "abcd1234",
    "aa123456",
    "asdfghjk",
    "asdfghjkl",
    "dragon12",
    "monkey12",
    "michael1",
    "whatever",
    "computer",
    "internet",
    "changeme",
    "changeme1",
    "administrator",
    "admin123",
    "admin1234",
    "secret123",
    "master12",
    "shadow12",
    "killer12",
    "jennifer",
    "jordan23",
    "hunter12",
    "charlie1",
    "freedom1",
    "1234qwer",
    "q1w2e3r4",
    "q1w2e3r4t5",
    "a1b2c3d4",
    "987654321",
    "123123123",
    "112233445566",
    "11223344",
    "password!",
    "Password1",
    "Password123",
    "qwertyqwerty",
    "testtest",
    "test1234",
    "letmein123",
    "loveyou1",
    "football1",
    "baseball1",
    "summer2024",
    "winter2024",
];

/// Why a password is not accepted, naming the rule; `None` when it is.
pub fn password_problem(password: &str, email: &str) -> Option<String> {
    let length = password.chars().count();
    if length < MIN_PASSWORD {
        return Some(format!(
            "The password must be at least {MIN_PASSWORD} characters long."
        ));
    }
    if length > MAX_PASSWORD {
        return Some(format!(
            "The password must be at most {MAX_PASSWORD} characters long."
        ));
    }
    let lower = password.to_lowercase();
    if COMMON.iter().any(|c| c.eq_ignore_ascii_case(&lower)) {
        return Some("This password is among the most common ones: choose another.".into());
    }
    let address = store::users::normalize_email(email);
    if !address.is_empty()
        && (lower == address || Some(lower.as_str()) == address.split('@').next())
    {
        return Some("The password must not be the account's e-mail address.".into());
    }
    None
}

/// The argon2id hash of a password, in a slot of `hashing`.
async fn hash_password(hashing: &Hashing, password: &str) -> Result<String, AccountError> {
    crate::passwords::hash(hashing, password)
        .await
        .map_err(|Busy| AccountError::Busy)?
        .map_err(AccountError::Failed)
}

/// A hash to verify against when the account does not exist, so that a wrong address takes
/// as long to refuse as a wrong password.
fn decoy() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| {
        let salt = SaltString::generate(&mut OsRng);
        Argon2::default()
            .hash_password(b"decoy password never used", &salt)
            .map(|h| h.to_string())
            .unwrap_or_default()
    })
}

/// Whose password [`set_password`] sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// The account with the address, made if there is none (`quire admin`); `admin` makes
    /// it an instance administrator.
    Any {
        /// Whether it becomes an instance administrator.
        admin: bool,
    },
    /// A new account: refused when the address has one.
    New,
    /// The server's first account, an instance administrator: refused once any exists.
    First,
}

/// Sets the password of the account `holder` names, in one transaction (made, given its
/// password and its role, and its old sessions ended, all or nothing).
pub async fn set_password(
    db: &Db,
    hashing: &Hashing,
    email: &str,
    name: Option<&str>,
    password: &str,
    holder: Holder,
    now: i64,
) -> Result<UserRow, AccountError> {
    let email = store::users::normalize_email(email);
    crate::validate::email("email", &email).map_err(|e| AccountError::Invalid(e.to_string()))?;
    if let Some(problem) = password_problem(password, &email) {
        return Err(AccountError::Invalid(problem));
    }
    let hash = hash_password(hashing, password).await?;
    let mut tx = db.begin().await.map_err(failed)?;
    if holder == Holder::First
        && store::sessions::any_user_locked(&mut tx)
            .await
            .map_err(failed)?
    {
        return Err(AccountError::Exists);
    }
    let user = match holder {
        Holder::Any { .. } => store::users::find_or_create(&mut tx, &email, name, now)
            .await
            .map_err(failed)?,
        Holder::New | Holder::First => store::users::create(&mut tx, &email, name, now)
            .await
            .map_err(failed)?
            .ok_or(AccountError::Exists)?,
    };
    let admin = matches!(holder, Holder::Any { admin: true } | Holder::First);
    store::sessions::set_password_hash(&mut tx, user.id.as_str(), &hash, admin)
        .await
        .map_err(failed)?;
    tx.commit().await.map_err(failed)?;
    Ok(user)
}

/// What went wrong with an account operation.
#[derive(Debug)]
pub enum AccountError {
    /// The input breaks a rule (the message names it).
    Invalid(String),
    /// The address has an account already (or, for the first account, the server has one).
    Exists,
    /// Too many passwords are being hashed on this node: try again in a few seconds.
    Busy,
    /// The server failed.
    Failed(anyhow::Error),
}

impl std::fmt::Display for AccountError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AccountError::Invalid(m) => f.write_str(m),
            AccountError::Exists => f.write_str("An account with this address exists already."),
            AccountError::Busy => f.write_str(BUSY_MESSAGE),
            AccountError::Failed(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for AccountError {}

fn failed(e: sqlx::Error) -> AccountError {
    AccountError::Failed(e.into())
}

/// What a person refused with [`Busy`] is told.
pub const BUSY_MESSAGE: &str =
    "The server is busy checking other passwords: try again in a few seconds.";

/// The outcome of a sign-in attempt.
#[derive(Debug)]
pub enum SignIn {
    /// The address and password match this account.
    Accepted(UserRow),
    /// Wrong address or password (the same answer for both).
    Refused,
    /// Too many failed attempts for this account or address: try again later.
    Throttled,
    /// The account belongs to an organization that requires its single sign-on.
    SsoRequired,
    /// This node is hashing as many passwords as it may: try again in a few seconds. The
    /// attempt was not checked and does not count.
    Busy,
}

/// The key failed sign-ins are counted under: keyed by the server's secret, so that no
/// address or e-mail can be read, or guessed, from the table.
fn failure_key(keys: &Keys, kind: &str, value: &str) -> String {
    hex::encode(keys.sign("sign-in failures", format!("{kind}:{value}").as_bytes()))
}

/// Checks an address and password at `now` (ms). Attempts are counted per account and per
/// client address in the database, so every node counts them together, and counted before
/// the password is checked, so attempts sent at once cannot all slip under the limits; past
/// them, attempts are refused without being checked. An attempt whose password was right,
/// or that was never checked, is taken back: the counts are of failures.
pub async fn sign_in(
    db: &Db,
    keys: &Keys,
    hashing: &Hashing,
    email: &str,
    password: &str,
    from: Option<IpAddr>,
    now: i64,
) -> SignIn {
    let email = store::users::normalize_email(email);
    let window_start = now - i64::try_from(FAILURE_WINDOW.as_millis()).unwrap_or(i64::MAX);
    let account_key = failure_key(keys, "a", &email);
    let address_key = from.map(|a| failure_key(keys, "i", &a.to_string()));
    let keys: Vec<&str> = std::iter::once(account_key.as_str())
        .chain(address_key.as_deref())
        .collect();
    let limits = [FAILURES_PER_ACCOUNT, FAILURES_PER_ADDRESS];
    match store::sessions::note_attempt(db, &keys, now, window_start).await {
        Ok(counts)
            if counts
                .iter()
                .zip(limits)
                .all(|(n, limit)| *n <= i64::from(limit)) => {}
        Ok(_) => return SignIn::Throttled,
        Err(e) => {
            tracing::error!(error = %e, "a sign-in attempt could not be counted");
            return SignIn::Refused;
        }
    }
    let forget = || async {
        if let Err(e) = store::sessions::forget_attempt(db, &keys).await {
            tracing::error!(error = %e, "a sign-in attempt could not be taken back");
        }
    };
    let found = match find(db, &email).await {
        Ok(found) => found,
        Err(e) => {
            tracing::error!(error = %e, "sign-in lookup failed");
            return SignIn::Refused;
        }
    };
    let stored = found
        .as_ref()
        .and_then(|(_, hash)| hash.clone())
        .unwrap_or_else(|| decoy().to_string());
    let Ok(matches) = crate::passwords::verify(hashing, password, &stored).await else {
        forget().await;
        return SignIn::Busy;
    };
    match found {
        Some((user, Some(_))) if matches => {
            forget().await;
            match store::orgs::sso_enforced_for(db, user.id.as_str()).await {
                Ok(false) => SignIn::Accepted(user),
                Ok(true) => SignIn::SsoRequired,
                Err(e) => {
                    tracing::error!(error = %e, "sign-in lookup failed");
                    SignIn::Refused
                }
            }
        }
        _ => SignIn::Refused,
    }
}

async fn find(db: &Db, email: &str) -> sqlx::Result<Option<(UserRow, Option<String>)>> {
    let Some(user) = store::users::by_email(db, email).await? else {
        return Ok(None);
    };
    let hash = store::sessions::password_hash(db, user.id.as_str()).await?;
    Ok(Some((user, hash)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_rules_follow_length_and_the_common_list_only() {
        assert!(password_problem("short", "a@b.c").is_some());
        assert!(password_problem("Password123", "a@b.c").is_some());
        assert!(password_problem("alice@example.com", "Alice@example.com").is_some());
        assert!(password_problem("alice", "alice@example.com").is_some());
        // No composition rules: a long lower-case phrase is fine.
        assert!(password_problem("correct horse battery staple", "a@b.c").is_none());
        assert!(password_problem(&"x".repeat(257), "a@b.c").is_some());
    }
}

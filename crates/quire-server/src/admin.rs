//! Administration from the command line: tokens. Works beside a running server on the
//! same storage.

use crate::clock::{Clock, SystemClock};
use crate::config::ServerConfig;
use crate::db::Db;
use crate::store;

async fn open(config: &ServerConfig) -> anyhow::Result<Db> {
    if config.database_url.is_none() {
        std::fs::create_dir_all(&config.data_dir)?;
    }
    Db::connect(&config.database_url()).await
}

/// Creates the user with `email` if missing and returns a new API token for them.
pub async fn create_token(
    config: &ServerConfig,
    email: &str,
    name: Option<&str>,
) -> anyhow::Result<String> {
    crate::validate::email("email", &store::users::normalize_email(email))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let db = open(config).await?;
    let now = SystemClock.now_ms();
    let mut tx = db.begin().await?;
    let user = store::users::find_or_create(&mut tx, email, name, now).await?;
    tx.commit().await?;
    let token = store::tokens::create(&db, &user.id, now).await?;
    db.close().await;
    Ok(token)
}

/// Revokes one token, or every token of a user; returns how many were revoked.
pub async fn revoke_token(
    config: &ServerConfig,
    token: Option<&str>,
    email: Option<&str>,
) -> anyhow::Result<u64> {
    let db = open(config).await?;
    let now = SystemClock.now_ms();
    let n = match (token, email) {
        (Some(token), _) => u64::from(store::tokens::revoke(&db, token, now).await?),
        (None, Some(email)) => store::tokens::revoke_all_for_email(&db, email, now).await?,
        (None, None) => anyhow::bail!("give --token or --email"),
    };
    db.close().await;
    Ok(n)
}

//! Administration from the command line: tokens, backup and restore. Works beside a
//! running server on the same storage.

use crate::blobs::Blobs;
use crate::clock::{Clock, SystemClock};
use crate::config::ServerConfig;
use crate::db::{Db, Dialect};
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
    tx.touches(&[]);
    let user = store::users::find_or_create(&mut tx, email, name, now).await?;
    tx.commit().await?;
    let token = store::tokens::create(&db, &user.id, now).await?;
    db.close().await;
    Ok(token)
}

/// Creates a user with a password for the app, or sets the password of an existing one
/// (ending their app sessions); `admin` makes the user an instance administrator.
pub async fn set_password(
    config: &ServerConfig,
    email: &str,
    name: Option<&str>,
    password: &str,
    admin: bool,
) -> anyhow::Result<()> {
    let db = open(config).await?;
    let now = SystemClock.now_ms();
    // The command's own process: one hash, nothing else waiting.
    let hashing = crate::passwords::Hashing::new(1, 0);
    let done = crate::domain::accounts::set_password(
        &db,
        &hashing,
        email,
        name,
        password,
        crate::domain::accounts::Holder::Any { admin },
        now,
    )
    .await;
    db.close().await;
    done.map(|_| ()).map_err(|e| anyhow::anyhow!("{e}"))
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

/// The jobs given up on (latest first, at most `limit`), with why: kept for the operator.
pub async fn failed_jobs(
    config: &ServerConfig,
    limit: i64,
) -> anyhow::Result<Vec<store::jobs::FailedJob>> {
    let db = open(config).await?;
    let jobs = store::jobs::failed(&db, limit).await?;
    db.close().await;
    Ok(jobs)
}

/// What a backup holds.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct BackupManifest {
    /// Format of the backup folder.
    pub format: u32,
    /// When it was taken (ms since the epoch).
    pub taken_at: i64,
    /// `sqlite` (the database is in the folder) or `postgres` (it is not: see `README.txt`).
    pub database: String,
    /// The migrations of the build that took it.
    pub migrations: Vec<i64>,
    /// Blobs copied.
    pub blobs: u64,
    /// Their bytes.
    pub blob_bytes: u64,
}

/// Writes a consistent online copy of the storage to `to` (a new or empty folder): on
/// SQLite the database file, copied in one read transaction while writers go on, and every
/// blob; on PostgreSQL the blobs only, with `README.txt` naming the `pg_dump` step.
///
/// Blobs are copied before and again after the database copy, so that every blob the copy
/// names is in the folder: a blob is written before the row that names it commits.
pub async fn backup(config: &ServerConfig, to: &std::path::Path) -> anyhow::Result<BackupManifest> {
    use anyhow::Context;
    if to.exists() && std::fs::read_dir(to)?.next().is_some() {
        anyhow::bail!("the backup folder {} is not empty", to.display());
    }
    std::fs::create_dir_all(to.join("blobs"))
        .with_context(|| format!("cannot create {}", to.display()))?;
    let db = open(config).await?;
    let blobs = Blobs::open(config.blob_url.as_deref(), &config.data_dir.join("blobs"))?;
    let copy = Blobs::open(None, &to.join("blobs"))?;
    let (mut count, mut bytes) = blobs.copy_missing_to(&copy).await?;
    let taken_at = SystemClock.now_ms();
    let database = match db.dialect() {
        Dialect::Sqlite => {
            db.snapshot_into(&to.join("quire.db")).await?;
            "sqlite"
        }
        Dialect::Postgres => {
            std::fs::write(
                to.join("README.txt"),
                "This backup holds the blobs of a Quire server on PostgreSQL. Copy its \
                 database with pg_dump, taken after this folder was written:\n\n  \
                 pg_dump --format=custom --file=quire.pgdump \"$QUIRE_DATABASE_URL\"\n\n\
                 Restore: pg_restore --dbname=<new database> quire.pgdump, then \
                 quire admin restore --from <this folder> with --database-url set to it.\n",
            )?;
            "postgres"
        }
    };
    let (more, more_bytes) = blobs.copy_missing_to(&copy).await?;
    count += more;
    bytes += more_bytes;
    db.close().await;
    let manifest = BackupManifest {
        format: 1,
        taken_at,
        database: database.into(),
        migrations: crate::db::known_versions(),
        blobs: count,
        blob_bytes: bytes,
    };
    std::fs::write(
        to.join("backup.json"),
        serde_json::to_vec_pretty(&manifest)?,
    )?;
    Ok(manifest)
}

/// Restores a backup into the configured storage, which must hold no database yet: the
/// SQLite file into the data dir (PostgreSQL: restored beforehand with `pg_restore`), and the
/// blobs into the blob store.
pub async fn restore(
    config: &ServerConfig,
    from: &std::path::Path,
) -> anyhow::Result<BackupManifest> {
    use anyhow::Context;
    let manifest: BackupManifest = serde_json::from_slice(
        &std::fs::read(from.join("backup.json"))
            .with_context(|| format!("{} holds no backup.json", from.display()))?,
    )
    .context("backup.json is not a Quire backup manifest")?;
    anyhow::ensure!(
        manifest.format == 1,
        "unknown backup format {}",
        manifest.format
    );
    let newer: Vec<i64> = manifest
        .migrations
        .iter()
        .copied()
        .filter(|v| !crate::db::known_versions().contains(v))
        .collect();
    anyhow::ensure!(
        newer.is_empty(),
        "the backup was taken by a newer Quire (migrations {newer:?}); restore it with that version"
    );
    match (manifest.database.as_str(), config.database_url.as_deref()) {
        ("sqlite", None) => {
            let target = config.data_dir.join("quire.db");
            anyhow::ensure!(
                !target.exists(),
                "{} already exists: restore into a new data dir",
                target.display()
            );
            std::fs::create_dir_all(&config.data_dir)?;
            std::fs::copy(from.join("quire.db"), &target)
                .with_context(|| format!("cannot write {}", target.display()))?;
        }
        ("sqlite", Some(_)) => {
            anyhow::bail!("this backup holds a SQLite database: restore it without --database-url")
        }
        ("postgres", _) => {}
        (other, _) => anyhow::bail!("unknown database kind `{other}` in backup.json"),
    }
    let copy = Blobs::open(None, &from.join("blobs"))?;
    let blobs = Blobs::open(config.blob_url.as_deref(), &config.data_dir.join("blobs"))?;
    copy.copy_missing_to(&blobs).await?;
    // Opening the database checks it and brings its schema up to this build's.
    open(config).await?.close().await;
    Ok(manifest)
}

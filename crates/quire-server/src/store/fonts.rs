//! Uploads through signed URLs and an organization's custom fonts (`domain::fonts`).

use crate::db::sql::Sql;
use crate::db::Db;

crate::db::inline::row! {
    /// A signed upload: what its URL was made for and, once its bytes came, what they are.
    #[derive(Debug, Clone)]
    pub struct UploadRow {
        pub storage_key: String,
        pub org_id: String,
        pub kind: String,
        pub name: String,
        pub declared_type: String,
        pub declared_size: i64,
        pub created_by: String,
        pub created_at: i64,
        pub expires_at: i64,
        pub hash: Option<String>,
        pub content_type: Option<String>,
        pub size: Option<i64>,
        pub uploaded_at: Option<i64>,
    }
}

const UPLOAD_COLUMNS: &str = "storage_key, org_id, kind, name, declared_type, declared_size, \
     created_by, created_at, expires_at, hash, content_type, size, uploaded_at";

/// Records a new upload (its bytes not yet sent).
pub async fn insert_upload(db: &Db, u: &UploadRow) -> sqlx::Result<()> {
    db.execute(
        &Sql::new(
            "INSERT INTO storage_uploads (storage_key, org_id, kind, name, declared_type, \
             declared_size, created_by, created_at, expires_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .arg(&u.storage_key)
        .arg(&u.org_id)
        .arg(&u.kind)
        .arg(&u.name)
        .arg(&u.declared_type)
        .arg(u.declared_size)
        .arg(&u.created_by)
        .arg(u.created_at)
        .arg(u.expires_at),
        &[],
    )
    .await?;
    Ok(())
}

/// Forgets an organization's uploads whose URL expired before their bytes came, and answers
/// how many other uploads it has and how many bytes they hold or may still receive.
pub async fn reserved(db: &Db, org_id: &str, now: i64) -> sqlx::Result<(i64, i64)> {
    db.execute(
        &Sql::new(
            "DELETE FROM storage_uploads WHERE org_id = $1 AND hash IS NULL AND expires_at < $2",
        )
        .arg(org_id)
        .arg(now),
        &[],
    )
    .await?;
    sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(declared_size), 0) AS BIGINT) \
         FROM storage_uploads WHERE org_id = $1",
    )
    .bind(org_id)
    .fetch_one(db.pool())
    .await
}

/// An organization's uploads whose bytes came before `before`: (key, name of the bytes).
pub async fn finished_before(
    db: &Db,
    org_id: &str,
    before: i64,
) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as(
        "SELECT storage_key, hash FROM storage_uploads \
         WHERE org_id = $1 AND hash IS NOT NULL AND uploaded_at < $2",
    )
    .bind(org_id)
    .bind(before)
    .fetch_all(db.pool())
    .await
}

/// Forgets an upload whose bytes still came before `before` (one a font took meanwhile was
/// touched, see [`touch_upload`]); whether it was forgotten.
pub async fn delete_upload(db: &Db, key: &str, before: i64) -> sqlx::Result<bool> {
    let n = db
        .execute(
            &Sql::new("DELETE FROM storage_uploads WHERE storage_key = $1 AND uploaded_at < $2")
                .arg(key)
                .arg(before),
            &[],
        )
        .await?;
    Ok(n > 0)
}

/// Marks a finished upload as just taken by a font: its day without a font starts again.
/// False when it is gone.
pub async fn touch_upload(db: &Db, key: &str, now: i64) -> sqlx::Result<bool> {
    let n = db
        .execute(
            &Sql::new(
                "UPDATE storage_uploads SET uploaded_at = $2 \
                 WHERE storage_key = $1 AND hash IS NOT NULL",
            )
            .arg(key)
            .arg(now),
            &[],
        )
        .await?;
    Ok(n > 0)
}

/// The upload named `key`.
pub async fn upload(db: &Db, key: &str) -> sqlx::Result<Option<UploadRow>> {
    sqlx::query_as(&format!(
        "SELECT {UPLOAD_COLUMNS} FROM storage_uploads WHERE storage_key = $1"
    ))
    .bind(key)
    .fetch_optional(db.pool())
    .await
}

/// Marks an upload's bytes as received; false when another request finished it first.
pub async fn finish_upload(
    db: &Db,
    key: &str,
    hash: &str,
    content_type: &str,
    size: i64,
    now: i64,
) -> sqlx::Result<bool> {
    let n = db
        .execute(
            &Sql::new(
                "UPDATE storage_uploads SET hash = $2, content_type = $3, size = $4, \
                 uploaded_at = $5 WHERE storage_key = $1 AND hash IS NULL",
            )
            .arg(key)
            .arg(hash)
            .arg(content_type)
            .arg(size)
            .arg(now),
            &[],
        )
        .await?;
    Ok(n > 0)
}

crate::db::inline::row! {
    /// A custom font; `faces` is a JSON array of `{weight, key}`.
    #[derive(Debug, Clone)]
    pub struct FontRow {
        pub id: String,
        pub org_id: String,
        pub family: String,
        pub faces: String,
        pub created_at: i64,
        pub updated_at: i64,
    }
}

const FONT_COLUMNS: &str = "id, org_id, family, faces, created_at, updated_at";

/// Every custom font of an organization (bounded by the domain's cap), oldest first.
pub async fn list(db: &Db, org_id: &str) -> sqlx::Result<Vec<FontRow>> {
    sqlx::query_as(&format!(
        "SELECT {FONT_COLUMNS} FROM custom_fonts WHERE org_id = $1 ORDER BY created_at, id"
    ))
    .bind(org_id)
    .fetch_all(db.pool())
    .await
}

/// How many custom fonts an organization has.
pub async fn count(db: &Db, org_id: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM custom_fonts WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(db.pool())
        .await
}

/// One custom font of an organization.
pub async fn get(db: &Db, org_id: &str, id: &str) -> sqlx::Result<Option<FontRow>> {
    sqlx::query_as(&format!(
        "SELECT {FONT_COLUMNS} FROM custom_fonts WHERE org_id = $1 AND id = $2"
    ))
    .bind(org_id)
    .bind(id)
    .fetch_optional(db.pool())
    .await
}

/// Adds a font.
pub async fn insert(db: &Db, f: &FontRow) -> sqlx::Result<()> {
    db.execute(
        &Sql::new(
            "INSERT INTO custom_fonts (id, org_id, family, faces, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .arg(&f.id)
        .arg(&f.org_id)
        .arg(&f.family)
        .arg(&f.faces)
        .arg(f.created_at)
        .arg(f.updated_at),
        &[],
    )
    .await?;
    Ok(())
}

/// Replaces a font's family and faces while it is still at `seen` (its `updated_at` when
/// read); whether it was.
pub async fn update(
    db: &Db,
    org_id: &str,
    id: &str,
    seen: i64,
    family: &str,
    faces: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let n = db
        .execute(
            &Sql::new(
                "UPDATE custom_fonts SET family = $4, faces = $5, updated_at = $6 \
                 WHERE org_id = $1 AND id = $2 AND updated_at = $3",
            )
            .arg(org_id)
            .arg(id)
            .arg(seen)
            .arg(family)
            .arg(faces)
            .arg(now),
            &[],
        )
        .await?;
    Ok(n > 0)
}

/// Deletes a font; whether it existed.
pub async fn delete(db: &Db, org_id: &str, id: &str) -> sqlx::Result<bool> {
    let n = db
        .execute(
            &Sql::new("DELETE FROM custom_fonts WHERE org_id = $1 AND id = $2")
                .arg(org_id)
                .arg(id),
            &[],
        )
        .await?;
    Ok(n > 0)
}

//! Content objects: the immutable, content-addressed pieces of revisions.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};

/// Fetches the objects among `hashes` that exist, as `(hash, bytes)`.
pub async fn get_many(db: &Db, hashes: &[String]) -> sqlx::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::with_capacity(hashes.len());
    for chunk in hashes.chunks(500) {
        let mut q = Sql::new("SELECT hash, data FROM content_objects WHERE hash IN (");
        for (i, h) in chunk.iter().enumerate() {
            if i > 0 {
                q.push(", ");
            }
            q.bind(h.as_str());
        }
        q.push(")");
        let rows: Vec<(String, Vec<u8>)> = q.query_as().fetch_all(db.pool()).await?;
        out.extend(rows);
    }
    Ok(out)
}

/// Stores objects (those already present are left alone: same name, same bytes).
pub async fn put_many(tx: &mut Tx, objects: &[(String, Vec<u8>)]) -> sqlx::Result<()> {
    for (hash, data) in objects {
        sqlx::query(
            "INSERT INTO content_objects (hash, data, size) VALUES ($1, $2, $3) ON CONFLICT (hash) DO NOTHING",
        )
        .bind(hash)
        .bind(data.clone())
        .bind(i64::try_from(data.len()).unwrap_or(i64::MAX))
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

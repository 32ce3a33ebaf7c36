//! Content objects: the immutable, content-addressed pieces of revisions. Each space keeps
//! its own rows (structural sharing happens between the revisions of a space), so that a
//! purged space takes all of its content with it.

use crate::db::sql::Sql;
use crate::db::{Db, Tx};

/// Fetches the objects among `hashes` that `space_id` stores, as `(hash, bytes)`.
pub async fn get_many(
    db: &Db,
    space_id: &str,
    hashes: &[String],
) -> sqlx::Result<Vec<(String, Vec<u8>)>> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::with_capacity(hashes.len());
    for q in get_many_queries(space_id, hashes) {
        out.extend(
            q.query_as::<(String, Vec<u8>)>()
                .fetch_all(db.pool())
                .await?,
        );
    }
    Ok(out)
}

/// The bytes of the object `hash` if `space_id` stores it.
pub async fn get_in_space(db: &Db, space_id: &str, hash: &str) -> sqlx::Result<Option<Vec<u8>>> {
    let q = Sql::new("SELECT data FROM content_objects WHERE space_id = $1 AND hash = $2")
        .arg(space_id)
        .arg(hash);
    q.query_scalar::<Vec<u8>>().fetch_optional(db.pool()).await
}

/// As [`get_many`], through the connection of a transaction under way: a writer holding
/// locks must not wait for a second connection from the pool.
pub async fn get_many_tx(
    tx: &mut Tx,
    space_id: &str,
    hashes: &[String],
) -> sqlx::Result<Vec<(String, Vec<u8>)>> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::with_capacity(hashes.len());
    for q in get_many_queries(space_id, hashes) {
        out.extend(tx.rows::<(String, Vec<u8>)>(&q).await?);
    }
    Ok(out)
}

/// The reads of [`get_many`], 500 hashes each. Always by space: the table's only index is
/// its key, `(space_id, hash)`, which every object written goes into.
fn get_many_queries<'a>(space_id: &'a str, hashes: &'a [String]) -> impl Iterator<Item = Sql> + 'a {
    hashes.chunks(500).map(move |chunk| {
        let mut q =
            Sql::new("SELECT hash, data FROM content_objects WHERE space_id = $1 AND hash IN (")
                .arg(space_id);
        for (i, h) in chunk.iter().enumerate() {
            if i > 0 {
                q.push(", ");
            }
            q.bind(h.as_str());
        }
        q.push(")");
        q
    })
}

/// Objects stored per statement by [`put_many`] (4 arguments each: within every database's
/// bound on arguments).
const OBJECTS_PER_INSERT: usize = 200;

/// Stores objects for a space (those it already has are left alone), many per statement:
/// each statement is a round trip made while the transaction holds the write lock.
pub async fn put_many(
    tx: &mut Tx,
    space_id: &str,
    objects: &[(String, &[u8])],
) -> sqlx::Result<()> {
    for chunk in objects.chunks(OBJECTS_PER_INSERT) {
        let mut text =
            String::from("INSERT INTO content_objects (space_id, hash, data, size) VALUES ");
        for i in 0..chunk.len() {
            if i > 0 {
                text.push_str(", ");
            }
            let n = 4 * i;
            text.push_str(&format!("(${}, ${}, ${}, ${})", n + 1, n + 2, n + 3, n + 4));
        }
        text.push_str(" ON CONFLICT (space_id, hash) DO NOTHING");
        let mut q = Sql::new(&text);
        for (hash, data) in chunk {
            q = q
                .arg(space_id)
                .arg(hash.as_str())
                .arg(*data)
                .arg(i64::try_from(data.len()).unwrap_or(i64::MAX));
        }
        tx.execute(&q).await?;
    }
    Ok(())
}

/// Copies every object and blob reference of one space to another (duplication).
pub async fn copy_space(tx: &mut Tx, from: &str, to: &str) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "INSERT INTO content_objects (space_id, hash, data, size) \
         SELECT $2, hash, data, size FROM content_objects WHERE space_id = $1",
        )
        .arg(from)
        .arg(to),
    )
    .await?;
    tx.execute(&Sql::new(
        "INSERT INTO blob_refs (space_id, hash) SELECT $2, hash FROM blob_refs WHERE space_id = $1",
    )
    .arg(from)
    .arg(to)
    )
    .await?;
    Ok(())
}

/// Records that a space's content uses a blob.
pub async fn add_blob_ref(db: &Db, space_id: &str, hash: &str) -> sqlx::Result<()> {
    db.execute(&Sql::new("INSERT INTO blob_refs (space_id, hash) VALUES ($1, $2) ON CONFLICT (space_id, hash) DO NOTHING")
        .arg(space_id)
        .arg(hash), &[])
        .await?;
    Ok(())
}

/// Records, inside `tx`, that a space's content uses these blobs.
pub async fn add_blob_refs_tx(tx: &mut Tx, space_id: &str, hashes: &[&str]) -> sqlx::Result<()> {
    for hash in hashes {
        tx.execute(&Sql::new("INSERT INTO blob_refs (space_id, hash) VALUES ($1, $2) ON CONFLICT (space_id, hash) DO NOTHING")
            .arg(space_id)
            .arg(hash)
            )
            .await?;
    }
    Ok(())
}

/// The blobs a space uses.
pub async fn blob_refs(tx: &mut Tx, space_id: &str) -> sqlx::Result<Vec<String>> {
    tx.scalars(&Sql::new("SELECT hash FROM blob_refs WHERE space_id = $1").arg(space_id))
        .await
}

/// Of `hashes`, those no space uses any more.
pub async fn unused_blobs(db: &Db, hashes: &[String]) -> sqlx::Result<Vec<String>> {
    let mut out = Vec::new();
    for h in hashes {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM blob_refs WHERE hash = $1")
            .bind(h)
            .fetch_one(db.pool())
            .await?;
        if n == 0 {
            out.push(h.clone());
        }
    }
    Ok(out)
}

/// Forgets a blob's row (its bytes are removed from the blob store by the caller).
pub async fn delete_blob(db: &Db, hash: &str) -> sqlx::Result<()> {
    db.execute(
        &Sql::new("DELETE FROM blobs WHERE hash = $1").arg(hash),
        &[],
    )
    .await?;
    Ok(())
}

/// Whether a space's content refers to a blob.
pub async fn has_blob_ref(db: &Db, space_id: &str, hash: &str) -> sqlx::Result<bool> {
    let found: Option<String> =
        sqlx::query_scalar("SELECT hash FROM blob_refs WHERE space_id = $1 AND hash = $2")
            .bind(space_id)
            .bind(hash)
            .fetch_optional(db.pool())
            .await?;
    Ok(found.is_some())
}

/// Records a stored blob (the first upload of some bytes describes them; each file keeps its
/// own content type in the content, so this row's type is informative only).
pub async fn record_blob(
    db: &Db,
    hash: &str,
    size: i64,
    content_type: &str,
    dimensions: Option<(i64, i64)>,
    now: i64,
) -> sqlx::Result<()> {
    db.execute(&Sql::new(
        "INSERT INTO blobs (hash, size, content_type, width, height, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (hash) DO NOTHING",
    )
    .arg(hash)
    .arg(size)
    .arg(content_type)
    .arg(dimensions.map(|d| d.0))
    .arg(dimensions.map(|d| d.1))
    .arg(now), &[])
    .await?;
    Ok(())
}

//! The search index: per-space statistics, page and section records, postings in blocks,
//! document frequencies and the word dictionary. Ordinary tables and portable SQL, so every
//! node of a deployment reads and writes the same index. Every table cascades from
//! `spaces`, so purging a space removes its index.

use sqlx::Row;

use crate::db::sql::{Arg, Sql};
use crate::db::{Db, Tx};

/// Bound parameters per statement (both engines accept far more).
const MAX_PARAMS: usize = 1000;
/// Values per `IN (...)` list.
const IN_CHUNK: usize = 500;

/// A bound value of a multi-row statement.
#[derive(Debug, Clone, Copy)]
pub enum Val<'a> {
    Text(&'a str),
    Int(i64),
    Bytes(&'a [u8]),
}

impl From<Val<'_>> for Arg {
    fn from(v: Val<'_>) -> Self {
        match v {
            Val::Text(s) => s.into(),
            Val::Int(i) => i.into(),
            Val::Bytes(b) => b.into(),
        }
    }
}

/// `$from, $from+1, ...` for `n` values.
fn placeholders(from: usize, n: usize) -> String {
    (from..from + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs `head VALUES (..), (..) tail` over `rows` of `width` values, in batches.
async fn insert_rows(
    tx: &mut Tx,
    head: &str,
    tail: &str,
    width: usize,
    rows: &[Val<'_>],
) -> sqlx::Result<()> {
    let per = (MAX_PARAMS / width).max(1) * width;
    for chunk in rows.chunks(per) {
        let n = chunk.len() / width;
        let mut text = String::with_capacity(head.len() + tail.len() + n * width * 6);
        text.push_str(head);
        text.push_str(" VALUES ");
        for r in 0..n {
            if r > 0 {
                text.push_str(", ");
            }
            text.push('(');
            text.push_str(&placeholders(r * width + 1, width));
            text.push(')');
        }
        text.push(' ');
        text.push_str(tail);
        let mut q = Sql::new(&text);
        for v in chunk {
            q = q.arg(*v);
        }
        tx.execute(&q).await?;
    }
    Ok(())
}

/// Runs `head IN (...) tail`, where `head` holds `fixed` placeholders `$1..`, once per chunk
/// of `values`.
async fn execute_in(
    tx: &mut Tx,
    head: &str,
    fixed: &[Val<'_>],
    values: &[Val<'_>],
    tail: &str,
) -> sqlx::Result<u64> {
    let mut affected = 0;
    for chunk in values.chunks(IN_CHUNK) {
        let text = format!(
            "{head} IN ({}){tail}",
            placeholders(fixed.len() + 1, chunk.len())
        );
        let mut q = Sql::new(&text);
        for v in fixed.iter().chain(chunk) {
            q = q.arg(*v);
        }
        affected += tx.execute(&q).await?;
    }
    Ok(affected)
}

crate::db::inline::row! {
/// What the index of one space holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexRow {
    pub space_id: String,
    /// The revision the index reflects.
    pub revision_id: String,
    /// The analysis it was built with (`language/version`).
    pub analyzer: String,
    pub pages: i64,
    pub title_len: i64,
    pub head_len: i64,
    pub body_len: i64,
    /// The next free page key.
    pub next_key: i64,
    /// Pages from this key on have their postings in `search_delta`, not in blocks.
    pub delta_from: i64,
    /// Pages changed (in the delta, or dead in blocks) since the last compaction.
    pub pending: i64,
    /// Bumped by every write of the index ([`put_index`]): names what readers cache of it.
    pub generation: i64,
}
}

const INDEX_COLUMNS: &str = "space_id, revision_id, analyzer, pages, title_len, head_len, \
    body_len, next_key, delta_from, pending, generation";

/// The index record of a space, locked for the rest of the transaction. On PostgreSQL the
/// no-op update of the space takes its row lock, so that writers of one space's index
/// (merges, catch-ups, compactions, first builds) take turns; SQLite transactions already
/// hold the write lock.
pub async fn lock_index(tx: &mut Tx, space_id: &str) -> sqlx::Result<Option<IndexRow>> {
    tx.execute(&Sql::new("UPDATE spaces SET updated_at = updated_at WHERE id = $1").arg(space_id))
        .await?;
    tx.row(
        &Sql::new(format!(
            "SELECT {INDEX_COLUMNS} FROM search_spaces WHERE space_id = $1"
        ))
        .arg(space_id),
    )
    .await
}

/// Writes the index record of a space, and bumps its generation: every write of an index
/// (its postings, pages or dictionary) ends here, in the same transaction.
pub async fn put_index(tx: &mut Tx, r: &IndexRow, now: i64) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(format!(
            "INSERT INTO search_spaces ({INDEX_COLUMNS}, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
         ON CONFLICT (space_id) DO UPDATE SET revision_id = excluded.revision_id, \
         analyzer = excluded.analyzer, pages = excluded.pages, title_len = excluded.title_len, \
         head_len = excluded.head_len, body_len = excluded.body_len, \
         next_key = excluded.next_key, delta_from = excluded.delta_from, \
         pending = excluded.pending, generation = search_spaces.generation + 1, \
         updated_at = excluded.updated_at"
        ))
        .arg(&r.space_id)
        .arg(&r.revision_id)
        .arg(&r.analyzer)
        .arg(r.pages)
        .arg(r.title_len)
        .arg(r.head_len)
        .arg(r.body_len)
        .arg(r.next_key)
        .arg(r.delta_from)
        .arg(r.pending)
        .arg(r.generation)
        .arg(now),
    )
    .await?;
    Ok(())
}

const TABLES: &[&str] = &[
    "search_postings",
    "search_delta",
    "search_dead",
    "search_terms",
    "search_words",
    "search_sections",
    "search_pages",
    "search_manifests",
];

/// The manifest of a space's index (what it was built from), if it has one.
pub async fn manifest(tx: &mut Tx, space_id: &str) -> sqlx::Result<Option<Vec<u8>>> {
    tx.scalar_opt(&Sql::new("SELECT data FROM search_manifests WHERE space_id = $1").arg(space_id))
        .await
}

/// Writes the manifest of a space's index.
pub async fn put_manifest(tx: &mut Tx, space_id: &str, data: &[u8]) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "INSERT INTO search_manifests (space_id, data) VALUES ($1, $2) \
             ON CONFLICT (space_id) DO UPDATE SET data = excluded.data",
        )
        .arg(space_id)
        .arg(data),
    )
    .await?;
    Ok(())
}

/// Removes every row of a space's index except its record.
pub async fn clear(tx: &mut Tx, space_id: &str) -> sqlx::Result<()> {
    for table in TABLES {
        tx.execute(&Sql::new(format!("DELETE FROM {table} WHERE space_id = $1")).arg(space_id))
            .await?;
    }
    Ok(())
}

/// Copies the index of `from` to `to` (a duplicate with the same content), recording
/// `revision_id` as the revision it reflects. Nothing is copied when `from` has no index at
/// `from_revision`; the copy is then built on first use.
pub async fn copy(
    tx: &mut Tx,
    from: &str,
    from_revision: &str,
    to: &str,
    revision_id: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let Some(mut ix) = lock_index(tx, from).await? else {
        return Ok(false);
    };
    if ix.revision_id != from_revision {
        return Ok(false);
    }
    let copies: &[(&str, &str)] = &[
        (
            "search_pages",
            "page_key, page_id, title, description, path, ancestors, terms, title_len, head_len, body_len",
        ),
        ("search_sections", "page_key, idx, anchor, title, body, guard"),
        ("search_postings", "term, block, data"),
        ("search_delta", "term, page_key, data"),
        ("search_dead", "page_key, terms"),
        ("search_terms", "term, df"),
        ("search_words", "word, term"),
        ("search_manifests", "data"),
    ];
    for (table, cols) in copies {
        tx.execute(&Sql::new(format!(
            "INSERT INTO {table} (space_id, {cols}) SELECT $1, {cols} FROM {table} WHERE space_id = $2"
        ))
        .arg(to)
        .arg(from)
        )
        .await?;
    }
    ix.space_id = to.to_string();
    ix.revision_id = revision_id.to_string();
    put_index(tx, &ix, now).await?;
    Ok(true)
}

crate::db::inline::row! {
/// A page record, as needed to replace it.
#[derive(Debug, Clone)]
pub struct StoredPage {
    pub page_key: i64,
    pub page_id: String,
    /// Its terms, space-separated.
    pub terms: String,
    pub title_len: i64,
    pub head_len: i64,
    pub body_len: i64,
}
}

/// The page records of `page_ids` that exist.
pub async fn pages_by_id(
    tx: &mut Tx,
    space_id: &str,
    page_ids: &[&str],
) -> sqlx::Result<Vec<StoredPage>> {
    let mut out = Vec::with_capacity(page_ids.len());
    for chunk in page_ids.chunks(IN_CHUNK) {
        let text = format!(
            "SELECT page_key, page_id, terms, title_len, head_len, body_len FROM search_pages \
             WHERE space_id = $1 AND page_id IN ({})",
            placeholders(2, chunk.len())
        );
        let mut q = Sql::new(&text).arg(space_id);
        for id in chunk {
            q = q.arg(*id);
        }
        out.extend(tx.rows::<StoredPage>(&q).await?);
    }
    Ok(out)
}

/// Removes page records and their sections.
pub async fn delete_pages(tx: &mut Tx, space_id: &str, keys: &[i64]) -> sqlx::Result<()> {
    let values: Vec<Val> = keys.iter().map(|k| Val::Int(*k)).collect();
    for table in ["search_pages", "search_sections"] {
        execute_in(
            tx,
            &format!("DELETE FROM {table} WHERE space_id = $1 AND page_key"),
            &[Val::Text(space_id)],
            &values,
            "",
        )
        .await?;
    }
    Ok(())
}

/// A page record to insert.
#[derive(Debug, Clone)]
pub struct NewPage<'a> {
    pub page_key: i64,
    pub page_id: &'a str,
    pub title: &'a str,
    pub description: &'a str,
    pub path: &'a str,
    /// JSON array of ancestor titles.
    pub ancestors: String,
    pub terms: String,
    pub title_len: i64,
    pub head_len: i64,
    pub body_len: i64,
    /// `(anchor, title, body, guard)` of each section, in order; `guard` is the JSON array
    /// of the conditions its text lies under, or empty.
    pub sections: Vec<(&'a str, &'a str, &'a str, String)>,
}

/// Inserts page records and their sections.
pub async fn insert_pages(tx: &mut Tx, space_id: &str, pages: &[NewPage<'_>]) -> sqlx::Result<()> {
    let mut rows = Vec::with_capacity(pages.len() * 11);
    let mut sections = Vec::new();
    for p in pages {
        rows.extend([
            Val::Text(space_id),
            Val::Int(p.page_key),
            Val::Text(p.page_id),
            Val::Text(p.title),
            Val::Text(p.description),
            Val::Text(p.path),
            Val::Text(&p.ancestors),
            Val::Text(&p.terms),
            Val::Int(p.title_len),
            Val::Int(p.head_len),
            Val::Int(p.body_len),
        ]);
        for (i, (anchor, title, body, guard)) in p.sections.iter().enumerate() {
            sections.extend([
                Val::Text(space_id),
                Val::Int(p.page_key),
                Val::Int(i64::try_from(i).unwrap_or(i64::MAX)),
                Val::Text(anchor),
                Val::Text(title),
                Val::Text(body),
                Val::Text(guard),
            ]);
        }
    }
    insert_rows(
        tx,
        "INSERT INTO search_pages (space_id, page_key, page_id, title, description, path, \
         ancestors, terms, title_len, head_len, body_len)",
        "",
        11,
        &rows,
    )
    .await?;
    insert_rows(
        tx,
        "INSERT INTO search_sections (space_id, page_key, idx, anchor, title, body, guard)",
        "",
        7,
        &sections,
    )
    .await
}

/// Updates where a page sits (its path and ancestors), its content unchanged.
pub async fn update_page_place(
    tx: &mut Tx,
    space_id: &str,
    page_key: i64,
    path: &str,
    ancestors: &str,
) -> sqlx::Result<()> {
    tx.execute(&Sql::new(
        "UPDATE search_pages SET path = $3, ancestors = $4 WHERE space_id = $1 AND page_key = $2",
    )
    .arg(space_id)
    .arg(page_key)
    .arg(path)
    .arg(ancestors)
    )
    .await?;
    Ok(())
}

/// The posting blocks of `terms` in one block of a space, as `(term, data)`.
pub async fn blocks(
    tx: &mut Tx,
    space_id: &str,
    block: i64,
    terms: &[&str],
) -> sqlx::Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::with_capacity(terms.len());
    for chunk in terms.chunks(IN_CHUNK) {
        let text = format!(
            "SELECT term, data FROM search_postings WHERE space_id = $1 AND block = $2 \
             AND term IN ({})",
            placeholders(3, chunk.len())
        );
        let mut q = Sql::new(&text).arg(space_id).arg(block);
        for t in chunk {
            q = q.arg(*t);
        }
        out.extend(tx.rows::<(String, Vec<u8>)>(&q).await?);
    }
    Ok(out)
}

/// Writes posting blocks `(term, block, data)`, replacing those that exist.
pub async fn put_blocks(
    tx: &mut Tx,
    space_id: &str,
    rows: &[(&str, i64, &[u8])],
    upsert: bool,
) -> sqlx::Result<()> {
    let mut vals = Vec::with_capacity(rows.len() * 4);
    for (term, block, data) in rows {
        vals.extend([
            Val::Text(space_id),
            Val::Text(term),
            Val::Int(*block),
            Val::Bytes(data),
        ]);
    }
    let tail = if upsert {
        "ON CONFLICT (space_id, term, block) DO UPDATE SET data = excluded.data"
    } else {
        ""
    };
    insert_rows(
        tx,
        "INSERT INTO search_postings (space_id, term, block, data)",
        tail,
        4,
        &vals,
    )
    .await
}

/// Removes the posting blocks of `terms` in one block.
pub async fn delete_blocks(
    tx: &mut Tx,
    space_id: &str,
    block: i64,
    terms: &[&str],
) -> sqlx::Result<()> {
    let values: Vec<Val> = terms.iter().map(|t| Val::Text(t)).collect();
    execute_in(
        tx,
        "DELETE FROM search_postings WHERE space_id = $1 AND block = $2 AND term",
        &[Val::Text(space_id), Val::Int(block)],
        &values,
        "",
    )
    .await?;
    Ok(())
}

/// Adds delta postings `(term, page key, entry)`.
pub async fn insert_delta(
    tx: &mut Tx,
    space_id: &str,
    rows: &[(&str, i64, &[u8])],
) -> sqlx::Result<()> {
    let mut vals = Vec::with_capacity(rows.len() * 4);
    for (term, key, data) in rows {
        vals.extend([
            Val::Text(space_id),
            Val::Text(term),
            Val::Int(*key),
            Val::Bytes(data),
        ]);
    }
    insert_rows(
        tx,
        "INSERT INTO search_delta (space_id, term, page_key, data)",
        "",
        4,
        &vals,
    )
    .await
}

/// Removes the delta postings of the pages with keys in `from..to`.
pub async fn delete_delta(tx: &mut Tx, space_id: &str, from: i64, to: i64) -> sqlx::Result<()> {
    tx.execute(
        &Sql::new(
            "DELETE FROM search_delta WHERE space_id = $1 AND page_key >= $2 AND page_key < $3",
        )
        .arg(space_id)
        .arg(from)
        .arg(to),
    )
    .await?;
    Ok(())
}

/// Records pages whose postings in blocks are superseded: `(page key, its terms)`.
pub async fn insert_dead(tx: &mut Tx, space_id: &str, rows: &[(i64, &str)]) -> sqlx::Result<()> {
    let mut vals = Vec::with_capacity(rows.len() * 3);
    for (key, terms) in rows {
        vals.extend([Val::Text(space_id), Val::Int(*key), Val::Text(terms)]);
    }
    insert_rows(
        tx,
        "INSERT INTO search_dead (space_id, page_key, terms)",
        "",
        3,
        &vals,
    )
    .await
}

/// The delta postings of the pages with keys in `from..to`, as `(term, page key, entry)`.
pub async fn delta_range(
    tx: &mut Tx,
    space_id: &str,
    from: i64,
    to: i64,
) -> sqlx::Result<Vec<(String, i64, Vec<u8>)>> {
    tx.rows(
        &Sql::new(
            "SELECT term, page_key, data FROM search_delta \
         WHERE space_id = $1 AND page_key >= $2 AND page_key < $3",
        )
        .arg(space_id)
        .arg(from)
        .arg(to),
    )
    .await
}

/// Up to `limit` superseded pages of a space, as `(page key, its terms)`.
pub async fn some_dead(
    tx: &mut Tx,
    space_id: &str,
    limit: i64,
) -> sqlx::Result<Vec<(i64, String)>> {
    tx.rows(&Sql::new(
        "SELECT page_key, terms FROM search_dead WHERE space_id = $1 ORDER BY page_key LIMIT $2",
    )
    .arg(space_id)
    .arg(limit)
    )
    .await
}

/// Forgets superseded pages (their entries are gone from the blocks).
pub async fn delete_dead(tx: &mut Tx, space_id: &str, keys: &[i64]) -> sqlx::Result<()> {
    let values: Vec<Val> = keys.iter().map(|k| Val::Int(*k)).collect();
    execute_in(
        tx,
        "DELETE FROM search_dead WHERE space_id = $1 AND page_key",
        &[Val::Text(space_id)],
        &values,
        "",
    )
    .await?;
    Ok(())
}

/// Adds `delta` to the document frequency of each term (creating the terms).
pub async fn add_df(tx: &mut Tx, space_id: &str, deltas: &[(&str, i64)]) -> sqlx::Result<()> {
    let mut vals = Vec::with_capacity(deltas.len() * 3);
    for (term, delta) in deltas {
        vals.extend([Val::Text(space_id), Val::Text(term), Val::Int(*delta)]);
    }
    insert_rows(
        tx,
        "INSERT INTO search_terms (space_id, term, df)",
        "ON CONFLICT (space_id, term) DO UPDATE SET df = search_terms.df + excluded.df",
        3,
        &vals,
    )
    .await
}

/// Removes the terms among `terms` that no page holds any more.
pub async fn prune_df(tx: &mut Tx, space_id: &str, terms: &[&str]) -> sqlx::Result<()> {
    let values: Vec<Val> = terms.iter().map(|t| Val::Text(t)).collect();
    execute_in(
        tx,
        "DELETE FROM search_terms WHERE space_id = $1 AND df <= 0 AND term",
        &[Val::Text(space_id)],
        &values,
        "",
    )
    .await?;
    Ok(())
}

/// Adds `(word, term)` pairs to the word dictionary (existing words are kept).
pub async fn insert_words(
    tx: &mut Tx,
    space_id: &str,
    words: &[(&str, &str)],
    fresh: bool,
) -> sqlx::Result<()> {
    let mut vals = Vec::with_capacity(words.len() * 3);
    for (word, term) in words {
        vals.extend([
            Val::Text(space_id),
            Val::Bytes(word.as_bytes()),
            Val::Text(term),
        ]);
    }
    let tail = if fresh {
        ""
    } else {
        "ON CONFLICT (space_id, word) DO NOTHING"
    };
    insert_rows(
        tx,
        "INSERT INTO search_words (space_id, word, term)",
        tail,
        3,
        &vals,
    )
    .await
}

// ---- Reads ------------------------------------------------------------------------------

/// A live space with its current revision and the state of its index.
#[derive(Debug, Clone)]
pub struct SpaceState {
    pub space_id: String,
    pub title: String,
    pub language: Option<String>,
    pub revision_id: String,
    pub root: String,
    pub index: Option<IndexRow>,
}

/// The live spaces among `ids` with the state of their index, in no particular order.
pub async fn states(db: &Db, ids: &[&str]) -> sqlx::Result<Vec<SpaceState>> {
    let mut out = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(IN_CHUNK) {
        let text = format!(
            "SELECT s.id, s.title, s.language, s.revision_id, r.root, ix.revision_id, ix.analyzer, \
             ix.pages, ix.title_len, ix.head_len, ix.body_len, ix.next_key, ix.delta_from, \
             ix.pending, ix.generation \
             FROM spaces s JOIN revisions r ON r.id = s.revision_id \
             LEFT JOIN search_spaces ix ON ix.space_id = s.id \
             WHERE s.deleted_at IS NULL AND s.id IN ({})",
            placeholders(1, chunk.len())
        );
        let mut q = sqlx::query(&text);
        for id in chunk {
            q = q.bind(*id);
        }
        for r in q.fetch_all(db.pool()).await? {
            let space_id: String = r.try_get(0)?;
            let ix_revision: Option<String> = r.try_get(5)?;
            let index = match ix_revision {
                Some(revision_id) => Some(IndexRow {
                    space_id: space_id.clone(),
                    revision_id,
                    analyzer: r.try_get(6)?,
                    pages: r.try_get(7)?,
                    title_len: r.try_get(8)?,
                    head_len: r.try_get(9)?,
                    body_len: r.try_get(10)?,
                    next_key: r.try_get(11)?,
                    delta_from: r.try_get(12)?,
                    pending: r.try_get(13)?,
                    generation: r.try_get(14)?,
                }),
                None => None,
            };
            out.push(SpaceState {
                space_id,
                title: r.try_get(1)?,
                language: r.try_get(2)?,
                revision_id: r.try_get(3)?,
                root: r.try_get(4)?,
                index,
            });
        }
    }
    Ok(out)
}

fn in_list(from: usize, n: usize) -> String {
    format!("({})", placeholders(from, n))
}

/// Document frequencies of `terms`, summed over `spaces`.
pub async fn df(db: &Db, spaces: &[&str], terms: &[&str]) -> sqlx::Result<Vec<(String, i64)>> {
    if spaces.is_empty() || terms.is_empty() {
        return Ok(Vec::new());
    }
    let text = format!(
        "SELECT term, CAST(SUM(df) AS BIGINT) FROM search_terms WHERE space_id IN {} AND term IN {} GROUP BY term",
        in_list(1, spaces.len()),
        in_list(spaces.len() + 1, terms.len())
    );
    let mut q = Sql::new(&text);
    for v in spaces.iter().chain(terms) {
        q = q.arg(*v);
    }
    db.rows(&q).await
}

/// The dictionary entries `(word, term)` among `words` in any of `spaces`.
pub async fn words(
    db: &Db,
    spaces: &[&str],
    words: &[String],
) -> sqlx::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    if spaces.is_empty() {
        return Ok(out);
    }
    for chunk in words.chunks(IN_CHUNK) {
        let text = format!(
            "SELECT DISTINCT word, term FROM search_words WHERE space_id IN {} AND word IN {}",
            in_list(1, spaces.len()),
            in_list(spaces.len() + 1, chunk.len())
        );
        let mut q = Sql::new(&text);
        for s in spaces {
            q = q.arg(*s);
        }
        for w in chunk {
            q = q.arg(w.as_bytes());
        }
        for (w, t) in db.rows::<(Vec<u8>, String)>(&q).await? {
            out.push((String::from_utf8_lossy(&w).into_owned(), t));
        }
    }
    Ok(out)
}

/// Dictionary entries `(word, term)` whose word starts with `prefix`, at most `limit`, in
/// word order per space.
pub async fn prefixed(
    db: &Db,
    spaces: &[&str],
    prefix: &str,
    limit: i64,
) -> sqlx::Result<Vec<(String, String)>> {
    let lo = prefix.as_bytes().to_vec();
    let hi = prefix_end(&lo);
    let mut out = Vec::new();
    for space in spaces {
        let text = if hi.is_empty() {
            "SELECT word, term FROM search_words WHERE space_id = $1 AND word >= $2 \
             ORDER BY word LIMIT $3"
        } else {
            "SELECT word, term FROM search_words WHERE space_id = $1 AND word >= $2 AND word < $4 \
             ORDER BY word LIMIT $3"
        };
        let mut q = Sql::new(text).arg(*space).arg(lo.as_slice()).arg(limit);
        if !hi.is_empty() {
            q = q.arg(hi.as_slice());
        }
        for (w, t) in db.rows::<(Vec<u8>, String)>(&q).await? {
            out.push((String::from_utf8_lossy(&w).into_owned(), t));
        }
    }
    Ok(out)
}

/// The superseded page keys of `spaces`, as `(space, page key)`.
pub async fn dead_keys(db: &Db, spaces: &[&str]) -> sqlx::Result<Vec<(String, i64)>> {
    if spaces.is_empty() {
        return Ok(Vec::new());
    }
    let text = format!(
        "SELECT space_id, page_key FROM search_dead WHERE space_id IN {}",
        in_list(1, spaces.len())
    );
    let mut q = Sql::new(&text);
    for s in spaces {
        q = q.arg(*s);
    }
    db.rows(&q).await
}

/// A page record, for results.
#[derive(Debug, Clone)]
pub struct PageRow {
    pub page_key: i64,
    pub page_id: String,
    pub title: String,
    pub description: String,
    pub path: String,
    pub ancestors: String,
}

crate::db::inline::row! {
    /// A section, for results and phrase checks.
    #[derive(Debug, Clone)]
    pub struct SectionRow {
        pub page_key: i64,
        pub idx: i64,
        pub anchor: String,
        pub title: String,
        pub body: String,
    }
}

/// Where a posting read by [`postings_with_delta`] comes from.
pub const FROM_BLOCK: i64 = -1;

/// The posting blocks of `terms` in `spaces` (only blocks among `blocks` when given) and,
/// with `delta`, their delta postings, in one statement: one round trip instead of two. Rows
/// are `(space, term, key, data)`: `key` is [`FROM_BLOCK`] for a block, or the page key of
/// a delta entry.
pub async fn postings_with_delta(
    db: &Db,
    spaces: &[&str],
    terms: &[&str],
    blocks: Option<&[i64]>,
    delta: bool,
) -> sqlx::Result<Vec<(String, String, i64, Vec<u8>)>> {
    let mut out = Vec::new();
    let with_blocks = !blocks.is_some_and(<[i64]>::is_empty);
    if spaces.is_empty() || terms.is_empty() || !(with_blocks || delta) {
        return Ok(out);
    }
    let blocks = blocks.unwrap_or_default();
    for chunk in terms.chunks(IN_CHUNK) {
        // The same placeholders serve both parts: `$n` names one value on both engines.
        let space_in = in_list(1, spaces.len());
        let term_in = in_list(spaces.len() + 1, chunk.len());
        let mut parts = Vec::with_capacity(2);
        if with_blocks {
            let mut part = format!(
                "SELECT space_id, term, CAST({FROM_BLOCK} AS BIGINT), data FROM search_postings \
                 WHERE space_id IN {space_in} AND term IN {term_in}"
            );
            if !blocks.is_empty() {
                part.push_str(&format!(
                    " AND block IN {}",
                    in_list(spaces.len() + chunk.len() + 1, blocks.len())
                ));
            }
            parts.push(part);
        }
        if delta {
            parts.push(format!(
                "SELECT space_id, term, page_key, data FROM search_delta \
                 WHERE space_id IN {space_in} AND term IN {term_in}"
            ));
        }
        let text = parts.join(" UNION ALL ");
        let mut q = Sql::new(&text);
        for v in spaces.iter().chain(chunk) {
            q = q.arg(*v);
        }
        if with_blocks {
            for b in blocks {
                q = q.arg(*b);
            }
        }
        out.extend(db.rows::<(String, String, i64, Vec<u8>)>(&q).await?);
    }
    Ok(out)
}

/// Dictionary entries `(word, term, document frequency)` of one space whose word starts
/// with `prefix`, at most `limit`, in word order: a completion and the frequencies that
/// choose among its terms in one round trip. A term without a frequency counts 0.
pub async fn prefixed_df(
    db: &Db,
    space: &str,
    prefix: &str,
    limit: i64,
) -> sqlx::Result<Vec<(String, String, i64)>> {
    let lo = prefix.as_bytes().to_vec();
    let hi = prefix_end(&lo);
    let text = if hi.is_empty() {
        "SELECT w.word, w.term, COALESCE(t.df, 0) FROM search_words w \
         LEFT JOIN search_terms t ON t.space_id = w.space_id AND t.term = w.term \
         WHERE w.space_id = $1 AND w.word >= $2 ORDER BY w.word LIMIT $3"
    } else {
        "SELECT w.word, w.term, COALESCE(t.df, 0) FROM search_words w \
         LEFT JOIN search_terms t ON t.space_id = w.space_id AND t.term = w.term \
         WHERE w.space_id = $1 AND w.word >= $2 AND w.word < $4 ORDER BY w.word LIMIT $3"
    };
    let mut q = Sql::new(text).arg(space).arg(lo.as_slice()).arg(limit);
    if !hi.is_empty() {
        q = q.arg(hi.as_slice());
    }
    Ok(db
        .rows::<(Vec<u8>, String, i64)>(&q)
        .await?
        .into_iter()
        .map(|(w, t, df)| (String::from_utf8_lossy(&w).into_owned(), t, df))
        .collect())
}

/// The smallest byte string above every string starting with `prefix` (empty: none).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut hi = prefix.to_vec();
    while let Some(last) = hi.pop() {
        if last < 0xff {
            hi.push(last + 1);
            break;
        }
    }
    hi
}

/// The sections of a space's index whose text lies under conditions: `(page key, section
/// index, guard)`, the guard being the JSON array of those conditions.
pub async fn guards(db: &Db, space_id: &str) -> sqlx::Result<Vec<(i64, i64, String)>> {
    db.rows(
        &Sql::new(
            "SELECT page_key, idx, guard FROM search_sections WHERE space_id = $1 AND guard <> ''",
        )
        .arg(space_id),
    )
    .await
}

/// A page record with one of its sections (none for a page without sections).
#[derive(Debug, Clone)]
pub struct TextRow {
    pub page: PageRow,
    pub section: Option<SectionRow>,
}

crate::db::inline::row! {
/// A page record joined with one of its sections (`None`s for a page without sections).
struct TextJoin {
    page_key: i64,
    page_id: String,
    title: String,
    description: String,
    path: String,
    ancestors: String,
    idx: Option<i64>,
    anchor: Option<String>,
    section_title: Option<String>,
    body: Option<String>,
}
}

/// The page records of `keys` in a space, each with all its sections (one row per section,
/// or one without a section for a page that has none), in one statement.
pub async fn texts(db: &Db, space_id: &str, keys: &[i64]) -> sqlx::Result<Vec<TextRow>> {
    let mut out = Vec::new();
    for chunk in keys.chunks(IN_CHUNK) {
        let text = format!(
            "SELECT p.page_key, p.page_id, p.title, p.description, p.path, p.ancestors, \
             s.idx, s.anchor, s.title AS section_title, s.body FROM search_pages p \
             LEFT JOIN search_sections s ON s.space_id = p.space_id AND s.page_key = p.page_key \
             WHERE p.space_id = $1 AND p.page_key IN {}",
            in_list(2, chunk.len())
        );
        let mut q = Sql::new(&text).arg(space_id);
        for k in chunk {
            q = q.arg(*k);
        }
        for r in db.rows::<TextJoin>(&q).await? {
            let section = match (r.idx, r.anchor, r.section_title, r.body) {
                (Some(idx), Some(anchor), Some(title), Some(body)) => Some(SectionRow {
                    page_key: r.page_key,
                    idx,
                    anchor,
                    title,
                    body,
                }),
                _ => None,
            };
            let page = PageRow {
                page_key: r.page_key,
                page_id: r.page_id,
                title: r.title,
                description: r.description,
                path: r.path,
                ancestors: r.ancestors,
            };
            out.push(TextRow { page, section });
        }
    }
    Ok(out)
}

//! Storage queries, one module per aggregate. Handlers call these and never write SQL.

pub mod change_requests;
pub mod collections;
pub mod comments;
pub mod fonts;
pub mod git;
pub mod glossary;
pub mod hostnames;
pub mod insights;
pub mod invites;
pub mod jobs;
pub mod keys;
pub mod members;
pub mod objects;
pub mod openapi;
pub mod ordering;
pub mod orgs;
pub mod permissions;
pub mod published;
pub mod recent;
pub mod redirects;
pub mod reviews;
pub mod revisions;
pub mod saml;
pub mod search;
pub mod sessions;
pub mod settings;
pub mod site_settings;
pub mod sites;
pub mod spaces;
pub mod teams;
pub mod tokens;
pub mod translations;
pub mod users;

/// A row of a page of a listing, with the count of the whole listing.
struct Counted<T> {
    row: T,
    total: i64,
}

impl<'r, T: sqlx::FromRow<'r, sqlx::any::AnyRow>> sqlx::FromRow<'r, sqlx::any::AnyRow>
    for Counted<T>
{
    fn from_row(row: &'r sqlx::any::AnyRow) -> sqlx::Result<Self> {
        use sqlx::Row as _;
        Ok(Counted {
            row: T::from_row(row)?,
            total: row.try_get("total")?,
        })
    }
}

impl<T: crate::db::inline::FromSqlite> crate::db::inline::FromSqlite for Counted<T> {
    fn fields(out: &mut Vec<&'static str>) {
        T::fields(out);
        out.push("total");
    }

    fn read(
        row: &rusqlite::Row<'_>,
        at: &mut crate::db::inline::Columns<'_>,
    ) -> rusqlite::Result<Self> {
        Ok(Counted {
            row: T::read(row, at)?,
            total: row.get(at.take()?)?,
        })
    }
}

/// One page of `SELECT {columns} FROM {table} {cond} {page}` and the count of every row
/// matching `cond`, in one round trip: the count rides on each row. Only a page past the end
/// costs a second query for the count.
async fn counted_page<T>(
    db: &crate::db::Db,
    columns: &str,
    table: &str,
    cond: &crate::db::sql::Sql,
    page: &crate::db::sql::Sql,
) -> sqlx::Result<(Vec<T>, i64)>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + crate::db::inline::FromSqlite + Send + Unpin,
{
    let mut count = crate::db::sql::Sql::new(format!("SELECT COUNT(*) FROM {table}"));
    count.append(cond);
    page_with_total(db, columns, table, &count, cond, page).await
}

/// One page of `SELECT {columns} FROM {table} {cond} {page}` and the total that the scalar
/// query `total` reads (a count, or a counter kept with the rows), in one statement.
async fn page_with_total<T>(
    db: &crate::db::Db,
    columns: &str,
    table: &str,
    total: &crate::db::sql::Sql,
    cond: &crate::db::sql::Sql,
    page: &crate::db::sql::Sql,
) -> sqlx::Result<(Vec<T>, i64)>
where
    T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + crate::db::inline::FromSqlite + Send + Unpin,
{
    use crate::db::sql::Sql;
    let mut q = Sql::new(format!("SELECT {columns}, ("));
    q.append(total);
    q.push(&format!(") AS total FROM {table}"));
    q.append(cond).append(page);
    let rows: Vec<Counted<T>> = db.rows(&q).await?;
    let total = match rows.first() {
        Some(first) => first.total,
        None => db.scalar(total).await?,
    };
    Ok((rows.into_iter().map(|c| c.row).collect(), total))
}

/// A round trip to the database (readiness checks).
pub async fn ping(db: &crate::db::Db) -> sqlx::Result<()> {
    sqlx::query("SELECT 1").execute(db.pool()).await?;
    Ok(())
}

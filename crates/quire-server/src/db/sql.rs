//! A small builder for queries assembled at run time (filters, keyset conditions), numbering
//! `$n` placeholders so that the same text runs on SQLite and PostgreSQL.

use sqlx::any::AnyArguments;
use sqlx::query::{Query, QueryAs, QueryScalar};
use sqlx::{Any, FromRow};

use crate::ids::{OrgId, UserId};
use crate::values::{
    AgentsContext, ChangeRequestStatus, CommentStatus, EditMode, RevisionType, SiteType,
    SiteVisibility, TeamRole, Visibility, VisitorAuthBackend,
};

/// A bound value.
#[derive(Debug, Clone)]
pub enum Arg {
    /// Text, possibly NULL.
    Text(Option<String>),
    /// A 64-bit integer (flags and timestamps too), possibly NULL.
    Int(Option<i64>),
    /// Bytes, possibly NULL.
    Bytes(Option<Vec<u8>>),
}

/// Closed sets and ids are stored as their text.
macro_rules! stored_as_text {
    ($($t:ty),+) => {$(
        impl From<$t> for Arg {
            fn from(v: $t) -> Self {
                Arg::Text(Some(v.as_str().to_string()))
            }
        }
        impl From<&$t> for Arg {
            fn from(v: &$t) -> Self {
                Arg::Text(Some(v.as_str().to_string()))
            }
        }
        impl From<Option<$t>> for Arg {
            fn from(v: Option<$t>) -> Self {
                Arg::Text(v.map(|v| v.as_str().to_string()))
            }
        }
    )+};
}
stored_as_text!(
    ChangeRequestStatus,
    Visibility,
    EditMode,
    RevisionType,
    CommentStatus,
    TeamRole,
    SiteType,
    SiteVisibility,
    VisitorAuthBackend,
    AgentsContext,
    OrgId,
    UserId
);
impl From<&str> for Arg {
    fn from(v: &str) -> Self {
        Arg::Text(Some(v.to_string()))
    }
}
impl From<&&str> for Arg {
    fn from(v: &&str) -> Self {
        Arg::Text(Some(v.to_string()))
    }
}
impl From<String> for Arg {
    fn from(v: String) -> Self {
        Arg::Text(Some(v))
    }
}
impl From<&String> for Arg {
    fn from(v: &String) -> Self {
        Arg::Text(Some(v.clone()))
    }
}
impl From<Option<String>> for Arg {
    fn from(v: Option<String>) -> Self {
        Arg::Text(v)
    }
}
impl From<&Option<String>> for Arg {
    fn from(v: &Option<String>) -> Self {
        Arg::Text(v.clone())
    }
}
impl From<Option<&str>> for Arg {
    fn from(v: Option<&str>) -> Self {
        Arg::Text(v.map(str::to_string))
    }
}
impl From<Option<&String>> for Arg {
    fn from(v: Option<&String>) -> Self {
        Arg::Text(v.cloned())
    }
}
impl From<i64> for Arg {
    fn from(v: i64) -> Self {
        Arg::Int(Some(v))
    }
}
impl From<&i64> for Arg {
    fn from(v: &i64) -> Self {
        Arg::Int(Some(*v))
    }
}
impl From<i32> for Arg {
    fn from(v: i32) -> Self {
        Arg::Int(Some(v.into()))
    }
}
impl From<Option<i64>> for Arg {
    fn from(v: Option<i64>) -> Self {
        Arg::Int(v)
    }
}
impl From<&Option<i64>> for Arg {
    fn from(v: &Option<i64>) -> Self {
        Arg::Int(*v)
    }
}
impl From<Vec<u8>> for Arg {
    fn from(v: Vec<u8>) -> Self {
        Arg::Bytes(Some(v))
    }
}
impl From<&Vec<u8>> for Arg {
    fn from(v: &Vec<u8>) -> Self {
        Arg::Bytes(Some(v.clone()))
    }
}
impl From<&[u8]> for Arg {
    fn from(v: &[u8]) -> Self {
        Arg::Bytes(Some(v.to_vec()))
    }
}

/// SQL text with its arguments.
#[derive(Debug, Default, Clone)]
pub struct Sql {
    text: String,
    args: Vec<Arg>,
}

impl Sql {
    /// Starts a query with `text`.
    pub fn new(text: impl AsRef<str>) -> Self {
        Self {
            text: text.as_ref().to_string(),
            args: Vec::new(),
        }
    }

    /// Appends raw SQL.
    pub fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// Appends a placeholder bound to `arg`.
    pub fn bind(&mut self, arg: impl Into<Arg>) -> &mut Self {
        self.args.push(arg.into());
        self.text.push_str(&format!("${}", self.args.len()));
        self
    }

    /// Adds an argument for a placeholder the text already holds (`$n`, n its position).
    pub fn arg(mut self, arg: impl Into<Arg>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends another fragment with its arguments, renumbering its placeholders.
    pub fn append(&mut self, other: &Sql) -> &mut Self {
        let offset = self.args.len();
        let mut chars = other.text.char_indices().peekable();
        while let Some((_, c)) = chars.next() {
            if c == '$' {
                let mut digits = String::new();
                while let Some((_, d)) = chars.peek().copied().filter(|(_, d)| d.is_ascii_digit()) {
                    digits.push(d);
                    chars.next();
                }
                match digits.parse::<usize>() {
                    Ok(n) => self.text.push_str(&format!("${}", n + offset)),
                    Err(_) => self.text.push('$'),
                }
            } else {
                self.text.push(c);
            }
        }
        self.args.extend(other.args.iter().cloned());
        self
    }

    /// The SQL text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The bound arguments, in placeholder order.
    pub fn args(&self) -> &[Arg] {
        &self.args
    }

    fn bind_all<'q, Q>(&'q self, mut q: Q, bind: impl Fn(Q, &'q Arg) -> Q) -> Q {
        for arg in &self.args {
            q = bind(q, arg);
        }
        q
    }

    /// A query returning rows of `T`.
    pub fn query_as<'q, T>(&'q self) -> QueryAs<'q, Any, T, AnyArguments<'q>>
    where
        T: for<'r> FromRow<'r, sqlx::any::AnyRow>,
    {
        self.bind_all(sqlx::query_as(&self.text), |q, arg| match arg {
            Arg::Text(v) => q.bind(v.clone()),
            Arg::Int(v) => q.bind(*v),
            Arg::Bytes(v) => q.bind(v.clone()),
        })
    }

    /// A query returning one scalar.
    pub fn query_scalar<'q, T>(&'q self) -> QueryScalar<'q, Any, T, AnyArguments<'q>>
    where
        (T,): for<'r> FromRow<'r, sqlx::any::AnyRow>,
    {
        self.bind_all(sqlx::query_scalar(&self.text), |q, arg| match arg {
            Arg::Text(v) => q.bind(v.clone()),
            Arg::Int(v) => q.bind(*v),
            Arg::Bytes(v) => q.bind(v.clone()),
        })
    }

    /// A statement.
    pub fn query(&self) -> Query<'_, Any, AnyArguments<'_>> {
        self.bind_all(sqlx::query(&self.text), |q, arg| match arg {
            Arg::Text(v) => q.bind(v.clone()),
            Arg::Int(v) => q.bind(*v),
            Arg::Bytes(v) => q.bind(v.clone()),
        })
    }
}

/// Escapes `%`, `_` and `\` for a `LIKE ... ESCAPE '\'` pattern.
pub fn like_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

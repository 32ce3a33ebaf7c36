//! Response bodies of the search operations, after the official `SearchSpaceResult`,
//! `SearchPageResult` and `SearchSectionResult` schemas (with Quire's `description`,
//! `score`, `rank`, `resultType` and `ancestors` beside them).

use serde::Serialize;

use crate::domain::search::query::{FoundPage, FoundSection};

/// The `urls` of a result.
#[derive(Serialize)]
pub struct Urls {
    /// Its address in the app.
    pub app: String,
}

/// An ancestor of a result page.
#[derive(Serialize)]
pub struct Ancestor {
    pub title: String,
}

/// `SearchSectionResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchSectionResult {
    pub id: String,
    pub title: String,
    pub path: String,
    pub body: String,
    pub score: f64,
    /// Always `section`.
    pub result_type: &'static str,
    pub urls: Urls,
}

/// `SearchPageResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchPageResult {
    pub id: String,
    pub title: String,
    pub description: String,
    pub path: String,
    pub score: f64,
    /// One-based position in the whole ranking.
    pub rank: usize,
    /// `page` or `section`.
    pub result_type: &'static str,
    pub ancestors: Vec<Ancestor>,
    pub sections: Vec<SearchSectionResult>,
    pub urls: Urls,
}

/// `SearchSpaceResult`: the results of one space in an organization's search.
#[derive(Serialize)]
pub struct SearchSpaceResult {
    /// Always `space`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub id: String,
    pub title: String,
    /// The score of its best page.
    pub score: f64,
    pub pages: Vec<SearchPageResult>,
}

impl From<FoundSection> for SearchSectionResult {
    fn from(s: FoundSection) -> Self {
        Self {
            id: s.id,
            title: s.title,
            path: s.path,
            body: s.body,
            score: s.score,
            result_type: "section",
            urls: Urls { app: s.url },
        }
    }
}

impl From<FoundPage> for SearchPageResult {
    fn from(p: FoundPage) -> Self {
        Self {
            id: p.id,
            title: p.title,
            description: p.description,
            path: p.path,
            score: p.score,
            rank: p.position + 1,
            result_type: p.result_type,
            ancestors: p
                .ancestors
                .into_iter()
                .map(|title| Ancestor { title })
                .collect(),
            sections: p.sections.into_iter().map(Into::into).collect(),
            urls: Urls { app: p.url },
        }
    }
}

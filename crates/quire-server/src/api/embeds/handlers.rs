//! `getEmbedByUrl`, `getEmbedByUrlInSpace`.

use axum::extract::State;
use serde::{Deserialize, Serialize};

use crate::domain::embeds;
use crate::error::ApiResult;
use crate::http::extract::QueryParams;
use crate::http::json::Json;
use crate::state::AppState;

/// The query of both operations.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbedQuery {
    url: String,
}

/// `Embed` of type `link`.
#[derive(Serialize)]
pub struct Embed {
    #[serde(rename = "type")]
    kind: &'static str,
    title: String,
    site: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    icon: Option<String>,
}

async fn embed(state: &AppState, url: &str) -> ApiResult<Json<Embed>> {
    let p = embeds::preview(state, url).await?;
    Ok(Json(Embed {
        kind: "link",
        title: p.title,
        site: p.site,
        icon: p.icon,
    }))
}

/// `getEmbedByUrl`: the link preview of a URL.
pub async fn get_embed_by_url(
    State(state): State<AppState>,
    QueryParams(q): QueryParams<EmbedQuery>,
) -> ApiResult<Json<Embed>> {
    embed(&state, &q.url).await
}

/// `getEmbedByUrlInSpace`: the same, for a reader of the space (the space changes nothing:
/// integrations that would render embeds per space are out of Quire's scope).
pub async fn get_embed_by_url_in_space(
    State(state): State<AppState>,
    QueryParams(q): QueryParams<EmbedQuery>,
) -> ApiResult<Json<Embed>> {
    embed(&state, &q.url).await
}

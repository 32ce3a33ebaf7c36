//! `getContentByUrl`.

use axum::extract::State;
use axum::Extension;
use serde::{Deserialize, Serialize};

use crate::api::views::{self, ChangeRequest, Collection, Space};
use crate::domain::access::{load_collection, load_space};
use crate::domain::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::QueryParams;
use crate::http::json::Json;
use crate::state::AppState;
use crate::store;

/// Query of `getContentByUrl`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContentQuery {
    url: String,
}

/// What the URL names (the spec's two shapes).
#[derive(Serialize)]
#[serde(untagged, rename_all = "camelCase")]
pub enum Content {
    /// A collection (`/c/{collectionId}`).
    Collection { collection: Box<Collection> },
    /// A space (`/s/{spaceId}...`), and the change request its path names
    /// (`/~/changes/{number}`).
    Space {
        space: Box<Space>,
        #[serde(rename = "changeRequest", skip_serializing_if = "Option::is_none")]
        change_request: Option<Box<ChangeRequest>>,
    },
}

/// What the caller may not read is not there for them; a server error stays one.
fn unseen(e: ApiError, url: &str) -> ApiError {
    match e.status().is_client_error() {
        true => ApiError::not_found(format!("No content at `{url}`.")),
        false => e,
    }
}

/// `getContentByUrl`: an app URL of this server the caller may read, else 404 (as for what
/// does not exist).
pub async fn get_content_by_url(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    QueryParams(q): QueryParams<ContentQuery>,
) -> ApiResult<Json<Content>> {
    let nothing = || ApiError::not_found(format!("No content at `{}`.", q.url));
    crate::validate::length("url", &q.url, 1, 2048)?;
    let path = q
        .url
        .strip_prefix(&*state.public_url)
        .ok_or_else(nothing)?
        .split(['?', '#'])
        .next()
        .unwrap_or("");
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["c", id, ..] => {
            let ctx = load_collection(&state, &caller, id)
                .await
                .map_err(|e| unseen(e, &q.url))?;
            Ok(Json(Content::Collection {
                collection: Box::new(views::collection(&state, &ctx.collection, ctx.role)),
            }))
        }
        ["s", id, rest @ ..] => {
            let ctx = load_space(&state, &caller, id)
                .await
                .map_err(|e| unseen(e, &q.url))?;
            let change_request = match rest {
                ["~", "changes", number, ..] => {
                    let row = store::change_requests::get(&state.db, &ctx.space.id, number)
                        .await?
                        .ok_or_else(nothing)?;
                    Some(Box::new(
                        views::change_request_json(&state, &ctx, &row).await?,
                    ))
                }
                _ => None,
            };
            Ok(Json(Content::Space {
                space: Box::new(views::space(&state, &ctx.space, ctx.role)),
                change_request,
            }))
        }
        _ => Err(nothing()),
    }
}

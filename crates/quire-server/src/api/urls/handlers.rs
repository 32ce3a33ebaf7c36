//! `getContentByUrl`: an app URL of a collection, a space, one of its change requests or
//! one of its pages.

use axum::extract::State;
use axum::Extension;
use serde::{Deserialize, Serialize};

use crate::api::views::{self, ChangeRequest, Collection, Space};
use crate::domain::access::{load_collection, load_space};
use crate::domain::auth::Caller;
use crate::domain::content;
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
        /// The page its path names (`/s/{spaceId}/{pagePath}`), a document or a group.
        #[serde(skip_serializing_if = "Option::is_none")]
        page: Option<serde_json::Value>,
    },
}

/// The page of the space's current content at `path` (an app URL's path below the space),
/// as `getPageById` gives it; `None` for a link page (the answer's schema holds documents and
/// groups) or a path that names no page.
async fn page_at(
    state: &AppState,
    space: &crate::store::spaces::SpaceRow,
    path: &[&str],
) -> ApiResult<Option<serde_json::Value>> {
    use quire_content::view::{self, BodyFormat, ViewOptions};
    if path.is_empty() || path[0] == "~" {
        return Ok(None);
    }
    let Some(row) = content::revision_row(state, &space.id, &space.revision_id).await? else {
        return Ok(None);
    };
    let rev = content::load_in(state, &space.id, &row.root).await?;
    let wanted = path.join("/");
    let Some((id, _)) = rev.page_paths().into_iter().find(|(_, p)| *p == wanted) else {
        return Ok(None);
    };
    if matches!(
        rev.page(&id).map(|p| &p.kind),
        Some(quire_content::model::PageKind::Link(_)) | None
    ) {
        return Ok(None);
    }
    let base = state.url(&format!("/s/{}", space.id));
    let app = move |p: &str| format!("{base}/{p}");
    let git = quire_content::gitsync::page_blobs(&rev, Some(&id));
    Ok(view::page_view(
        &rev,
        &id,
        &ViewOptions {
            body: BodyFormat::Document,
            app_url: &app,
            git: Some(&git),
        },
    ))
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
            let page = match change_request {
                Some(_) => None,
                None => page_at(&state, &ctx.space, rest).await?,
            };
            Ok(Json(Content::Space {
                space: Box::new(views::space_counted(&state, &ctx.space, ctx.role).await?),
                change_request,
                page,
            }))
        }
        _ => Err(nothing()),
    }
}

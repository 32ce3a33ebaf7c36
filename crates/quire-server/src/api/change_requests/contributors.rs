//! `getContributorsByChangeRequestId`: who wrote a change request's content (recorded by
//! every write that lands, `domain::change_requests::land`).

use axum::extract::{Path, State};
use axum::Extension;
use serde::Serialize;

use super::reviews::user_view;
use crate::api::views;
use crate::domain::access::{self, SpaceCtx};
use crate::domain::change_requests::load;
use crate::error::ApiResult;
use crate::http::json::Json;
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;

/// Official `UserContributor`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Contributor {
    updated_at: String,
    count: i64,
    user: views::User,
}

/// `getContributorsByChangeRequestId`: first contributor first, with how many writes each
/// made and when the latest landed.
pub async fn list_contributors(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, cr)): Path<(String, String)>,
    page: PageRequest,
) -> ApiResult<Json<List<Contributor>>> {
    let c = load(&state, &ctx, &cr).await?;
    let scope = format!("contributors:{}", c.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, total) =
        store::change_requests::contributors(&state.db, &c.id, after, page.fetch_limit()).await?;
    let ids: Vec<&str> = rows.iter().map(|r| r.user_id.as_str()).collect();
    let people = access::people(&state, &ids).await?;
    let items = rows
        .iter()
        .map(|r| {
            (
                Contributor {
                    updated_at: crate::clock::iso(r.last_at),
                    count: r.edits,
                    user: user_view(&state, &people, &r.user_id),
                },
                (r.first_at, r.user_id.clone()),
            )
        })
        .collect();
    Ok(Json(page.finish(&scope, items, total)?))
}

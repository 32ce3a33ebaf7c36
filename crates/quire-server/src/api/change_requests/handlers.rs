//! Change requests: `SPACE/change-requests` and `CR` (create, list, get, update status).
//! Content, merge and update live in `routes/content.rs`.

use axum::extract::{OriginalUri, Path, State};
use axum::response::Response;
use axum::Extension;

use crate::http::json::{Json, JsonBytes};
use serde::Deserialize;

use crate::api::views;
use crate::api::views::change_request_json as render;
use crate::domain::access::SpaceCtx;
use crate::domain::auth::Caller;
use crate::domain::change_requests::{self as crs, creators, current_revision, load};
use crate::domain::listings;
use crate::error::ApiResult;
use crate::http::extract::{JsonBody, OptionalJsonBody, QueryParams};
use crate::http::pagination::PageRequest;
use crate::state::AppState;
use crate::store;
use crate::values::ChangeRequestStatus;

/// Body of `createChangeRequest`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CreateChangeRequest {
    subject: Option<String>,
    #[allow(dead_code)]
    agent_task_id: Option<String>,
}

/// `createChangeRequest`: 201; branches from the space's current revision.
pub async fn create_change_request(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    OptionalJsonBody(body): OptionalJsonBody<CreateChangeRequest>,
) -> ApiResult<Response> {
    let subject = body.subject.unwrap_or_default();
    let c = crs::create(&state, &ctx, &caller.user.id, subject).await?;
    let body = render(&state, &ctx, &c).await?;
    Ok(views::created(
        &state.url(&format!(
            "/v1/spaces/{}/change-requests/{}",
            c.space_id, c.id
        )),
        body,
    ))
}

/// Status filter of the listing.
#[derive(Deserialize, Clone, Copy, Default, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StatusFilter {
    Draft,
    #[default]
    Open,
    Archived,
    Merged,
}

impl StatusFilter {
    /// The status's wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            StatusFilter::Draft => "draft",
            StatusFilter::Open => "open",
            StatusFilter::Archived => "archived",
            StatusFilter::Merged => "merged",
        }
    }
}

/// Query of `listChangeRequestsForSpace`.
#[derive(Deserialize, Default)]
pub struct ListQuery {
    #[serde(default)]
    status: StatusFilter,
    contributor: Option<String>,
}

/// `listChangeRequestsForSpace`: newest first; `status` defaults to `open`.
pub async fn list_change_requests(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    OriginalUri(uri): OriginalUri,
    QueryParams(query): QueryParams<ListQuery>,
    page: PageRequest,
) -> ApiResult<JsonBytes> {
    // Nothing in the items depends on the caller: one answer per request line.
    let key = ["change-requests", listings::request_line(&uri)].join("\n");
    let space = ctx.space.id.as_str();
    let (state, query, page) = (&state, &query, &page);
    let build = move || async move {
        let scope = format!("change-requests:{space}:{}", query.status.as_str());
        let after = page.after::<(i64, String)>(&scope)?;
        let contributor = query.contributor.as_deref().filter(|c| !c.is_empty());
        let (rows, count) = store::change_requests::list(
            &state.db,
            space,
            query.status.as_str(),
            contributor,
            after,
            page.fetch_limit(),
        )
        .await?;
        let creators = creators(state, &rows).await?;
        let space_revision = current_revision(state, space).await?;
        let rows = rows
            .into_iter()
            .map(|c| {
                let key = (c.created_at, c.id.clone());
                (
                    views::change_request(state, &c, creators.get(&c.created_by), &space_revision),
                    key,
                )
            })
            .collect();
        page.finish(&scope, rows, count)
    };
    Ok(JsonBytes(
        listings::answer(state, space, listings::Listing::ChangeRequests, key, build).await?,
    ))
}

/// `getChangeRequestById`: by id or by number.
pub async fn get_change_request(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    OriginalUri(uri): OriginalUri,
    Path((_, cr)): Path<(String, String)>,
) -> ApiResult<JsonBytes> {
    // Like a listing: a change request changes only with its space's listing version.
    let key = ["change-request", listings::request_line(&uri)].join("\n");
    let (state_ref, ctx_ref, cr) = (&state, &ctx, &cr);
    let build = move || async move {
        let c = load(state_ref, ctx_ref, cr).await?;
        render(state_ref, ctx_ref, &c).await
    };
    Ok(JsonBytes(
        listings::answer(
            &state,
            &ctx.space.id,
            listings::Listing::ChangeRequests,
            key,
            build,
        )
        .await?,
    ))
}

/// Settable statuses: merging is done by merging.
#[derive(Deserialize, Clone, Copy, Debug)]
#[serde(rename_all = "lowercase")]
pub enum SettableStatus {
    Draft,
    Open,
    Archived,
}

/// Body of `updateChangeRequestById`.
#[derive(Deserialize)]
pub struct UpdateChangeRequest {
    subject: Option<String>,
    status: Option<SettableStatus>,
}

/// `updateChangeRequestById`: subject and status (`draft`, `open`, `archived`).
pub async fn update_change_request(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, cr)): Path<(String, String)>,
    JsonBody(body): JsonBody<UpdateChangeRequest>,
) -> ApiResult<Json<views::ChangeRequest>> {
    let status = body.status.map(|s| match s {
        SettableStatus::Draft => ChangeRequestStatus::Draft,
        SettableStatus::Open => ChangeRequestStatus::Open,
        SettableStatus::Archived => ChangeRequestStatus::Archived,
    });
    let c = crate::domain::change_requests::update_meta(&state, &ctx, &cr, body.subject, status)
        .await?;
    Ok(Json(render(&state, &ctx, &c).await?))
}

//! Reviews of a change request and the reviewers requested: `getReviewsByChangeRequestId`,
//! `submitChangeRequestReview`, `getRequestedReviewersByChangeRequestId`,
//! `requestReviewersForChangeRequest`, `removeRequestedReviewerFromChangeRequest`.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde::{Deserialize, Serialize};

use crate::api::views;
use crate::domain::access::{self, SpaceCtx};
use crate::domain::auth::Caller;
use crate::domain::change_requests::load;
use crate::error::ApiResult;
use crate::http::extract::JsonBody;
use crate::http::json::Json;
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;
use crate::store::reviews::{RequestedRow, ReviewRow};
use crate::store::users::UserRow;

/// Official `ChangeRequestReview`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    object: &'static str,
    id: String,
    revision: String,
    reviewer: views::User,
    #[serde(skip_serializing_if = "Option::is_none")]
    requested_by: Option<views::User>,
    status: String,
    created_at: String,
    updated_at: String,
}

/// Official `ChangeRequestRequestedReviewer` (a user; Quire requests no teams).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Requested {
    object: &'static str,
    revision: String,
    requested_by: views::User,
    created_at: String,
    kind: &'static str,
    user: views::User,
}

pub(super) fn user_view(
    state: &AppState,
    people: &HashMap<String, UserRow>,
    id: &str,
) -> views::User {
    match people.get(id) {
        Some(u) => views::user(
            state,
            u.id.as_str(),
            &u.email,
            &u.display_name,
            u.photo_url.as_deref(),
        ),
        // An account deleted since: named by its id.
        None => views::user(state, id, "", id, None),
    }
}

fn review_view(state: &AppState, people: &HashMap<String, UserRow>, r: &ReviewRow) -> Review {
    Review {
        object: "change-request-review",
        id: r.id.clone(),
        revision: r.revision_id.clone(),
        reviewer: user_view(state, people, &r.reviewer_id),
        requested_by: r
            .requested_by
            .as_deref()
            .map(|id| user_view(state, people, id)),
        status: r.status.clone(),
        created_at: crate::clock::iso(r.created_at),
        updated_at: crate::clock::iso(r.updated_at),
    }
}

fn requested_view(
    state: &AppState,
    people: &HashMap<String, UserRow>,
    r: &RequestedRow,
) -> Requested {
    Requested {
        object: "change-request-requested-reviewer",
        revision: r.revision_id.clone(),
        requested_by: user_view(state, people, &r.requested_by),
        created_at: crate::clock::iso(r.created_at),
        kind: "user",
        user: user_view(state, people, &r.user_id),
    }
}

/// `getReviewsByChangeRequestId`.
pub async fn list_reviews(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, cr)): Path<(String, String)>,
    page: PageRequest,
) -> ApiResult<Json<List<Review>>> {
    let c = load(&state, &ctx, &cr).await?;
    let scope = format!("reviews:{}", c.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, total) = store::reviews::list(&state.db, &c.id, after, page.fetch_limit()).await?;
    let mut ids: Vec<&str> = Vec::new();
    for r in &rows {
        ids.push(&r.reviewer_id);
        ids.extend(r.requested_by.as_deref());
    }
    let people = access::people(&state, &ids).await?;
    let items = rows
        .iter()
        .map(|r| {
            (
                review_view(&state, &people, r),
                (r.created_at, r.id.clone()),
            )
        })
        .collect();
    Ok(Json(page.finish(&scope, items, total)?))
}

/// Body of `submitChangeRequestReview`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmitReview {
    status: String,
    comment: Option<quire_content::document::Document>,
}

/// `submitChangeRequestReview`: the caller reviews the change request's current content.
pub async fn submit_review(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((space_id, cr)): Path<(String, String)>,
    JsonBody(body): JsonBody<SubmitReview>,
) -> ApiResult<Response> {
    let comment = body
        .comment
        .map(|document| crate::domain::comments::BodyIn::Document { document });
    let (c, row) = crate::domain::change_requests::review(
        &state,
        &ctx,
        &caller.user.id,
        &cr,
        &body.status,
        comment,
    )
    .await?;
    let mut ids = vec![row.reviewer_id.as_str()];
    ids.extend(row.requested_by.as_deref());
    let people = access::people(&state, &ids).await?;
    let location = state.url(&format!(
        "/v1/spaces/{space_id}/change-requests/{}/reviews/{}",
        c.id, row.id
    ));
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(review_view(&state, &people, &row)),
    )
        .into_response())
}

/// `getRequestedReviewersByChangeRequestId`.
pub async fn list_requested(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, cr)): Path<(String, String)>,
    page: PageRequest,
) -> ApiResult<Json<List<Requested>>> {
    let c = load(&state, &ctx, &cr).await?;
    let scope = format!("requested-reviewers:{}", c.id);
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, total) =
        store::reviews::list_requested(&state.db, &c.id, after, page.fetch_limit()).await?;
    let mut ids: Vec<&str> = Vec::new();
    for r in &rows {
        ids.push(&r.user_id);
        ids.push(&r.requested_by);
    }
    let people = access::people(&state, &ids).await?;
    let items = rows
        .iter()
        .map(|r| {
            (
                requested_view(&state, &people, r),
                (r.created_at, r.user_id.clone()),
            )
        })
        .collect();
    Ok(Json(page.finish(&scope, items, total)?))
}

/// Body of `requestReviewersForChangeRequest`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestReviewers {
    users: Vec<String>,
    subject: Option<String>,
}

/// Answer of `requestReviewersForChangeRequest`.
#[derive(Serialize)]
pub struct RequestedAnswer {
    users: Vec<Requested>,
}

/// `requestReviewersForChangeRequest`: each user must be able to review the space.
pub async fn request_reviewers(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, cr)): Path<(String, String)>,
    JsonBody(body): JsonBody<RequestReviewers>,
) -> ApiResult<Json<RequestedAnswer>> {
    let rows = crate::domain::change_requests::request_reviewers(
        &state,
        &ctx,
        &caller.user.id,
        &cr,
        &body.users,
        body.subject,
    )
    .await?;
    let mut ids: Vec<&str> = Vec::new();
    for r in &rows {
        ids.push(&r.user_id);
        ids.push(&r.requested_by);
    }
    let people = access::people(&state, &ids).await?;
    Ok(Json(RequestedAnswer {
        users: rows
            .iter()
            .map(|r| requested_view(&state, &people, r))
            .collect(),
    }))
}

/// `removeRequestedReviewerFromChangeRequest`: `205` when removed, `204` when there was no
/// such request.
pub async fn remove_requested(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    Path((_, cr, user)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    let c = load(&state, &ctx, &cr).await?;
    Ok(
        if store::reviews::remove_requested(&state.db, &ctx.space.id, &c.id, &user).await? {
            StatusCode::RESET_CONTENT
        } else {
            StatusCode::NO_CONTENT
        },
    )
}

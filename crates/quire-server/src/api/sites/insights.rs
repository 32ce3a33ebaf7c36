//! Site insights (`SITE/insights/...`): the published site's events, counted per day by
//! `domain::insights`, which the site's own `~insights` path reaches too.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Extension;
use serde::Serialize;
use serde_json::Value;

use crate::domain::access::SiteCtx;
use crate::domain::insights::{self, Aggregation};
use crate::error::ApiResult;
use crate::http::extract::JsonBody;
use crate::http::json::Json;
use crate::http::pagination::List;
use crate::state::AppState;

/// `trackEventsInSiteById`: public, as the spec declares it. 204 once the body is checked
/// (every event against the spec's shapes); events naming what is not the site's are not
/// counted. 404 for a site that is not published in that organization.
pub async fn track_events_in_site(
    State(state): State<AppState>,
    Path((org_id, site_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<Value>,
) -> ApiResult<StatusCode> {
    insights::track(&state, Some(&org_id), &site_id, &body).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `aggregateSiteEvents`: the site's counts over a range, grouped and filtered.
pub async fn aggregate_site_events(
    State(state): State<AppState>,
    Extension(ctx): Extension<SiteCtx>,
    JsonBody(body): JsonBody<Value>,
) -> ApiResult<Json<Aggregation>> {
    Ok(Json(
        insights::aggregate(&state, &ctx.site.id, &body).await?,
    ))
}

/// A visitor segment (`SiteInsightsVisitorSegment`).
#[derive(Debug, Serialize)]
pub struct VisitorSegment {
    title: String,
    claims: Value,
    events: i64,
    visitors: i64,
    sessions: i64,
}

/// `listSiteVisitorSegments`: always empty. Quire keeps no visitor, session or claim with
/// its counts, so it has no segments to show.
pub async fn list_site_visitor_segments(
    Extension(_ctx): Extension<SiteCtx>,
) -> ApiResult<Json<List<VisitorSegment>>> {
    Ok(Json(List {
        items: Vec::new(),
        count: 0,
        next: None,
    }))
}

//! Collections: `ORG/collections`, `COLL`, `COLL/spaces`, move and transfer.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;

use crate::http::json::Json;
use serde::Deserialize;

use crate::api::views;
use crate::api::views::visible_page;
use crate::domain::access::grants::Grants;
use crate::domain::access::{CollectionCtx, OrgCtx, Role};
use crate::domain::auth::Caller;
use crate::domain::collections;
use crate::domain::placement::{
    level_to_db, transfer, transfer_target, LevelIn, MoveBody, TransferBody, Transferred,
};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{nullable, JsonBody, OptionalJsonBody, QueryParams};
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;
use crate::store::collections::{CollectionPatch, CollectionRow};

/// Body of `createCollection`.
#[derive(Deserialize, Default)]
pub struct CreateCollection {
    title: Option<String>,
    description: Option<String>,
    parent: Option<String>,
}

/// `createCollection`: 201; needs `create` in the organization, or in the parent collection.
pub async fn create_collection(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    OptionalJsonBody(body): OptionalJsonBody<CreateCollection>,
) -> ApiResult<Response> {
    let title = body.title.unwrap_or_default();
    let (collection, role) =
        collections::create(&state, &org, &caller, title, body.description, body.parent).await?;
    Ok(views::created(
        &state.url(&format!("/v1/collections/{}", collection.id)),
        views::collection(&state, &collection, role),
    ))
}

/// Query of `listCollectionsInOrganizationById`.
#[derive(Deserialize)]
pub struct ListCollectionsQuery {
    #[serde(default = "yes")]
    nested: bool,
}

fn yes() -> bool {
    true
}

/// `listCollectionsInOrganizationById`: collections the caller can see; `nested=false`
/// keeps the top level only.
pub async fn list_collections(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    QueryParams(query): QueryParams<ListCollectionsQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<views::Collection>>> {
    let grants = Grants::load(&state, &org.org.id, &caller.user.id, org.role).await?;
    let scope = format!("collections:{}:{}", org.org.id, query.nested);
    let after = page.after::<(i64, String)>(&scope)?;
    let mut visible: Vec<(&CollectionRow, Role)> = grants
        .collections()
        .values()
        .filter(|c| query.nested || c.parent_id.is_none())
        .filter_map(|c| grants.collection_role(c).map(|r| (c, r)))
        .collect();
    visible.sort_by(|a, b| (a.0.position, &a.0.id).cmp(&(b.0.position, &b.0.id)));
    let count = visible.len() as i64;
    let rows = visible
        .into_iter()
        .filter(|(c, _)| match &after {
            Some((pos, id)) => (c.position, &c.id) > (*pos, id),
            None => true,
        })
        .take(usize::try_from(page.fetch_limit()).unwrap_or(usize::MAX))
        .map(|(c, role)| {
            (
                views::collection(&state, c, role),
                (c.position, c.id.clone()),
            )
        })
        .collect();
    Ok(Json(page.finish(&scope, rows, count)?))
}

/// `getCollectionById`.
pub async fn get_collection(
    State(state): State<AppState>,
    Extension(ctx): Extension<CollectionCtx>,
) -> Json<views::Collection> {
    Json(views::collection(&state, &ctx.collection, ctx.role))
}

/// Body of `updateCollectionById`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateCollection {
    title: Option<String>,
    description: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    default_level: Option<Option<LevelIn>>,
}

/// `updateCollectionById` (collection admins).
pub async fn update_collection(
    State(state): State<AppState>,
    Extension(ctx): Extension<CollectionCtx>,
    JsonBody(body): JsonBody<UpdateCollection>,
) -> ApiResult<Json<views::Collection>> {
    let patch = CollectionPatch {
        title: body.title,
        description: body.description,
        default_level: body.default_level.map(level_to_db),
    };
    let c = collections::update(&state, &ctx.collection, patch).await?;
    Ok(Json(views::collection(&state, &c, ctx.role)))
}

/// `deleteCollectionById` (collection admins): its spaces and sub-collections move up to
/// its parent, so that no content is lost; 204 also when absent.
pub async fn delete_collection(
    State(state): State<AppState>,
    ctx: Option<Extension<CollectionCtx>>,
) -> ApiResult<StatusCode> {
    let Some(Extension(ctx)) = ctx else {
        return Ok(StatusCode::NO_CONTENT);
    };
    collections::delete(&state, &ctx.collection).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `listSpacesInCollectionById`: the live spaces directly in the collection that the caller
/// can see.
pub async fn list_collection_spaces(
    State(state): State<AppState>,
    Extension(ctx): Extension<CollectionCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<views::Space>>> {
    let spaces = store::spaces::list_live_with_comments(
        &state.db,
        &ctx.collection.org_id,
        Some(&ctx.collection.id),
    )
    .await?;
    let scope = format!("collection-spaces:{}", ctx.collection.id);
    Ok(Json(visible_page(
        &state,
        &page,
        &scope,
        &ctx.grants,
        spaces,
    )?))
}

/// `moveCollection`: under another collection (or the root) and/or among its siblings;
/// never under itself or its own descendants.
pub async fn move_collection(
    State(state): State<AppState>,
    Extension(ctx): Extension<CollectionCtx>,
    JsonBody(body): JsonBody<MoveBody>,
) -> ApiResult<Json<views::Collection>> {
    collections::move_collection(&state, &ctx, &body).await?;
    let c = store::collections::get(&state.db, &ctx.collection.id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("collection vanished")))?;
    Ok(Json(views::collection(&state, &c, ctx.role)))
}

/// `transferCollection`: the collection, its sub-collections and their spaces move to
/// another organization (caller administers both sides). Grants do not carry over.
pub async fn transfer_collection(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<CollectionCtx>,
    JsonBody(body): JsonBody<TransferBody>,
) -> ApiResult<Json<views::Collection>> {
    let (target, grants) = transfer_target(&state, &caller, &body).await?;
    if target.org.id != ctx.collection.org_id && !ctx.org.is_admin() {
        // Content belongs to its organization: only its admins may give it away.
        return Err(ApiError::forbidden(
            "Only admins of the collection's organization can transfer it to another organization.",
        ));
    }
    if target.org.id == ctx.collection.org_id && body.parent == ctx.collection.parent_id {
        return Err(ApiError::conflict(
            "The transfer would not change anything: the collection is already there.",
        ));
    }
    if target.org.id == ctx.collection.org_id {
        if let Some(p) = &body.parent {
            if ctx.grants.is_within(p, &ctx.collection.id) {
                return Err(ApiError::bad_request(
                    "`parent`: a collection cannot move under itself or its descendants.",
                ));
            }
        }
    }
    transfer(
        &state,
        Transferred::Collection(&ctx.collection),
        &target.org.id,
        body.parent.as_deref(),
    )
    .await?;
    let c = store::collections::get(&state.db, &ctx.collection.id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("collection vanished")))?;
    let grants = Grants::load(&state, &target.org.id, &caller.user.id, target.role)
        .await
        .unwrap_or(grants);
    let role = grants.collection_role(&c).unwrap_or(Role::Admin);
    Ok(Json(views::collection(&state, &c, role)))
}

//! Spaces: `ORG/spaces`, `SPACE`, and the space lifecycle (delete, restore, duplicate,
//! move, transfer).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Extension;

use crate::http::json::{Json, JsonBytes};
use serde::Deserialize;
use serde_json::Value;

use crate::api::views;
use crate::api::views::visible_page;
use crate::domain::access::grants::Grants;
use crate::domain::access::{self, require_role, OrgCtx, Role, SpaceCtx};
use crate::domain::auth::Caller;
use crate::domain::placement::{
    transfer, transfer_target, LevelIn, MoveBody, TransferBody, Transferred,
};
use crate::domain::spaces;
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{nullable, JsonBody, OptionalJsonBody, QueryParams};
use crate::http::pagination::{List, PageRequest};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::spaces::SpaceRow;
use crate::values::{EditMode, Visibility};

/// Body of `createSpace`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CreateSpace {
    title: Option<String>,
    emoji: Option<String>,
    parent: Option<String>,
    language: Option<String>,
    edit_mode: Option<EditMode>,
    visibility: Option<Visibility>,
    template: Option<Value>,
    computed_source: Option<Value>,
}

/// `createSpace`: 201 with the new, empty space.
pub async fn create_space(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    OptionalJsonBody(body): OptionalJsonBody<CreateSpace>,
) -> ApiResult<Response> {
    if body.template.is_some() || body.computed_source.is_some() {
        return Err(ApiError::bad_request(
            "Creating a space from `template` or `computedSource` is not supported; create an empty space.",
        ));
    }
    let new = spaces::NewSpace {
        title: body.title.unwrap_or_default(),
        emoji: body.emoji,
        parent: body.parent,
        language: body.language,
        edit_mode: body.edit_mode,
        visibility: body.visibility,
    };
    let (space, grants) = spaces::create_in(&state, &org, &caller, new).await?;
    let role = grants.space_role(&space).unwrap_or(Role::Admin);
    Ok(views::created(
        &state.url(&format!("/v1/spaces/{}", space.id)),
        views::space(&state, &space, 0, role),
    ))
}

/// `listSpacesInOrganizationById`: the live spaces the caller can see, in list order.
pub async fn list_spaces(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<views::Space>>> {
    let grants = Grants::load(&state, &org.org.id, &caller.user.id, org.role).await?;
    let spaces = store::spaces::list_live_with_comments(&state.db, &org.org.id, None).await?;
    let scope = format!("spaces:{}", org.org.id);
    Ok(Json(visible_page(&state, &page, &scope, &grants, spaces)?))
}

/// Query of `getSpaceById`.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct GetSpaceQuery {
    share_key: Option<String>,
}

/// `getSpaceById`: also answers for a deleted space (with `deletedAt`), so it can be found
/// and restored.
pub async fn get_space(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    QueryParams(query): QueryParams<GetSpaceQuery>,
) -> ApiResult<Response> {
    if let Some(key) = query.share_key.as_deref().filter(|k| !k.is_empty()) {
        let published = crate::domain::sites::shared_space_url(&state, &ctx.space.id, key).await?;
        let space = views::space_counted(&state, &ctx.space, ctx.role)
            .await?
            .with_published(published);
        return Ok(Json(space).into_response());
    }
    // Rendered once per row, role and count of open comments (read apart from the row).
    let comments = access::space_comments(&state, &ctx.space.id).await?;
    let shown = format!("{}:{comments}", ctx.role.as_str());
    let key = (SPACE_VIEW, ctx.space.id.as_str(), shown.as_str());
    let body = access::rendered(&state, key, &ctx.space, || {
        serde_json::to_vec(&views::space(&state, &ctx.space, comments, ctx.role))
            .map(Into::into)
            .map_err(ApiError::internal)
    })?;
    Ok(JsonBytes(body).into_response())
}

/// What `getSpaceById` renders, as the access cache names it.
const SPACE_VIEW: &str = "getSpaceById";

/// Body of `updateSpaceById`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateSpace {
    title: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    emoji: Option<Option<String>>,
    edit_mode: Option<EditMode>,
    #[serde(default, deserialize_with = "nullable")]
    default_level: Option<Option<LevelIn>>,
    language: Option<String>,
    visibility: Option<Visibility>,
}

/// `updateSpaceById`: title, emoji and language need `edit`; `editMode`, `defaultLevel`
/// and `visibility` need `admin`.
pub async fn update_space(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    JsonBody(body): JsonBody<UpdateSpace>,
) -> ApiResult<Json<views::Space>> {
    let change = spaces::Settings {
        title: body.title,
        emoji: body.emoji,
        edit_mode: body.edit_mode,
        default_level: body.default_level,
        language: body.language,
        visibility: body.visibility,
    };
    let space = spaces::update(&state, &ctx, change).await?;
    let role = ctx.grants.space_role(&space).unwrap_or(ctx.role);
    Ok(Json(views::space_counted(&state, &space, role).await?))
}

/// `deleteSpaceById`: soft delete, restorable for 7 days, then purged by a durable job;
/// 204 also when the space does not exist (or is not visible to the caller).
pub async fn delete_space(
    State(state): State<AppState>,
    ctx: Option<Extension<SpaceCtx>>,
) -> ApiResult<StatusCode> {
    let Some(Extension(ctx)) = ctx else {
        return Ok(StatusCode::NO_CONTENT);
    };
    spaces::delete(&state, &ctx).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `restoreSpace`: brings back a space deleted within the retention (7 days unless set).
pub async fn restore_space(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
) -> ApiResult<Json<views::Space>> {
    let space = spaces::restore(&state, &ctx).await?;
    Ok(Json(views::space_counted(&state, &space, ctx.role).await?))
}

/// `duplicateSpace`: 201 with a new space holding the same metadata and a copy of the
/// current content (content is content-addressed, so the copy shares its objects).
pub async fn duplicate_space(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
) -> ApiResult<Response> {
    ctx.require_live()?;
    // The copy lands beside the original: the caller must be able to create there.
    let where_role = match &ctx.space.parent_id {
        None => ctx.org.role,
        Some(p) => ctx
            .grants
            .collections()
            .get(p)
            .and_then(|c| ctx.grants.collection_role(c)),
    };
    require_role(where_role, Role::Create, "duplicate this space")?;
    let now = state.now();
    let mut tx = state.db.begin().await?;
    let root = store::revisions::root_of(&mut tx, &ctx.space.id, &ctx.space.revision_id)
        .await?
        .unwrap_or_default();
    let mut title = ctx.space.title.clone();
    if title.chars().count() > 43 {
        title = title.chars().take(43).collect();
    }
    title.push_str(" (copy)");
    let space = SpaceRow {
        id: new_id(),
        title,
        revision_id: new_id(),
        change_requests: 0,
        change_requests_open: 0,
        change_requests_draft: 0,
        position: store::spaces::next_position(&mut tx, &ctx.space.org_id).await?,
        created_at: now,
        updated_at: now,
        deleted_at: None,
        ..(*ctx.space).clone()
    };
    crate::domain::spaces::insert_with_revision(&mut tx, &space, &root, Some(&caller.user.id), now)
        .await?;
    store::objects::copy_space(&mut tx, &ctx.space.id, &space.id).await?;
    crate::domain::search::copy(
        &state,
        &mut tx,
        &ctx.space.id,
        &ctx.space.revision_id,
        &space.id,
        &space.revision_id,
    )
    .await?;
    tx.commit().await?;
    let role = ctx.grants.space_role(&space).unwrap_or(ctx.role);
    Ok(views::created(
        &state.url(&format!("/v1/spaces/{}", space.id)),
        views::space(&state, &space, 0, role),
    ))
}

/// `moveSpace`: to another collection (or the root) and/or among its siblings.
pub async fn move_space(
    State(state): State<AppState>,
    Extension(ctx): Extension<SpaceCtx>,
    JsonBody(body): JsonBody<MoveBody>,
) -> ApiResult<Json<views::Space>> {
    let space = spaces::move_space(&state, &ctx, &body).await?;
    let role = ctx.grants.space_role(&space).unwrap_or(ctx.role);
    Ok(Json(views::space_counted(&state, &space, role).await?))
}

/// `transferSpace`: to another organization, collection or both; the caller administers
/// the space and the target organization. Grants do not carry over.
pub async fn transfer_space(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(ctx): Extension<SpaceCtx>,
    JsonBody(body): JsonBody<TransferBody>,
) -> ApiResult<Json<views::Space>> {
    ctx.require_live()?;
    let (target, grants) = transfer_target(&state, &caller, &body).await?;
    if target.org.id != ctx.space.org_id && !ctx.org.is_admin() {
        // Content belongs to its organization: only its admins may give it away.
        return Err(ApiError::forbidden(
            "Only admins of the space's organization can transfer it to another organization.",
        ));
    }
    if target.org.id == ctx.space.org_id && body.parent == ctx.space.parent_id {
        return Err(ApiError::conflict(
            "The transfer would not change anything: the space is already there.",
        ));
    }
    transfer(
        &state,
        Transferred::Space(&ctx.space),
        &target.org.id,
        body.parent.as_deref(),
    )
    .await?;
    let space = store::spaces::get(&state.db, &ctx.space.id)
        .await?
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("space vanished")))?;
    let role = grants.space_role(&space).unwrap_or(Role::Admin);
    Ok(Json(views::space_counted(&state, &space, role).await?))
}

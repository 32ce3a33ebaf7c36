//! What a site holds: site spaces (`SITE/site-spaces`), sections (`SITE/sections`) and
//! section groups (`SITE/section-groups`), with their moves.
//!
//! Every write locks the site, reads its structure in the same transaction, changes it in
//! memory under the rules of `domain::sites`, and saves what changed.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;

use crate::http::json::Json;
use serde::Deserialize;

use super::handlers::{
    active_share_key, grants_of, load, move_and_describe, place_of, spaces_of, Loaded,
    ShareKeyQuery,
};
use super::types::{self, SiteSection, SiteSectionGroup, SiteSpace};
use crate::api::views;
use crate::domain::access::{OrgCtx, SiteCtx};
use crate::domain::auth::Caller;
use crate::domain::site_structure::{self, SectionChange, SiteSpaceChange};
use crate::domain::sites::{self as rules, Item, TypedPointer};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{nullable, JsonBody, OptionalJsonBody, QueryParams};
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;

fn no_such(kind: &str, id: &str) -> ApiError {
    ApiError::not_found(format!("No {kind} `{id}` in this site."))
}

/// Query of `listSiteSpaces`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSiteSpacesQuery {
    share_key: Option<String>,
    default: Option<bool>,
}

/// `listSiteSpaces`: every site space in structure order; `default` keeps only the default
/// one (`true`) or only the others (`false`).
pub async fn list_site_spaces(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    QueryParams(q): QueryParams<ListSiteSpacesQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<SiteSpace>>> {
    let key = active_share_key(&state, &ctx.site, q.share_key.as_deref()).await?;
    let grants = grants_of(&state, &org, &caller).await?;
    let loaded = load(&state, ctx.site).await?;
    let s = &loaded.structure;
    let landing = rules::landing_site_space(&loaded.site, s).map(|x| x.id.clone());
    let mut ordered: Vec<_> = if s.sections.is_empty() {
        rules::site_spaces_in(s, None)
    } else {
        rules::ordered_sections(s)
            .into_iter()
            .flat_map(|x| rules::site_spaces_in(s, Some(&x.id)))
            .collect()
    };
    if let Some(want) = q.default {
        ordered.retain(|x| (landing.as_deref() == Some(x.id.as_str())) == want);
    }
    let d = loaded.describe(&state, Some(&grants), key.as_deref());
    let scope = format!("site-spaces:{}:{:?}", loaded.site.id, q.default);
    paged(
        &page,
        &scope,
        ordered.iter().filter_map(|x| d.site_space(x)).collect(),
    )
}

/// Pages through a list computed whole (a site holds at most a few hundred items): the
/// cursor is the index of the next item.
fn paged<T>(page: &PageRequest, scope: &str, items: Vec<T>) -> ApiResult<Json<List<T>>> {
    let start = page.after::<usize>(scope)?.unwrap_or(0);
    let count = i64::try_from(items.len()).unwrap_or(i64::MAX);
    let fetch = usize::try_from(page.fetch_limit()).unwrap_or(usize::MAX);
    let rows = items
        .into_iter()
        .enumerate()
        .skip(start)
        .take(fetch)
        .map(|(i, item)| (item, i + 1))
        .collect();
    Ok(Json(page.finish(scope, rows, count)?))
}

/// Body of `addSpaceToSite`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AddSpace {
    space_id: String,
    section_id: Option<String>,
}

/// `addSpaceToSite`: 201; the space goes to the section named, else the default section,
/// else the root of a site without sections.
pub async fn add_space_to_site(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    JsonBody(body): JsonBody<AddSpace>,
) -> ApiResult<Response> {
    let section = body.section_id.as_deref();
    let (id, site, after) =
        rules::add_space(&state, &org, &ctx.site.id, &body.space_id, section).await?;
    let loaded = spaces_of(&state, site, after).await?;
    let grants = grants_of(&state, &org, &caller).await?;
    let d = loaded.describe(&state, Some(&grants), None);
    let ss = loaded
        .structure
        .site_spaces
        .iter()
        .find(|x| x.id == id)
        .and_then(|x| d.site_space(x))
        .ok_or_else(|| no_such("site space", &id))?;
    Ok(views::created(
        &state.url(&format!(
            "/v1/orgs/{}/sites/{}/site-spaces/{id}",
            org.org.id, loaded.site.id
        )),
        ss,
    ))
}

/// Body of `updateSiteSpaceById`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateSiteSpace {
    path: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    condition: Option<Option<String>>,
    space_id: Option<String>,
}

/// `updateSiteSpaceById`: path (unique among its siblings), condition, space.
pub async fn update_site_space(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    Path((_, _, id)): Path<(String, String, String)>,
    JsonBody(body): JsonBody<UpdateSiteSpace>,
) -> ApiResult<Json<SiteSpace>> {
    let change = SiteSpaceChange {
        path: body.path,
        condition: body.condition,
        space_id: body.space_id,
    };
    let (site, after) =
        site_structure::update_site_space(&state, &org, &ctx.site.id, &id, &change).await?;
    let loaded = spaces_of(&state, site, after).await?;
    describe_site_space(&state, &caller, &org, &loaded, &id).await
}

async fn describe_site_space(
    state: &AppState,
    caller: &Caller,
    org: &OrgCtx,
    loaded: &Loaded,
    id: &str,
) -> ApiResult<Json<SiteSpace>> {
    let grants = grants_of(state, org, caller).await?;
    let d = loaded.describe(state, Some(&grants), None);
    loaded
        .structure
        .site_spaces
        .iter()
        .find(|x| x.id == id)
        .and_then(|x| d.site_space(x))
        .map(Json)
        .ok_or_else(|| no_such("site space", id))
}

/// `deleteSiteSpaceById`: 204, also when it did not exist.
pub async fn delete_site_space(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    ctx: Option<Extension<SiteCtx>>,
    Path((_, _, id)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    if let Some(Extension(ctx)) = ctx {
        site_structure::remove_site_space(&state, &org, &ctx.site.id, &id).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// `SiteSpacePointer`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SiteSpacePointer {
    #[serde(rename = "type")]
    kind: String,
    site_space: String,
}

impl SiteSpacePointer {
    fn item(&self, field: &str) -> ApiResult<Item> {
        if self.kind != "site-space" {
            return Err(ApiError::bad_request(format!(
                "`{field}.type` must be `site-space`."
            )));
        }
        Ok(Item::SiteSpace(self.site_space.clone()))
    }
}

/// A `position` of the deprecated move operations, with pointers of type `P`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MovePosition<P> {
    before: Option<P>,
    after: Option<P>,
}

/// Body of the deprecated move operations.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoveBody<P> {
    position: Option<MovePosition<P>>,
}

fn place<P>(
    body: Option<MoveBody<P>>,
    item: impl Fn(&P, &str) -> ApiResult<Item>,
) -> ApiResult<rules::Place> {
    let Some(position) = body.and_then(|b| b.position) else {
        return Ok(rules::Place::End);
    };
    place_of(
        position
            .before
            .as_ref()
            .map(|p| item(p, "position.before"))
            .transpose()?,
        position
            .after
            .as_ref()
            .map(|p| item(p, "position.after"))
            .transpose()?,
    )
}

/// `moveSiteSpace` (deprecated in favour of `sortSiteStructure`).
pub async fn move_site_space(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    Path((_, _, id)): Path<(String, String, String)>,
    OptionalJsonBody(body): OptionalJsonBody<Option<MoveBody<SiteSpacePointer>>>,
) -> ApiResult<Json<types::StructureItem>> {
    let place = place(body, SiteSpacePointer::item)?;
    Ok(Json(
        move_and_describe(
            &state,
            &caller,
            &org,
            &ctx.site.id,
            Item::SiteSpace(id),
            place,
        )
        .await?,
    ))
}

/// `listSiteSections`: every section, in the order visitors see them.
pub async fn list_site_sections(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    QueryParams(q): QueryParams<ShareKeyQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<SiteSection>>> {
    let key = active_share_key(&state, &ctx.site, q.share_key.as_deref()).await?;
    let grants = grants_of(&state, &org, &caller).await?;
    let loaded = load(&state, ctx.site).await?;
    let d = loaded.describe(&state, Some(&grants), key.as_deref());
    let items = rules::ordered_sections(&loaded.structure)
        .into_iter()
        .map(|x| d.section(x))
        .collect();
    paged(&page, &format!("site-sections:{}", loaded.site.id), items)
}

/// Body of `addSectionToSite`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AddSection {
    space_id: String,
    #[serde(default, deserialize_with = "nullable")]
    title: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    icon: Option<Option<String>>,
}

/// `addSectionToSite`: 201, a new section holding the space. On a site without sections,
/// the site spaces it already had first move into a section of their own (the default),
/// so that every site space of a site with sections is in one.
pub async fn add_section_to_site(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    JsonBody(body): JsonBody<AddSection>,
) -> ApiResult<Response> {
    let (id, (site, after)) = site_structure::add_section(
        &state,
        &org,
        &ctx.site.id,
        &body.space_id,
        body.title.flatten(),
        body.icon.flatten(),
    )
    .await?;
    let loaded = spaces_of(&state, site, after).await?;
    let grants = grants_of(&state, &org, &caller).await?;
    let d = loaded.describe(&state, Some(&grants), None);
    let section = loaded
        .structure
        .sections
        .iter()
        .find(|x| x.id == id)
        .map(|x| d.section(x))
        .ok_or_else(|| no_such("section", &id))?;
    Ok(views::created(
        &state.url(&format!(
            "/v1/orgs/{}/sites/{}/sections/{id}",
            org.org.id, loaded.site.id
        )),
        section,
    ))
}

/// Body of `updateSiteSectionById`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateSection {
    title: Option<String>,
    path: Option<String>,
    default_site_space: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    condition: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    icon: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    description: Option<Option<String>>,
}

/// `updateSiteSectionById`.
pub async fn update_site_section(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    Path((_, _, id)): Path<(String, String, String)>,
    JsonBody(body): JsonBody<UpdateSection>,
) -> ApiResult<Json<SiteSection>> {
    let change = SectionChange {
        title: body.title,
        path: body.path,
        default_site_space: body.default_site_space,
        condition: body.condition,
        icon: body.icon,
        description: body.description,
    };
    let (site, after) =
        site_structure::update_section(&state, &org, &ctx.site.id, &id, &change).await?;
    let loaded = spaces_of(&state, site, after).await?;
    let grants = grants_of(&state, &org, &caller).await?;
    let d = loaded.describe(&state, Some(&grants), None);
    loaded
        .structure
        .sections
        .iter()
        .find(|x| x.id == id)
        .map(|x| Json(d.section(x)))
        .ok_or_else(|| no_such("section", &id))
}

/// `deleteSiteSectionById`: 204, also when absent; the section's site spaces go with it.
pub async fn delete_site_section(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    ctx: Option<Extension<SiteCtx>>,
    Path((_, _, id)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    if let Some(Extension(ctx)) = ctx {
        site_structure::delete_section(&state, &org, &ctx.site.id, &id).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// `SiteSectionPointer`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SectionPointer {
    #[serde(rename = "type")]
    kind: String,
    site_section: String,
}

impl SectionPointer {
    fn item(&self, field: &str) -> ApiResult<Item> {
        if self.kind != "site-section" {
            return Err(ApiError::bad_request(format!(
                "`{field}.type` must be `site-section`."
            )));
        }
        Ok(Item::Section(self.site_section.clone()))
    }
}

/// `moveSiteSection`.
pub async fn move_site_section(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    Path((_, _, id)): Path<(String, String, String)>,
    OptionalJsonBody(body): OptionalJsonBody<Option<MoveBody<SectionPointer>>>,
) -> ApiResult<Json<types::StructureItem>> {
    let place = place(body, SectionPointer::item)?;
    Ok(Json(
        move_and_describe(
            &state,
            &caller,
            &org,
            &ctx.site.id,
            Item::Section(id),
            place,
        )
        .await?,
    ))
}

/// `listSiteSectionGroups`.
pub async fn list_site_section_groups(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    page: PageRequest,
) -> ApiResult<Json<List<SiteSectionGroup>>> {
    let grants = grants_of(&state, &org, &caller).await?;
    let loaded = load(&state, ctx.site).await?;
    let d = loaded.describe(&state, Some(&grants), None);
    let items = rules::top_level(&loaded.structure)
        .into_iter()
        .filter_map(|t| match t {
            rules::Top::Group(g) => Some(d.group(g)),
            rules::Top::Section(_) => None,
        })
        .collect();
    paged(&page, &format!("site-groups:{}", loaded.site.id), items)
}

/// Body of `addSectionGroupToSite`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddGroup {
    title: String,
    #[serde(default, deserialize_with = "nullable")]
    icon: Option<Option<String>>,
    #[serde(default)]
    sections: Vec<String>,
}

/// `addSectionGroupToSite`: 201, a group at the end of the site holding the sections named.
pub async fn add_section_group_to_site(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    JsonBody(body): JsonBody<AddGroup>,
) -> ApiResult<Response> {
    let (id, (site, after)) = site_structure::add_group(
        &state,
        &org,
        &ctx.site.id,
        &body.title,
        body.icon.flatten(),
        &body.sections,
    )
    .await?;
    let loaded = spaces_of(&state, site, after).await?;
    let group = describe_group(&state, &caller, &org, &loaded, &id).await?;
    Ok(views::created(
        &state.url(&format!(
            "/v1/orgs/{}/sites/{}/section-groups/{id}",
            org.org.id, loaded.site.id
        )),
        group.0,
    ))
}

async fn describe_group(
    state: &AppState,
    caller: &Caller,
    org: &OrgCtx,
    loaded: &Loaded,
    id: &str,
) -> ApiResult<Json<SiteSectionGroup>> {
    let grants = grants_of(state, org, caller).await?;
    let d = loaded.describe(state, Some(&grants), None);
    loaded
        .structure
        .groups
        .iter()
        .find(|g| g.id == id)
        .map(|g| Json(d.group(g)))
        .ok_or_else(|| no_such("section group", id))
}

/// Body of `updateSiteSectionGroupById`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpdateGroup {
    title: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    icon: Option<Option<String>>,
}

/// `updateSiteSectionGroupById`.
pub async fn update_site_section_group(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    Path((_, _, id)): Path<(String, String, String)>,
    JsonBody(body): JsonBody<UpdateGroup>,
) -> ApiResult<Json<SiteSectionGroup>> {
    let (site, after) = site_structure::update_group(
        &state,
        &org,
        &ctx.site.id,
        &id,
        body.title.as_deref(),
        body.icon,
    )
    .await?;
    let loaded = spaces_of(&state, site, after).await?;
    describe_group(&state, &caller, &org, &loaded, &id).await
}

/// `deleteSiteSectionGroupById`: 204, also when absent; its sections stay, ungrouped, at
/// the group's place.
pub async fn delete_site_section_group(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    ctx: Option<Extension<SiteCtx>>,
    Path((_, _, id)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    if let Some(Extension(ctx)) = ctx {
        site_structure::delete_group(&state, &org, &ctx.site.id, &id).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Body of `addSectionToGroup`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AddToGroup {
    section_id: String,
}

/// `addSectionToGroup`: 201 with the group; the section joins it at its end.
pub async fn add_section_to_group(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    Path((_, _, id)): Path<(String, String, String)>,
    JsonBody(body): JsonBody<AddToGroup>,
) -> ApiResult<Response> {
    let (site, after) =
        site_structure::add_to_group(&state, &org, &ctx.site.id, &id, &body.section_id).await?;
    let loaded = spaces_of(&state, site, after).await?;
    let group = describe_group(&state, &caller, &org, &loaded, &id).await?;
    Ok(views::created(
        &state.url(&format!(
            "/v1/orgs/{}/sites/{}/section-groups/{id}",
            org.org.id, loaded.site.id
        )),
        group.0,
    ))
}

/// `removeSectionFromGroup`: 204; the section stays in the site, after the group.
pub async fn remove_section_from_group(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    ctx: Option<Extension<SiteCtx>>,
    Path((_, _, group, section)): Path<(String, String, String, String)>,
) -> ApiResult<StatusCode> {
    if let Some(Extension(ctx)) = ctx {
        site_structure::remove_from_group(&state, &org, &ctx.site.id, &group, &section).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// `moveSiteSectionGroup`: beside a section or group of the top level.
pub async fn move_site_section_group(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    Path((_, _, id)): Path<(String, String, String)>,
    OptionalJsonBody(body): OptionalJsonBody<Option<MoveBody<TypedPointer>>>,
) -> ApiResult<Json<types::StructureItem>> {
    let place = place(body, |p, field| p.item(field))?;
    Ok(Json(
        move_and_describe(&state, &caller, &org, &ctx.site.id, Item::Group(id), place).await?,
    ))
}

//! Sites: `ORG/sites`, `SITE`, publishing, the structure and its sort, customization,
//! the adaptive schema and the published site.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::Extension;

use crate::http::json::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::types::{
    self, AdaptiveSchema, Customizations, Describe, PublishedContentSite, TemplateCondition,
};
use crate::api::views;
use crate::clock::iso;
use crate::domain::access::grants::Grants;
use crate::domain::access::{OrgCtx, SiteCtx};
use crate::domain::auth::Caller;
use crate::domain::published;
use crate::domain::site_structure;
use crate::domain::sites::{
    self as rules, customization_of, patch_site, NewSiteSpaces, TypedPointer, Urls,
};
use crate::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, OptionalJsonBody, QueryParams};
use crate::http::pagination::{List, PageRequest};
use crate::state::AppState;
use crate::store;
use crate::store::sites::{SiteFilter, SitePatch, SiteRow, Structure};
use crate::store::spaces::SpaceRow;
use crate::validate::nullable;
use crate::values::{AgentsContext, SiteType, SiteVisibility};

/// A site with its structure and the spaces it points to.
pub struct Loaded {
    pub site: SiteRow,
    pub structure: Structure,
    pub spaces: HashMap<String, SpaceRow>,
    /// Their counts of open comments.
    pub comments: HashMap<String, i64>,
}

/// Loads what describing `site` needs.
pub async fn load(state: &AppState, site: SiteRow) -> ApiResult<Loaded> {
    let structure = store::sites::structure(&state.db, &site.id).await?;
    spaces_of(state, site, structure).await
}

/// Loads the spaces of a structure already read.
pub async fn spaces_of(state: &AppState, site: SiteRow, structure: Structure) -> ApiResult<Loaded> {
    let ids: Vec<&str> = structure
        .site_spaces
        .iter()
        .map(|s| s.space_id.as_str())
        .collect();
    let (mut spaces, mut comments) = (HashMap::new(), HashMap::new());
    for (s, open) in store::spaces::get_many_with_comments(&state.db, &ids).await? {
        comments.insert(s.id.clone(), open);
        spaces.insert(s.id.clone(), s);
    }
    Ok(Loaded {
        site,
        structure,
        spaces,
        comments,
    })
}

impl Loaded {
    /// Describes the site for `grants` (the caller's), under `share_key` when it is active.
    pub fn describe<'a>(
        &'a self,
        state: &'a AppState,
        grants: Option<&'a Grants>,
        share_key: Option<&str>,
    ) -> Describe<'a> {
        Describe {
            state,
            site: &self.site,
            structure: &self.structure,
            spaces: &self.spaces,
            comments: &self.comments,
            grants,
            urls: Urls::new(state, &self.site, share_key),
        }
    }
}

/// The share key of a query when it names an active share link of the site: URLs are then
/// resolved under it. An unknown or inactive key resolves nothing.
pub async fn active_share_key(
    state: &AppState,
    site: &SiteRow,
    key: Option<&str>,
) -> ApiResult<Option<String>> {
    match key.filter(|k| !k.is_empty()) {
        Some(key) if site.visibility == SiteVisibility::ShareLink => {
            Ok(store::sites::active_share_link(&state.db, &site.id, key)
                .await?
                .map(|l| l.share_key))
        }
        _ => Ok(None),
    }
}

/// The caller's grants in the organization.
pub async fn grants_of(
    state: &AppState,
    org: &OrgCtx,
    caller: &Caller,
) -> ApiResult<std::sync::Arc<Grants>> {
    Grants::load(state, &org.org.id, &caller.user.id, org.role).await
}

/// Query of `listSites`.
#[derive(Deserialize)]
pub struct ListSitesQuery {
    space: Option<String>,
    title: Option<String>,
    published: Option<bool>,
    #[serde(default, rename = "type")]
    types: Vec<SiteType>,
}

/// `listSites`: the organization's sites, oldest first.
pub async fn list_sites(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    QueryParams(q): QueryParams<ListSitesQuery>,
    page: PageRequest,
) -> ApiResult<Json<List<types::Site>>> {
    let filter = SiteFilter {
        space: q.space,
        title: q.title,
        published: q.published,
        types: q.types,
    };
    let scope = format!(
        "sites:{}:{:?}:{:?}:{:?}:{:?}",
        org.org.id, filter.space, filter.title, filter.published, filter.types
    );
    let after = page.after::<(i64, String)>(&scope)?;
    let (rows, count) =
        store::sites::list(&state.db, &org.org.id, &filter, after, page.fetch_limit()).await?;
    let rows = rows
        .into_iter()
        .map(|s| {
            let key = (s.created_at, s.id.clone());
            (types::site(&state, &s), key)
        })
        .collect();
    Ok(Json(page.finish(&scope, rows, count)?))
}

/// Body of `createSite`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct CreateSite {
    #[serde(rename = "type")]
    site_type: Option<SiteType>,
    title: Option<String>,
    visibility: Option<SiteVisibility>,
    spaces: Option<NewSiteSpaces>,
}

/// `createSite`: 201; organization admins only.
pub async fn create_site(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    OptionalJsonBody(body): OptionalJsonBody<CreateSite>,
) -> ApiResult<Response> {
    let new = rules::NewSite {
        site_type: body.site_type,
        title: body.title,
        visibility: body.visibility,
        spaces: body.spaces,
    };
    let row = rules::create(&state, &org, &caller, new).await?;
    Ok(views::created(
        &state.url(&format!("/v1/orgs/{}/sites/{}", org.org.id, row.id)),
        types::site(&state, &row),
    ))
}

/// `getSiteById`.
pub async fn get_site(
    State(state): State<AppState>,
    Extension(ctx): Extension<SiteCtx>,
) -> ApiResult<Json<types::Site>> {
    Ok(Json(types::site(&state, &ctx.site)))
}

/// Body of `updateSiteById`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateSite {
    title: Option<String>,
    visibility: Option<SiteVisibility>,
    basename: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    hostname: Option<Option<String>>,
    adaptive_content: Option<AdaptiveContentIn>,
    agents_context: Option<AgentsContext>,
    default_site_space: Option<String>,
    default_site_section: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    proxy: Option<Option<String>>,
}

/// `SiteAdaptiveContent` as sent.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveContentIn {
    enabled: bool,
}

/// `SiteHostname`: lower-case labels, at least three of them, at most 512 characters.
fn check_hostname(host: &str) -> ApiResult<()> {
    let labels: Vec<&str> = host.split('.').collect();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    if host.len() <= 512 && labels.len() >= 3 && labels.iter().all(|l| label_ok(l)) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "`hostname` must be a lower-case host name with at least three labels, such as `docs.example.com`: `{host}`."
        )))
    }
}

/// `SiteProxyOrigin`: a host name followed by one or more path segments.
fn check_proxy(proxy: &str) -> ApiResult<()> {
    let word = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    let ok = proxy.len() <= 512
        && proxy.split_once('/').is_some_and(|(host, path)| {
            let labels: Vec<&str> = host.split('.').collect();
            labels.len() >= 2
                && labels.iter().all(|l| word(l))
                && labels.last().is_some_and(|tld| {
                    tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic())
                })
                && path.split('/').all(word)
        });
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "`proxy` must be a host name followed by one or more path segments (at most 512 characters), such as `example.com/docs`: `{proxy}`."
        )))
    }
}

/// `updateSiteById`: changes only what the body names.
pub async fn update_site(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    JsonBody(body): JsonBody<UpdateSite>,
) -> ApiResult<Json<types::Site>> {
    if let Some(title) = &body.title {
        crate::validate::length("title", title, 2, 128)?;
    }
    if let Some(basename) = &body.basename {
        crate::validate::length("basename", basename, 1, 100)?;
        rules::check_path("basename", basename)?;
    }
    if let Some(Some(host)) = &body.hostname {
        check_hostname(host)?;
        if *host == *state.public_host
            || state
                .config
                .sites_domain
                .as_deref()
                .is_some_and(|d| host == d || host.ends_with(&format!(".{d}")))
        {
            return Err(ApiError::bad_request(format!(
                "`hostname`: `{host}` is Quire's own address or under its sites' domain."
            )));
        }
    }
    if let Some(Some(proxy)) = &body.proxy {
        check_proxy(proxy)?;
    }
    let patch = SitePatch {
        title: body.title,
        visibility: body.visibility,
        basename: body.basename,
        hostname: body.hostname,
        proxy: body.proxy,
        adaptive_content: body.adaptive_content.map(|a| a.enabled),
        agents_context: body.agents_context,
        default_section: body.default_site_section,
        ..SitePatch::default()
    };
    let row = rules::update(&state, &org, &ctx.site.id, patch, body.default_site_space).await?;
    Ok(Json(types::site(&state, &row)))
}

/// `deleteSiteById`: 204, also when the site did not exist.
pub async fn delete_site(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    ctx: Option<Extension<SiteCtx>>,
) -> ApiResult<StatusCode> {
    if let Some(Extension(ctx)) = ctx {
        let mut tx = state.db.begin().await?;
        tx.touches(&[
            crate::cache::Scope::Site(&ctx.site.id),
            crate::cache::Scope::Org(org.org.id.as_str()),
        ]);
        store::sites::delete(&mut tx, &org.org.id, &ctx.site.id).await?;
        tx.commit().await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

async fn set_published(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    published: bool,
) -> ApiResult<Json<types::Site>> {
    let row = rules::set_published(state, org, site_id, published).await?;
    Ok(Json(types::site(state, &row)))
}

/// `publishSite`: the site goes live for its audience.
pub async fn publish_site(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
) -> ApiResult<Json<types::Site>> {
    set_published(&state, &org, &ctx.site.id, true).await
}

/// `unpublishSite`: the site stops being served.
pub async fn unpublish_site(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
) -> ApiResult<Json<types::Site>> {
    set_published(&state, &org, &ctx.site.id, false).await
}

/// The `shareKey` query parameter.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShareKeyQuery {
    /// A share link's key.
    pub share_key: Option<String>,
}

/// `getSiteStructure`: sections and groups, or the root's site spaces.
pub async fn get_site_structure(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    QueryParams(q): QueryParams<ShareKeyQuery>,
) -> ApiResult<Json<types::SiteStructure>> {
    let key = active_share_key(&state, &ctx.site, q.share_key.as_deref()).await?;
    let grants = grants_of(&state, &org, &caller).await?;
    let loaded = load(&state, ctx.site).await?;
    Ok(Json(
        loaded
            .describe(&state, Some(&grants), key.as_deref())
            .structure(),
    ))
}

/// `getPublishedContentSite`: the published structure of a site, with its customization.
/// An admin of its organization gets it before it is published too (to preview it); anyone
/// else, published-content tokens included, 404 while it is unpublished. Read with a
/// published-content token, `customizations.siteSpaces` holds the customization of the site
/// space the token resolved (the site's with that site space's override on top), which the
/// renderer looks up there.
pub async fn get_published_content_site(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    org: Option<Extension<OrgCtx>>,
    reading: Option<Extension<published::Reading>>,
    Extension(ctx): Extension<SiteCtx>,
    QueryParams(q): QueryParams<ShareKeyQuery>,
) -> ApiResult<Json<PublishedContentSite>> {
    let admin = caller.is_some() && org.as_ref().is_some_and(|Extension(o)| o.is_admin());
    if ctx.site.published == 0 && !admin {
        return Err(ApiError::not_found(format!(
            "Site `{}` is not published.",
            ctx.site.id
        )));
    }
    let key = active_share_key(&state, &ctx.site, q.share_key.as_deref()).await?;
    let grants = match (caller, org) {
        (Some(Extension(caller)), Some(Extension(org))) => {
            Some(grants_of(&state, &org, &caller).await?)
        }
        _ => None,
    };
    let customization = customization_of(&ctx.site)?;
    // Only the token's own site space: one copy of the settings, however many the site has.
    let site_spaces = match reading {
        Some(Extension(published::Reading(scope))) => {
            let shown = crate::domain::site_settings::site_space_customization(
                &state,
                &ctx.site,
                &scope.site_space,
            )
            .await?;
            HashMap::from([(scope.site_space.clone(), shown)])
        }
        None => HashMap::new(),
    };
    let loaded = load(&state, ctx.site).await?;
    let described = loaded.describe(&state, grants.as_deref(), key.as_deref());
    Ok(Json(PublishedContentSite {
        object: "published-content-site",
        site: types::site(&state, &loaded.site),
        structure: described.structure(),
        customizations: Customizations {
            site: customization,
            site_spaces,
        },
        scripts: Vec::new(),
    }))
}

/// Body of `sortSiteStructure`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SortBody {
    item: TypedPointer,
    position: Option<SortPosition>,
}

/// `SiteStructureItemMovePosition`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SortPosition {
    before: Option<TypedPointer>,
    after: Option<TypedPointer>,
}

/// The place a `before`/`after` pair names.
pub fn place_of(
    before: Option<rules::Item>,
    after: Option<rules::Item>,
) -> ApiResult<rules::Place> {
    match (before, after) {
        (Some(b), None) => Ok(rules::Place::Before(b)),
        (None, Some(a)) => Ok(rules::Place::After(a)),
        (None, None) => Ok(rules::Place::End),
        (Some(_), Some(_)) => Err(ApiError::bad_request(
            "`position` takes `before` or `after`, not both.",
        )),
    }
}

/// Moves an item of a site's structure and answers with it.
pub async fn move_and_describe(
    state: &AppState,
    caller: &Caller,
    org: &OrgCtx,
    site_id: &str,
    item: rules::Item,
    place: rules::Place,
) -> ApiResult<types::StructureItem> {
    let (site, after) =
        crate::domain::site_structure::move_item(state, org, site_id, &item, &place).await?;
    let grants = grants_of(state, org, caller).await?;
    let loaded = spaces_of(state, site, after).await?;
    let d = loaded.describe(state, Some(&grants), None);
    let s = &loaded.structure;
    let missing = || ApiError::not_found("The item was removed meanwhile.");
    Ok(match &item {
        rules::Item::SiteSpace(id) => types::StructureItem::SiteSpace(Box::new(
            s.site_spaces
                .iter()
                .find(|x| &x.id == id)
                .and_then(|x| d.site_space(x))
                .ok_or_else(missing)?,
        )),
        rules::Item::Section(id) => types::StructureItem::Section(
            d.section(
                s.sections
                    .iter()
                    .find(|x| &x.id == id)
                    .ok_or_else(missing)?,
            ),
        ),
        rules::Item::Group(id) => types::StructureItem::Group(
            d.group(s.groups.iter().find(|x| &x.id == id).ok_or_else(missing)?),
        ),
    })
}

/// `sortSiteStructure`: moves a site space, section or group before or after another item.
pub async fn sort_site_structure(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    JsonBody(body): JsonBody<SortBody>,
) -> ApiResult<Json<types::StructureItem>> {
    let item = body.item.item("item")?;
    let position = body.position.unwrap_or_default();
    let place = place_of(
        position
            .before
            .as_ref()
            .map(|p| p.item("position.before"))
            .transpose()?,
        position
            .after
            .as_ref()
            .map(|p| p.item("position.after"))
            .transpose()?,
    )?;
    Ok(Json(
        move_and_describe(&state, &caller, &org, &ctx.site.id, item, place).await?,
    ))
}

/// `getSiteCustomizationById`.
pub async fn get_site_customization(Extension(ctx): Extension<SiteCtx>) -> ApiResult<Json<Value>> {
    Ok(Json(customization_of(&ctx.site)?))
}

/// `updateSiteCustomizationById`: replaces the customization (fields left out take the
/// defaults).
pub async fn update_site_customization(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    JsonBody(body): JsonBody<Value>,
) -> ApiResult<Json<Value>> {
    let Value::Object(fields) = body else {
        return Err(ApiError::bad_request("The body must be a JSON object."));
    };
    let row = site_structure::replace_customization(&state, &org, &ctx.site.id, fields).await?;
    Ok(Json(customization_of(&row)?))
}

/// `getSiteAdaptiveSchema`: 404 until one is set.
pub async fn get_site_adaptive_schema(
    Extension(ctx): Extension<SiteCtx>,
) -> ApiResult<Json<AdaptiveSchema>> {
    adaptive_schema_of(&ctx.site)?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("This site has no adaptive schema."))
}

fn adaptive_schema_of(site: &SiteRow) -> ApiResult<Option<AdaptiveSchema>> {
    let (Some(text), Some(at)) = (&site.adaptive_schema, site.adaptive_schema_updated_at) else {
        return Ok(None);
    };
    Ok(Some(AdaptiveSchema {
        object: "site-adaptive-schema",
        json_schema: serde_json::from_str(text).map_err(ApiError::internal)?,
        updated_at: iso(at),
    }))
}

/// Body of `updateSiteAdaptiveSchema`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AdaptiveSchemaBody {
    json_schema: Value,
}

/// `updateSiteAdaptiveSchema`: only a draft-07 JSON Schema of boolean visitor claims.
pub async fn update_site_adaptive_schema(
    State(state): State<AppState>,
    Extension(org): Extension<OrgCtx>,
    Extension(ctx): Extension<SiteCtx>,
    JsonBody(body): JsonBody<AdaptiveSchemaBody>,
) -> ApiResult<Json<AdaptiveSchema>> {
    let mut schema = body.json_schema;
    crate::domain::adaptive::check_schema(&mut schema)?;
    let text = serde_json::to_string(&schema).map_err(ApiError::internal)?;
    let patch = SitePatch {
        adaptive_schema: Some(text),
        ..SitePatch::default()
    };
    let row = patch_site(&state, &org, &ctx.site.id, &patch).await?;
    adaptive_schema_of(&row)?
        .map(Json)
        .ok_or_else(|| ApiError::internal(anyhow::anyhow!("adaptive schema not stored")))
}

/// `listSiteAdaptiveTemplateConditions`: one suggested condition per claim of the schema.
pub async fn list_site_adaptive_template_conditions(
    Extension(ctx): Extension<SiteCtx>,
) -> ApiResult<Json<Value>> {
    let items: Vec<TemplateCondition> = match adaptive_schema_of(&ctx.site)? {
        None => Vec::new(),
        Some(schema) => crate::domain::adaptive::template_conditions(&schema.json_schema)
            .into_iter()
            .map(|(description, condition)| TemplateCondition {
                description,
                condition,
            })
            .collect(),
    };
    Ok(Json(json!({ "items": items })))
}

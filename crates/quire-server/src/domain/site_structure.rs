//! Writes of what a site holds and how it looks, shared by the API's sites family and the
//! app's site screen: sections (a site space becomes a section), section groups and
//! membership in them, the default section, and the site's customization (whole, or its
//! basics: title, primary colour, default theme, font). Organization admins only.
//!
//! Each structure write runs through [`sites::edit`] (the site locked, its structure read
//! and saved in one transaction) and answers the id it made, if any, with the site and its
//! structure as stored, for the caller to describe.

use serde_json::{json, Map, Value};

use crate::domain::access::OrgCtx;
use crate::domain::sites::{self, edit, live_space, new_site_space, Item, Place};
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::sites::{GroupRow, SectionRow, SitePatch, SiteRow, Structure};

/// A site with its structure, as stored after a write.
pub type Saved = (SiteRow, Structure);

fn no_such(kind: &str, id: &str) -> ApiError {
    ApiError::not_found(format!("No {kind} `{id}` in this site."))
}

/// `Icon`: a name of at most 50 characters.
pub fn check_icon(icon: &str) -> ApiResult<()> {
    crate::validate::length("icon", icon, 1, 50)?;
    if icon
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "`icon` must be an icon name of letters, digits and `-`: `{icon}`."
        )))
    }
}

fn new_section(s: &Structure, site_id: &str, title: &str, now: i64) -> SectionRow {
    let path = sites::unique_path(
        &sites::slug(title),
        s.sections.iter().map(|x| x.path.as_str()),
    );
    SectionRow {
        id: new_id(),
        site_id: site_id.to_string(),
        group_id: None,
        title: title.to_string(),
        description: None,
        path,
        condition: None,
        icon: None,
        default_site_space: None,
        position: sites::next_top_position(s),
        group_position: 0,
        created_at: now,
    }
}

/// A new section holding `space_id` (`addSectionToSite`), titled `title` (the space's
/// title when absent; `Section` when shorter than 2 characters). On a site without
/// sections, the site spaces it already had first move into a section of their own (the
/// default), so that every site space of a site with sections is in one. Answers the new
/// section's id.
pub async fn add_section(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    space_id: &str,
    title: Option<String>,
    icon: Option<String>,
) -> ApiResult<(String, Saved)> {
    org.require_admin("change sites")?;
    let space = live_space(state, &org.org.id, "spaceId", space_id).await?;
    let title = title.unwrap_or_else(|| space.title.clone());
    let title = if title.chars().count() < 2 {
        "Section".to_string()
    } else {
        title
    };
    crate::validate::length("title", &title, 2, 128)?;
    if let Some(icon) = &icon {
        check_icon(icon)?;
    }
    let now = state.now();
    let (id, site, after) = edit(state, org, site_id, |site, s| {
        if s.sections.is_empty() && !s.site_spaces.is_empty() {
            let first = new_section(s, &site.id, &site.title, now);
            for ss in s.site_spaces.iter_mut() {
                ss.section_id = Some(first.id.clone());
            }
            s.sections.push(first);
        }
        let mut section = new_section(s, &site.id, &title, now);
        section.icon = icon;
        let ss = new_site_space(s, &site.id, Some(&section.id), &space, now);
        let id = section.id.clone();
        s.sections.push(section);
        s.site_spaces.push(ss);
        Ok(id)
    })
    .await?;
    Ok((id, (site, after)))
}

/// What `updateSiteSectionById` changes of a section: each field given (`Some(None)`
/// clears an optional one).
#[derive(Default)]
pub struct SectionChange {
    /// 2 to 128 characters.
    pub title: Option<String>,
    /// One URL segment, unique among the site's sections.
    pub path: Option<String>,
    /// A site space of this section.
    pub default_site_space: Option<String>,
    /// A visibility condition.
    pub condition: Option<Option<String>>,
    /// An icon name.
    pub icon: Option<Option<String>>,
    /// At most 256 characters.
    pub description: Option<Option<String>>,
}

/// Changes a section (`updateSiteSectionById`); 404 when the site has no section `id`.
pub async fn update_section(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    id: &str,
    change: &SectionChange,
) -> ApiResult<Saved> {
    org.require_admin("change sites")?;
    if let Some(title) = &change.title {
        crate::validate::length("title", title, 2, 128)?;
    }
    if let Some(path) = &change.path {
        sites::check_path("path", path)?;
    }
    if let Some(Some(condition)) = &change.condition {
        sites::check_condition("condition", condition)?;
    }
    if let Some(Some(icon)) = &change.icon {
        check_icon(icon)?;
    }
    if let Some(Some(description)) = &change.description {
        crate::validate::length("description", description, 0, 256)?;
    }
    let ((), site, after) = edit(state, org, site_id, |_, s| {
        let at = s
            .sections
            .iter()
            .position(|x| x.id == id)
            .ok_or_else(|| no_such("section", id))?;
        if let Some(path) = &change.path {
            if s.sections.iter().any(|x| x.id != id && &x.path == path) {
                return Err(ApiError::conflict(format!(
                    "`path`: another section already has the path `{path}`."
                )));
            }
            s.sections[at].path = path.clone();
        }
        if let Some(ss) = &change.default_site_space {
            if !s
                .site_spaces
                .iter()
                .any(|x| &x.id == ss && x.section_id.as_deref() == Some(id))
            {
                return Err(ApiError::bad_request(format!(
                    "`defaultSiteSpace`: no site space `{ss}` in this section."
                )));
            }
            s.sections[at].default_site_space = Some(ss.clone());
        }
        let x = &mut s.sections[at];
        if let Some(title) = &change.title {
            x.title = title.clone();
        }
        if let Some(condition) = &change.condition {
            x.condition = condition.clone();
        }
        if let Some(icon) = &change.icon {
            x.icon = icon.clone();
        }
        if let Some(description) = &change.description {
            x.description = description.clone();
        }
        Ok(())
    })
    .await?;
    Ok((site, after))
}

/// Removes a section and its site spaces (`deleteSiteSectionById`); nothing when absent.
pub async fn delete_section(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    id: &str,
) -> ApiResult<Saved> {
    change(state, org, site_id, |s| {
        s.sections.retain(|x| x.id != id);
        s.site_spaces
            .retain(|x| x.section_id.as_deref() != Some(id));
        Ok(())
    })
    .await
}

/// What `updateSiteSpaceById` changes of a site space: each field given (`Some(None)`
/// clears the condition).
#[derive(Default)]
pub struct SiteSpaceChange {
    /// One URL segment, unique among the site spaces beside it.
    pub path: Option<String>,
    /// A visibility condition.
    pub condition: Option<Option<String>>,
    /// Another live space of the organization to publish there.
    pub space_id: Option<String>,
}

/// Changes a site space (`updateSiteSpaceById`); 404 when the site has no site space `id`,
/// 409 when its new path is taken beside it.
pub async fn update_site_space(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    id: &str,
    change: &SiteSpaceChange,
) -> ApiResult<Saved> {
    org.require_admin("change sites")?;
    if let Some(path) = &change.path {
        sites::check_path("path", path)?;
    }
    if let Some(Some(condition)) = &change.condition {
        sites::check_condition("condition", condition)?;
    }
    let space = match &change.space_id {
        Some(space_id) => Some(live_space(state, &org.org.id, "spaceId", space_id).await?),
        None => None,
    };
    let ((), site, after) = edit(state, org, site_id, |_, s| {
        let at = s
            .site_spaces
            .iter()
            .position(|x| x.id == id)
            .ok_or_else(|| no_such("site space", id))?;
        if let Some(path) = &change.path {
            let section = s.site_spaces[at].section_id.clone();
            let clash = s
                .site_spaces
                .iter()
                .any(|x| x.id != id && x.section_id == section && &x.path == path);
            if clash {
                return Err(ApiError::conflict(format!(
                    "`path`: another site space beside this one already has the path `{path}`."
                )));
            }
            s.site_spaces[at].path = path.clone();
        }
        if let Some(condition) = &change.condition {
            s.site_spaces[at].condition = condition.clone();
        }
        if let Some(space) = &space {
            s.site_spaces[at].space_id = space.id.clone();
        }
        Ok(())
    })
    .await?;
    Ok((site, after))
}

/// Takes a space off the site (`deleteSiteSpaceById`); nothing when absent.
pub async fn remove_site_space(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    id: &str,
) -> ApiResult<Saved> {
    change(state, org, site_id, |s| {
        s.site_spaces.retain(|x| x.id != id);
        Ok(())
    })
    .await
}

/// Moves a site space, section or group to `place` (`sortSiteStructure` and the move
/// operations before it).
pub async fn move_item(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    item: &Item,
    place: &Place,
) -> ApiResult<Saved> {
    change(state, org, site_id, |s| sites::move_item(s, item, place)).await
}

/// Moves an item one step up or down among its siblings (the app's arrows); nothing at
/// the edge.
pub async fn step(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    item: &Item,
    up: bool,
) -> ApiResult<Saved> {
    change(state, org, site_id, |s| {
        match sites::neighbour(s, item, up)? {
            Some(other) if up => sites::move_item(s, item, &Place::Before(other)),
            Some(other) => sites::move_item(s, item, &Place::After(other)),
            None => Ok(()),
        }
    })
    .await
}

/// Makes `section_id` the section a visitor lands on (`updateSiteById`'s
/// `defaultSiteSection`).
pub async fn set_default_section(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    section_id: &str,
) -> ApiResult<SiteRow> {
    let patch = SitePatch {
        default_section: Some(section_id.to_string()),
        ..SitePatch::default()
    };
    sites::update(state, org, site_id, patch, None).await
}

/// Changes the site's structure as an organization admin, through [`sites::edit`], for a
/// change that answers the site as saved.
async fn change(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    f: impl FnOnce(&mut Structure) -> ApiResult<()>,
) -> ApiResult<Saved> {
    org.require_admin("change sites")?;
    let ((), site, after) = edit(state, org, site_id, |_, s| f(s)).await?;
    Ok((site, after))
}

/// Puts a section at the end of a group.
fn join_group(s: &mut Structure, group: &str, section: &str) -> ApiResult<()> {
    let position = sites::next_group_position(s, group);
    let x = s
        .sections
        .iter_mut()
        .find(|x| x.id == section)
        .ok_or_else(|| {
            ApiError::bad_request(format!("`sections`: no section `{section}` in this site."))
        })?;
    x.group_id = Some(group.to_string());
    x.group_position = position;
    Ok(())
}

/// A new group at the end of the site's top level holding `sections`
/// (`addSectionGroupToSite`); answers its id.
pub async fn add_group(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    title: &str,
    icon: Option<String>,
    sections: &[String],
) -> ApiResult<(String, Saved)> {
    org.require_admin("change sites")?;
    crate::validate::length("title", title, 1, 100)?;
    if let Some(icon) = &icon {
        check_icon(icon)?;
    }
    if sections.len() > sites::MAX_ITEMS {
        return Err(ApiError::bad_request(format!(
            "`sections` holds at most {} sections.",
            sites::MAX_ITEMS
        )));
    }
    let now = state.now();
    let (id, site, after) = edit(state, org, site_id, |site, s| {
        let group = GroupRow {
            id: new_id(),
            site_id: site.id.clone(),
            title: title.to_string(),
            icon,
            position: sites::next_top_position(s),
            created_at: now,
        };
        let id = group.id.clone();
        s.groups.push(group);
        for section in sections {
            join_group(s, &id, section)?;
        }
        Ok(id)
    })
    .await?;
    Ok((id, (site, after)))
}

/// Changes a group's title or icon (`updateSiteSectionGroupById`); 404 when absent.
pub async fn update_group(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    id: &str,
    title: Option<&str>,
    icon: Option<Option<String>>,
) -> ApiResult<Saved> {
    org.require_admin("change sites")?;
    if let Some(title) = title {
        crate::validate::length("title", title, 1, 100)?;
    }
    if let Some(Some(icon)) = &icon {
        check_icon(icon)?;
    }
    let ((), site, after) = edit(state, org, site_id, |_, s| {
        let g = s
            .groups
            .iter_mut()
            .find(|g| g.id == id)
            .ok_or_else(|| no_such("section group", id))?;
        if let Some(title) = title {
            g.title = title.to_string();
        }
        if let Some(icon) = icon {
            g.icon = icon;
        }
        Ok(())
    })
    .await?;
    Ok((site, after))
}

/// Deletes a group (`deleteSiteSectionGroupById`); its sections stay, ungrouped, at the
/// group's place. Nothing when absent.
pub async fn delete_group(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    id: &str,
) -> ApiResult<Saved> {
    change(state, org, site_id, |s| {
        let members: Vec<String> = sites::group_sections(s, id)
            .iter()
            .map(|x| x.id.clone())
            .collect();
        for section in members {
            sites::move_item(
                s,
                &Item::Section(section),
                &Place::Before(Item::Group(id.to_string())),
            )?;
        }
        s.groups.retain(|g| g.id != id);
        Ok(())
    })
    .await
}

/// A section joins a group at its end (`addSectionToGroup`): 404 for an unknown group, 400
/// naming `sectionId` for an unknown section.
pub async fn add_to_group(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    group: &str,
    section: &str,
) -> ApiResult<Saved> {
    change(state, org, site_id, |s| {
        if !s.groups.iter().any(|g| g.id == group) {
            return Err(no_such("section group", group));
        }
        if !s.sections.iter().any(|x| x.id == section) {
            return Err(ApiError::bad_request(format!(
                "`sectionId`: no section `{section}` in this site."
            )));
        }
        join_group(s, group, section)
    })
    .await
}

/// A section leaves its group and stays in the site, after the group
/// (`removeSectionFromGroup`); nothing when it is not in that group.
pub async fn remove_from_group(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    group: &str,
    section: &str,
) -> ApiResult<Saved> {
    change(state, org, site_id, |s| {
        let member = s
            .sections
            .iter()
            .any(|x| x.id == section && x.group_id.as_deref() == Some(group));
        if member {
            sites::move_item(
                s,
                &Item::Section(section.to_string()),
                &Place::After(Item::Group(group.to_string())),
            )?;
        }
        Ok(())
    })
    .await
}

/// Puts a section at the end of `group`, or (`None`) out of its group, after it: the
/// app's one choice of a section's group, with the rules of [`add_to_group`] and
/// [`remove_from_group`].
pub async fn set_group(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    section: &str,
    group: Option<&str>,
) -> ApiResult<Saved> {
    if let Some(group) = group {
        return add_to_group(state, org, site_id, group, section).await;
    }
    change(state, org, site_id, |s| {
        let current = s
            .sections
            .iter()
            .find(|x| x.id == section)
            .ok_or_else(|| no_such("section", section))?
            .group_id
            .clone();
        if let Some(group) = current {
            sites::move_item(
                s,
                &Item::Section(section.to_string()),
                &Place::After(Item::Group(group)),
            )?;
        }
        Ok(())
    })
    .await
}

/// Largest customization stored, as JSON.
const MAX_CUSTOMIZATION: usize = 64 * 1024;

/// Checks the parts of a customization that the published site reads; names the field.
pub fn check_customization(c: &Map<String, Value>) -> ApiResult<()> {
    if let Some(title) = c.get("title") {
        let title = title
            .as_str()
            .ok_or_else(|| ApiError::bad_request("`title` must be a string."))?;
        crate::validate::length("title", title, 2, 128)?;
    }
    let one_of = |field: &str, value: Option<&Value>, allowed: &[&str]| -> ApiResult<()> {
        match value {
            None => Ok(()),
            Some(Value::String(s)) if allowed.contains(&s.as_str()) => Ok(()),
            Some(_) => Err(ApiError::bad_request(format!(
                "`{field}` must be one of {}.",
                allowed
                    .iter()
                    .map(|a| format!("`{a}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    };
    let styling = c.get("styling");
    if let Some(font) = styling.and_then(|s| s.get("font")) {
        crate::domain::fonts::check_site_font("styling.font", font)?;
    }
    one_of(
        "styling.theme",
        styling.and_then(|s| s.get("theme")),
        &["clean", "muted", "bold", "gradient"],
    )?;
    one_of(
        "themes.default",
        c.get("themes").and_then(|t| t.get("default")),
        &THEME_MODES,
    )?;
    one_of(
        "internationalization.locale",
        c.get("internationalization").and_then(|i| i.get("locale")),
        &[
            "en", "fr", "es", "zh", "ja", "de", "nl", "no", "pt-br", "ru",
        ],
    )?;
    for (field, path) in [
        ("styling.primaryColor", ["styling", "primaryColor"]),
        ("styling.infoColor", ["styling", "infoColor"]),
    ] {
        if let Some(color) = c.get(path[0]).and_then(|s| s.get(path[1])) {
            for mode in ["light", "dark"] {
                let ok = color.get(mode).and_then(Value::as_str).is_some_and(|v| {
                    v.len() == 7
                        && v.starts_with('#')
                        && v[1..].chars().all(|c| c.is_ascii_hexdigit())
                });
                if !ok {
                    return Err(ApiError::bad_request(format!(
                        "`{field}.{mode}` must be a colour such as `#346DDB`."
                    )));
                }
            }
        }
    }
    for (field, value) in [
        ("header.links", c.get("header").and_then(|h| h.get("links"))),
        (
            "footer.groups",
            c.get("footer").and_then(|f| f.get("groups")),
        ),
    ] {
        match value {
            None => {}
            Some(Value::Array(items)) if items.len() <= 50 => {
                for (i, item) in items.iter().enumerate() {
                    if !item.get("title").is_some_and(Value::is_string) {
                        return Err(ApiError::bad_request(format!(
                            "`{field}[{i}].title` must be a string."
                        )));
                    }
                }
            }
            Some(_) => {
                return Err(ApiError::bad_request(format!(
                    "`{field}` must be an array of at most 50 items."
                )))
            }
        }
    }
    Ok(())
}

/// `CustomizationThemeMode`.
pub const THEME_MODES: [&str; 2] = ["light", "dark"];

/// Replaces a site's customization (`updateSiteCustomizationById`): fields left out take
/// the defaults. Answers the site as stored.
pub async fn replace_customization(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    fields: Map<String, Value>,
) -> ApiResult<SiteRow> {
    customize(state, org, site_id, |_| Ok(fields)).await
}

/// The basics of a site's look that the app's form changes; each field given replaces the
/// stored one, the rest of the customization stays.
#[derive(Default)]
pub struct Basics {
    /// `title`: the site's title as visitors see it.
    pub title: Option<String>,
    /// `styling.primaryColor`: `#rrggbb` in the light and the dark theme.
    pub primary_color: Option<(String, String)>,
    /// `themes.default`: `light` or `dark`.
    pub theme: Option<String>,
    /// `styling.font`: one of GitBook's fonts by name.
    pub font: Option<String>,
}

/// Changes the basics of a site's customization, keeping the rest as stored, under the
/// checks of [`replace_customization`]. Answers the site as stored.
pub async fn customize_basics(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    basics: Basics,
) -> ApiResult<SiteRow> {
    customize(state, org, site_id, |mut fields| {
        let object = |fields: &mut Map<String, Value>, key: &str| {
            let slot = fields.entry(key).or_insert_with(|| json!({}));
            if !slot.is_object() {
                *slot = json!({});
            }
            slot.as_object_mut().map(std::mem::take).unwrap_or_default()
        };
        if let Some(title) = basics.title {
            fields.insert("title".into(), json!(title));
        }
        if basics.primary_color.is_some() || basics.font.is_some() {
            let mut styling = object(&mut fields, "styling");
            if let Some((light, dark)) = basics.primary_color {
                styling.insert(
                    "primaryColor".into(),
                    json!({ "light": light, "dark": dark }),
                );
            }
            if let Some(font) = basics.font {
                styling.insert("font".into(), json!(font));
            }
            fields.insert("styling".into(), Value::Object(styling));
        }
        if let Some(theme) = basics.theme {
            let mut themes = object(&mut fields, "themes");
            themes.insert("default".into(), json!(theme));
            fields.insert("themes".into(), Value::Object(themes));
        }
        Ok(fields)
    })
    .await
}

/// Locks the site, makes its new customization from the one stored (an empty object when
/// none), checks it and saves it.
async fn customize(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    make: impl FnOnce(Map<String, Value>) -> ApiResult<Map<String, Value>>,
) -> ApiResult<SiteRow> {
    org.require_admin("change sites")?;
    let (mut tx, site) = sites::locked(state, org, site_id).await?;
    let stored = match site.customization.as_deref() {
        Some(text) => match serde_json::from_str(text).map_err(ApiError::internal)? {
            Value::Object(fields) => fields,
            _ => Map::new(),
        },
        None => Map::new(),
    };
    let mut fields = make(stored)?;
    fields.remove("updatedAt");
    check_customization(&fields)?;
    let text = serde_json::to_string(&fields).map_err(ApiError::internal)?;
    if text.len() > MAX_CUSTOMIZATION {
        return Err(ApiError::bad_request(
            "The customization must be at most 64 KiB of JSON.",
        ));
    }
    let patch = SitePatch {
        customization: Some(text),
        ..SitePatch::default()
    };
    store::sites::patch(&mut tx, site_id, &patch, state.now()).await?;
    tx.commit().await?;
    sites::reload(state, &org.org.id, site_id).await
}

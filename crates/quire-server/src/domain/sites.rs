//! Docs sites: the rules of a site's structure (defaults, paths, order, moves), its
//! published URLs and the conditions that decide what a visitor sees. Pure functions over a
//! site's rows; the sites family loads and saves them through the store, and the published
//! HTML reads the same structure.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::clock::iso;
use crate::domain::access::OrgCtx;
use crate::domain::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::ids::new_id;
use crate::state::AppState;
use crate::store;
use crate::store::sites::{SectionRow, SitePatch, SiteRow, SiteSpaceRow, Structure};
use crate::store::spaces::SpaceRow;
use crate::values::{AgentsContext, SiteType, SiteVisibility};

/// Most sections, groups or site spaces one site holds.
pub const MAX_ITEMS: usize = 500;

/// A lower-case URL segment made of a title: letters and digits, words joined by `-`.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.chars().count() >= 90 {
            break;
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "content".into()
    } else {
        out
    }
}

/// `base`, or `base-2`, `base-3`… : the first not in `taken`.
pub fn unique_path<'a>(base: &str, taken: impl Iterator<Item = &'a str> + Clone) -> String {
    let mut candidate = base.to_string();
    let mut n = 1;
    while taken.clone().any(|t| t == candidate) {
        n += 1;
        candidate = format!("{base}-{n}");
    }
    candidate
}

/// Sections in the order a visitor sees them: the top level by position, each group's
/// sections in the group's place.
pub fn ordered_sections(s: &Structure) -> Vec<&SectionRow> {
    let mut out = Vec::with_capacity(s.sections.len());
    for item in top_level(s) {
        match item {
            Top::Section(section) => out.push(section),
            Top::Group(group) => out.extend(group_sections(s, &group.id)),
        }
    }
    out
}

/// An item of the top level of a site with sections.
pub enum Top<'a> {
    /// A section outside any group.
    Section(&'a SectionRow),
    /// A group of sections.
    Group(&'a crate::store::sites::GroupRow),
}

/// The top level of a site with sections, in order.
pub fn top_level(s: &Structure) -> Vec<Top<'_>> {
    let mut items: Vec<(i64, &str, Top<'_>)> = s
        .sections
        .iter()
        .filter(|x| x.group_id.is_none())
        .map(|x| (x.position, x.id.as_str(), Top::Section(x)))
        .chain(
            s.groups
                .iter()
                .map(|g| (g.position, g.id.as_str(), Top::Group(g))),
        )
        .collect();
    items.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    items.into_iter().map(|(_, _, t)| t).collect()
}

/// The sections of a group, in order.
pub fn group_sections<'a>(s: &'a Structure, group_id: &str) -> Vec<&'a SectionRow> {
    let mut out: Vec<&SectionRow> = s
        .sections
        .iter()
        .filter(|x| x.group_id.as_deref() == Some(group_id))
        .collect();
    out.sort_by(|a, b| (a.group_position, &a.id).cmp(&(b.group_position, &b.id)));
    out
}

/// The site spaces of a section (`None`: the site's root), in order.
pub fn site_spaces_in<'a>(s: &'a Structure, section: Option<&str>) -> Vec<&'a SiteSpaceRow> {
    let mut out: Vec<&SiteSpaceRow> = s
        .site_spaces
        .iter()
        .filter(|x| x.section_id.as_deref() == section)
        .collect();
    out.sort_by(|a, b| (a.position, &a.id).cmp(&(b.position, &b.id)));
    out
}

/// The default section: the one the site names, else the first.
pub fn default_section<'a>(site: &SiteRow, s: &'a Structure) -> Option<&'a SectionRow> {
    let ordered = ordered_sections(s);
    site.default_section
        .as_deref()
        .and_then(|id| ordered.iter().find(|x| x.id == id).copied())
        .or_else(|| ordered.first().copied())
}

/// The default site space of a section (or of the root): the one it names, else the first.
pub fn default_site_space<'a>(
    site: &SiteRow,
    s: &'a Structure,
    section: Option<&SectionRow>,
) -> Option<&'a SiteSpaceRow> {
    let within = site_spaces_in(s, section.map(|x| x.id.as_str()));
    let named = match section {
        Some(x) => x.default_site_space.as_deref(),
        None => site.default_site_space.as_deref(),
    };
    named
        .and_then(|id| within.iter().find(|x| x.id == id).copied())
        .or_else(|| within.first().copied())
}

/// Whether a site space is the default of its section (or of the root).
pub fn is_default_site_space(site: &SiteRow, s: &Structure, ss: &SiteSpaceRow) -> bool {
    let section = ss
        .section_id
        .as_deref()
        .and_then(|id| s.sections.iter().find(|x| x.id == id));
    default_site_space(site, s, section).is_some_and(|d| d.id == ss.id)
}

/// The site space a visitor lands on: the default of the default section, or of the root.
pub fn landing_site_space<'a>(site: &SiteRow, s: &'a Structure) -> Option<&'a SiteSpaceRow> {
    if s.sections.is_empty() {
        default_site_space(site, s, None)
    } else {
        default_section(site, s).and_then(|sec| default_site_space(site, s, Some(sec)))
    }
}

/// Published URLs of a site and what it holds, for one way in (the site's own address, or
/// a share link's).
pub struct Urls {
    base: String,
}

impl Urls {
    /// URLs of `site`, under a share link's key when given: on its own address when it
    /// has one (its proxy's, else its custom hostname's; `crate::hosts`), else under Quire's.
    pub fn new(state: &AppState, site: &SiteRow, share_key: Option<&str>) -> Self {
        let scheme = if state.public_url.starts_with("https:") {
            "https"
        } else {
            "http"
        };
        let root = match (&site.proxy, &site.hostname) {
            (Some(proxy), _) => format!("{scheme}://{}/", proxy.trim_end_matches('/')),
            (None, Some(host)) => format!("{scheme}://{host}/"),
            (None, None) => state.url(&format!("/sites/{}/", site.id)),
        };
        let base = match share_key {
            Some(key) => format!("{root}~share/{key}/"),
            None => root,
        };
        Urls { base }
    }

    /// URLs under `base`, the site's address as a visitor reached it (ends with `/`).
    pub fn at(base: String) -> Self {
        Urls { base }
    }

    /// The site's address.
    pub fn site(&self) -> String {
        self.base.clone()
    }

    /// A section's address: the site's own for the default section.
    pub fn section(&self, site: &SiteRow, s: &Structure, section: &SectionRow) -> String {
        if default_section(site, s).is_some_and(|d| d.id == section.id) {
            self.base.clone()
        } else {
            format!("{}{}/", self.base, section.path)
        }
    }

    /// A site space's address: its section's for the section's default.
    pub fn site_space(&self, site: &SiteRow, s: &Structure, ss: &SiteSpaceRow) -> String {
        let section = ss
            .section_id
            .as_deref()
            .and_then(|id| s.sections.iter().find(|x| x.id == id));
        let container = match section {
            Some(sec) => self.section(site, s, sec),
            None => self.base.clone(),
        };
        if is_default_site_space(site, s, ss) {
            container
        } else {
            format!("{container}{}/", ss.path)
        }
    }
}

/// The published URL of a space in a published share-link site whose active share link
/// holds `key`, under that key; `None` when the key opens no site showing the space.
pub async fn shared_space_url(
    state: &AppState,
    space_id: &str,
    key: &str,
) -> ApiResult<Option<String>> {
    let Some((site, site_space)) =
        crate::store::sites::shared_site_space(&state.db, space_id, key).await?
    else {
        return Ok(None);
    };
    let structure = crate::store::sites::structure(&state.db, &site.id).await?;
    Ok(structure
        .site_spaces
        .iter()
        .find(|x| x.id == site_space)
        .map(|ss| Urls::new(state, &site, Some(key)).site_space(&site, &structure, ss)))
}

/// A pointer to an item of a site's structure, as the move operations send it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A site space.
    SiteSpace(String),
    /// A section.
    Section(String),
    /// A section group.
    Group(String),
}

impl Item {
    /// The item of type `kind` (`site-space`, `site-section`, `site-section-group`) with
    /// this id; 400 naming `field` for another type.
    pub fn parse(kind: &str, id: &str, field: &str) -> ApiResult<Item> {
        let id = id.to_string();
        match kind {
            "site-space" => Ok(Item::SiteSpace(id)),
            "site-section" => Ok(Item::Section(id)),
            "site-section-group" => Ok(Item::Group(id)),
            other => Err(ApiError::bad_request(format!(
                "`{field}`: unknown value `{other}`, expected one of `site-space`, `site-section`, `site-section-group`."
            ))),
        }
    }

    /// Its type, as the API names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Item::SiteSpace(_) => "site-space",
            Item::Section(_) => "site-section",
            Item::Group(_) => "site-section-group",
        }
    }

    fn id(&self) -> &str {
        match self {
            Item::SiteSpace(id) | Item::Section(id) | Item::Group(id) => id,
        }
    }
}

/// `SiteStructureItemPointer`, `SiteSectionGroupPointer`: `{type, id}`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct TypedPointer {
    #[serde(rename = "type")]
    kind: String,
    id: String,
}

impl TypedPointer {
    /// The item it names; 400 for an unknown type.
    pub fn item(&self, field: &str) -> ApiResult<Item> {
        Item::parse(&self.kind, &self.id, &format!("{field}.type"))
    }
}

/// Where an item goes: after every sibling of its current container, or beside another.
#[derive(Debug, Clone)]
pub enum Place {
    /// At the end of its current container.
    End,
    /// Just before this item, in its container.
    Before(Item),
    /// Just after this item, in its container.
    After(Item),
}

/// A container of the structure: what holds an ordered list of items.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Container {
    /// Sections outside groups, and groups.
    Top,
    /// The sections of a group.
    Group(String),
    /// The site spaces of a section.
    Section(String),
    /// The site spaces of a site without sections.
    Root,
}

fn container_of(s: &Structure, item: &Item) -> Option<Container> {
    match item {
        Item::SiteSpace(id) => s.site_spaces.iter().find(|x| &x.id == id).map(|x| {
            x.section_id
                .clone()
                .map(Container::Section)
                .unwrap_or(Container::Root)
        }),
        Item::Section(id) => s.sections.iter().find(|x| &x.id == id).map(|x| {
            x.group_id
                .clone()
                .map(Container::Group)
                .unwrap_or(Container::Top)
        }),
        Item::Group(id) => s
            .groups
            .iter()
            .find(|x| &x.id == id)
            .map(|_| Container::Top),
    }
}

fn members(s: &Structure, c: &Container) -> Vec<Item> {
    match c {
        Container::Top => top_level(s)
            .into_iter()
            .map(|t| match t {
                Top::Section(x) => Item::Section(x.id.clone()),
                Top::Group(g) => Item::Group(g.id.clone()),
            })
            .collect(),
        Container::Group(g) => group_sections(s, g)
            .into_iter()
            .map(|x| Item::Section(x.id.clone()))
            .collect(),
        Container::Section(sec) => site_spaces_in(s, Some(sec))
            .into_iter()
            .map(|x| Item::SiteSpace(x.id.clone()))
            .collect(),
        Container::Root => site_spaces_in(s, None)
            .into_iter()
            .map(|x| Item::SiteSpace(x.id.clone()))
            .collect(),
    }
}

/// Moves `item` to `place`, within its container or into the container of the item it is
/// placed beside (a site space into another section, a section into or out of a group).
/// Renumbers the positions of the destination container; 404 when an item is not in the
/// site, 400 when it cannot go there.
pub fn move_item(s: &mut Structure, item: &Item, place: &Place) -> ApiResult<()> {
    let from = container_of(s, item).ok_or_else(|| {
        ApiError::not_found(format!("No {} `{}` in this site.", item.kind(), item.id()))
    })?;
    let (to, anchor) = match place {
        Place::End => (from.clone(), None),
        Place::Before(other) | Place::After(other) => {
            if other == item {
                return Err(ApiError::bad_request(
                    "`position` cannot place an item beside itself.",
                ));
            }
            let c = container_of(s, other).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "`position`: no {} `{}` in this site.",
                    other.kind(),
                    other.id()
                ))
            })?;
            (c, Some(other))
        }
    };
    let fits = matches!(
        (item, &to),
        (Item::SiteSpace(_), Container::Section(_) | Container::Root)
            | (Item::Section(_), Container::Top | Container::Group(_))
            | (Item::Group(_), Container::Top)
    );
    if !fits {
        return Err(ApiError::bad_request(format!(
            "`position`: a {} cannot be placed there.",
            item.kind()
        )));
    }
    let mut order: Vec<Item> = members(s, &to).into_iter().filter(|i| i != item).collect();
    let at = match (place, anchor) {
        (Place::Before(_), Some(a)) => order.iter().position(|i| i == a).unwrap_or(0),
        (Place::After(_), Some(a)) => order.iter().position(|i| i == a).map_or(0, |p| p + 1),
        _ => order.len(),
    };
    order.insert(at, item.clone());
    // Joining another container: the item takes it as its parent, and a site-space path
    // must stay unique there.
    if to != from {
        match (item, &to) {
            (Item::SiteSpace(id), Container::Section(sec)) => set_section(s, id, Some(sec))?,
            (Item::SiteSpace(id), Container::Root) => set_section(s, id, None)?,
            (Item::Section(id), Container::Group(g)) => set_group(s, id, Some(g)),
            (Item::Section(id), Container::Top) => set_group(s, id, None),
            _ => {}
        }
    }
    renumber(s, &to, &order);
    Ok(())
}

fn set_group(s: &mut Structure, id: &str, group: Option<&String>) {
    if let Some(x) = s.sections.iter_mut().find(|x| x.id == id) {
        x.group_id = group.cloned();
    }
}

fn set_section(s: &mut Structure, id: &str, section: Option<&String>) -> ApiResult<()> {
    let path = s
        .site_spaces
        .iter()
        .find(|x| x.id == id)
        .map(|x| x.path.clone())
        .unwrap_or_default();
    let clash = s
        .site_spaces
        .iter()
        .any(|x| x.id != id && x.section_id.as_ref() == section && x.path == path);
    if clash {
        return Err(ApiError::conflict(format!(
            "Another site space there already has the path `{path}`; change one path first."
        )));
    }
    if let Some(x) = s.site_spaces.iter_mut().find(|x| x.id == id) {
        x.section_id = section.cloned();
    }
    Ok(())
}

fn renumber(s: &mut Structure, c: &Container, order: &[Item]) {
    for (n, item) in order.iter().enumerate() {
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        match (c, item) {
            (Container::Group(_), Item::Section(id)) => {
                if let Some(x) = s.sections.iter_mut().find(|x| &x.id == id) {
                    x.group_position = n;
                }
            }
            (_, Item::Section(id)) => {
                if let Some(x) = s.sections.iter_mut().find(|x| &x.id == id) {
                    x.position = n;
                }
            }
            (_, Item::Group(id)) => {
                if let Some(x) = s.groups.iter_mut().find(|x| &x.id == id) {
                    x.position = n;
                }
            }
            (_, Item::SiteSpace(id)) => {
                if let Some(x) = s.site_spaces.iter_mut().find(|x| &x.id == id) {
                    x.position = n;
                }
            }
        }
    }
}

/// The item just before (`up`) or just after `item` among its siblings, to move it one
/// step; `None` at the edge, 404 when the site has no such item.
pub fn neighbour(s: &Structure, item: &Item, up: bool) -> ApiResult<Option<Item>> {
    let missing =
        || ApiError::not_found(format!("No {} `{}` in this site.", item.kind(), item.id()));
    let siblings = members(s, &container_of(s, item).ok_or_else(missing)?);
    let at = siblings
        .iter()
        .position(|i| i == item)
        .ok_or_else(missing)?;
    Ok(if up {
        at.checked_sub(1).map(|p| siblings[p].clone())
    } else {
        siblings.get(at + 1).cloned()
    })
}

/// The next position at the end of the top level, a section's site spaces or the root's.
pub fn next_top_position(s: &Structure) -> i64 {
    s.sections
        .iter()
        .filter(|x| x.group_id.is_none())
        .map(|x| x.position)
        .chain(s.groups.iter().map(|g| g.position))
        .max()
        .map_or(0, |p| p + 1)
}

/// The next position among the site spaces of a section (or of the root).
pub fn next_site_space_position(s: &Structure, section: Option<&str>) -> i64 {
    site_spaces_in(s, section)
        .iter()
        .map(|x| x.position)
        .max()
        .map_or(0, |p| p + 1)
}

/// The next position among a group's sections.
pub fn next_group_position(s: &Structure, group: &str) -> i64 {
    group_sections(s, group)
        .iter()
        .map(|x| x.group_position)
        .max()
        .map_or(0, |p| p + 1)
}

/// Checks a visibility condition (`field` names it in the error): 1 to 1024 characters, an
/// expression over the visitor's claims that parses and can yield a boolean.
pub fn check_condition(field: &str, condition: &str) -> ApiResult<()> {
    crate::validate::length(field, condition, 1, 1024)?;
    quire_content::condition::parse_condition(condition)
        .map(|_| ())
        .map_err(|e| ApiError::bad_request(format!("`{field}`: {e}.")))
}

/// Checks a URL path segment of a section or site space: 1 to 100 characters of letters,
/// digits, `-`, `_` and `.`.
pub fn check_path(field: &str, path: &str) -> ApiResult<()> {
    crate::validate::length(field, path, 1, 100)?;
    let ok = path
        .chars()
        .all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && path != "."
        && path != ".."
        && !path.starts_with('~');
    if ok {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "`{field}` must be one URL segment of letters, digits, `-`, `_` and `.` (not starting with `~`): `{path}`."
        )))
    }
}

/// What a site shows before anyone customizes it: every field the official schemas require
/// (0.137.0, and the newer fields renderers read), with GitBook's defaults.
fn default_customization(site: &SiteRow) -> Value {
    let color = |light: &str, dark: &str| json!({ "light": light, "dark": dark });
    json!({
        "title": site.title,
        "styling": {
            "theme": "clean",
            "primaryColor": color("#346DDB", "#346DDB"),
            "infoColor": color("#787878", "#787878"),
            "successColor": color("#00C950", "#00C950"),
            "warningColor": color("#FE9A00", "#FE9A00"),
            "dangerColor": color("#FB2C36", "#FB2C36"),
            "corners": "rounded",
            "depth": "subtle",
            "links": "default",
            "font": "Inter",
            "monospaceFont": "IBMPlexMono",
            "codeTheme": {
                "default": { "light": "default-light", "dark": "default-dark" },
                "openapi": { "light": "default-light", "dark": "default-dark" }
            },
            "background": "plain",
            "icons": "regular",
            "sidebar": { "background": "default", "list": "default" },
            "search": "subtle"
        },
        "internationalization": { "locale": "en" },
        "favicon": {},
        "header": { "preset": "default", "links": [] },
        "footer": { "groups": [] },
        "themes": { "default": "light", "toggeable": true },
        "pdf": { "enabled": true },
        "feedback": { "enabled": false },
        "ai": { "mode": "search" },
        "advancedCustomization": { "enabled": true },
        "trademark": { "enabled": true },
        "externalLinks": { "target": "self" },
        "pagination": { "enabled": true },
        // Both shapes: the booleans of 0.137.0 and the ordered list of newer renderers.
        "pageActions": { "externalAI": false, "markdown": true, "items": ["markdown", "pdf"] },
        "socialAccounts": [],
        "git": { "showEditLink": false },
        "privacyPolicy": {},
        "socialPreview": {},
        "insights": { "trackingCookie": false }
    })
}

/// Puts every field of `over` onto `base`, objects field by field, anything else whole.
pub(crate) fn overlay(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) if slot.is_object() && v.is_object() => overlay(slot, v),
                    _ => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

/// The site's customization: the defaults with what was stored on top.
pub fn customization_of(site: &SiteRow) -> ApiResult<Value> {
    let mut value = default_customization(site);
    if let Some(stored) = &site.customization {
        let stored: Value = serde_json::from_str(stored).map_err(ApiError::internal)?;
        overlay(&mut value, stored);
    }
    if let Some(at) = site.customization_updated_at {
        value["updatedAt"] = json!(iso(at));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sites::GroupRow;

    fn section(id: &str, group: Option<&str>, position: i64) -> SectionRow {
        SectionRow {
            id: id.into(),
            site_id: "s".into(),
            group_id: group.map(Into::into),
            title: id.into(),
            description: None,
            path: id.into(),
            condition: None,
            icon: None,
            default_site_space: None,
            position,
            group_position: position,
            created_at: 0,
        }
    }

    fn site_space(id: &str, section: Option<&str>, position: i64) -> SiteSpaceRow {
        SiteSpaceRow {
            id: id.into(),
            site_id: "s".into(),
            section_id: section.map(Into::into),
            space_id: format!("space-{id}"),
            path: id.into(),
            condition: None,
            position,
            created_at: 0,
        }
    }

    fn world() -> Structure {
        Structure {
            sections: vec![
                section("a", None, 0),
                section("b", Some("g"), 0),
                section("c", Some("g"), 1),
                section("d", None, 2),
            ],
            groups: vec![GroupRow {
                id: "g".into(),
                site_id: "s".into(),
                title: "G".into(),
                icon: None,
                position: 1,
                created_at: 0,
            }],
            site_spaces: vec![
                site_space("x", Some("a"), 0),
                site_space("y", Some("a"), 1),
                site_space("z", Some("b"), 0),
            ],
        }
    }

    fn order(s: &Structure) -> Vec<String> {
        ordered_sections(s).iter().map(|x| x.id.clone()).collect()
    }

    #[test]
    fn sections_read_in_group_order() {
        assert_eq!(order(&world()), ["a", "b", "c", "d"]);
    }

    #[test]
    fn moving_a_section_out_of_a_group() {
        let mut s = world();
        move_item(
            &mut s,
            &Item::Section("c".into()),
            &Place::Before(Item::Section("a".into())),
        )
        .unwrap();
        assert_eq!(order(&s), ["c", "a", "b", "d"]);
        assert_eq!(
            s.sections.iter().find(|x| x.id == "c").unwrap().group_id,
            None
        );
    }

    #[test]
    fn moving_a_group_and_a_site_space_across_sections() {
        let mut s = world();
        move_item(
            &mut s,
            &Item::Group("g".into()),
            &Place::After(Item::Section("d".into())),
        )
        .unwrap();
        assert_eq!(order(&s), ["a", "d", "b", "c"]);
        move_item(
            &mut s,
            &Item::SiteSpace("x".into()),
            &Place::After(Item::SiteSpace("z".into())),
        )
        .unwrap();
        let in_b: Vec<_> = site_spaces_in(&s, Some("b"))
            .iter()
            .map(|x| x.id.clone())
            .collect();
        assert_eq!(in_b, ["z", "x"]);
    }

    #[test]
    fn refused_moves() {
        let mut s = world();
        let err = move_item(
            &mut s,
            &Item::Group("g".into()),
            &Place::Before(Item::Section("b".into())),
        )
        .unwrap_err();
        assert_eq!(err.status().as_u16(), 400);
        let err = move_item(&mut s, &Item::Section("nope".into()), &Place::End).unwrap_err();
        assert_eq!(err.status().as_u16(), 404);
        let err = move_item(
            &mut s,
            &Item::SiteSpace("x".into()),
            &Place::Before(Item::Section("a".into())),
        )
        .unwrap_err();
        assert_eq!(err.status().as_u16(), 400);
    }

    #[test]
    fn slugs_and_unique_paths() {
        assert_eq!(slug("Getting Started!"), "getting-started");
        assert_eq!(slug("  "), "content");
        assert_eq!(slug("Ünïcode Tïtle"), "ünïcode-tïtle");
        let taken = ["api", "api-2"];
        assert_eq!(unique_path("api", taken.iter().copied()), "api-3");
        assert_eq!(unique_path("guide", taken.iter().copied()), "guide");
    }
}

// ---- Site writes, shared by the API and the app -------------------------------------

/// The site as stored now, after a write; 404 when it was deleted meanwhile.
pub async fn reload(state: &AppState, org_id: &str, site_id: &str) -> ApiResult<SiteRow> {
    store::sites::get(&state.db, org_id, site_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Site `{site_id}` not found.")))
}

/// Writes the columns `patch` names and answers with the site as stored.
pub async fn patch_site(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    patch: &SitePatch,
) -> ApiResult<SiteRow> {
    let mut tx = state.db.begin().await?;
    tx.touches(&[
        crate::cache::Scope::Site(site_id),
        crate::cache::Scope::Org(org.org.id.as_str()),
    ]);
    store::sites::patch(&mut tx, site_id, patch, state.now()).await?;
    tx.commit().await?;
    reload(state, &org.org.id, site_id).await
}

/// Writes `patch` to a site (organization admins) under the rules of its structure:
/// `default_section` must be one of its sections; `default_site_space` (set apart from
/// `patch`) a site space of the root, or of the default section, whose default it becomes. A
/// new hostname's DNS check and proof of control start again. Answers the site as stored.
pub async fn update(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    mut patch: SitePatch,
    default_site_space: Option<String>,
) -> ApiResult<SiteRow> {
    org.require_admin("change sites")?;
    let (mut tx, site) = locked(state, org, site_id).await?;
    let structure = store::sites::structure_tx(&mut tx, &site.id).await?;
    if let Some(id) = &patch.default_section {
        if !structure.sections.iter().any(|x| &x.id == id) {
            return Err(ApiError::bad_request(format!(
                "`defaultSiteSection`: no section `{id}` in this site."
            )));
        }
    }
    patch.default_site_space = None;
    if let Some(id) = &default_site_space {
        let ss = structure
            .site_spaces
            .iter()
            .find(|x| &x.id == id)
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "`defaultSiteSpace`: no site space `{id}` in this site."
                ))
            })?;
        match &ss.section_id {
            None => patch.default_site_space = Some(id.clone()),
            // With sections, the default site space is the default section's.
            Some(section_id) => {
                let default_section = patch
                    .default_section
                    .clone()
                    .or_else(|| default_section(&site, &structure).map(|x| x.id.clone()));
                if default_section.as_deref() != Some(section_id) {
                    return Err(ApiError::bad_request(format!(
                        "`defaultSiteSpace`: site space `{id}` is not in the default section."
                    )));
                }
                let mut after = structure.clone();
                if let Some(x) = after.sections.iter_mut().find(|x| &x.id == section_id) {
                    x.default_site_space = Some(id.clone());
                }
                store::sites::save_structure(&mut tx, &structure, &after).await?;
            }
        }
    }
    let new_hostname = patch.hostname.as_ref().is_some_and(|h| *h != site.hostname);
    store::sites::patch(&mut tx, &site.id, &patch, state.now()).await?;
    if new_hostname {
        // The DNS check and the proof were of the hostname before.
        store::hostnames::reset_status(&mut tx, &site.id).await?;
    }
    tx.commit().await?;
    reload(state, &org.org.id, &site.id).await
}

/// A live space of the organization for a site space; 400 naming `field` otherwise.
pub async fn live_space(
    state: &AppState,
    org_id: &str,
    field: &str,
    id: &str,
) -> ApiResult<SpaceRow> {
    store::spaces::get(&state.db, id)
        .await?
        .filter(|s| s.org_id == org_id && s.deleted_at.is_none())
        .ok_or_else(|| {
            ApiError::bad_request(format!("`{field}`: no space `{id}` in this organization."))
        })
}

/// A new site space for `space` at the end of `section` (or of the root), its path made
/// unique among its siblings.
pub fn new_site_space(
    s: &Structure,
    site_id: &str,
    section: Option<&str>,
    space: &SpaceRow,
    now: i64,
) -> SiteSpaceRow {
    let taken = site_spaces_in(s, section);
    let path = unique_path(&slug(&space.title), taken.iter().map(|x| x.path.as_str()));
    SiteSpaceRow {
        id: new_id(),
        site_id: site_id.to_string(),
        section_id: section.map(str::to_string),
        space_id: space.id.clone(),
        path,
        condition: None,
        position: next_site_space_position(s, section),
        created_at: now,
    }
}

/// A write transaction holding site `site_id` of the organization locked (every write of a
/// site's row or structure takes it first), said to change the site and its organization;
/// 404 when the organization has no such site.
pub async fn locked(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
) -> ApiResult<(crate::db::Tx, SiteRow)> {
    let mut tx = state.db.begin().await?;
    tx.touches(&[
        crate::cache::Scope::Site(site_id),
        crate::cache::Scope::Org(org.org.id.as_str()),
    ]);
    let site = store::sites::lock(&mut tx, &org.org.id, site_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("Site `{site_id}` not found.")))?;
    Ok((tx, site))
}

/// Locks a site, lets `change` edit its structure under the site's limits, saves what
/// changed, and answers with the site and its structure as stored.
pub async fn edit<T>(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    change: impl FnOnce(&SiteRow, &mut Structure) -> ApiResult<T>,
) -> ApiResult<(T, SiteRow, Structure)> {
    let (mut tx, site) = locked(state, org, site_id).await?;
    let before = store::sites::structure_tx(&mut tx, &site.id).await?;
    let mut after = before.clone();
    let out = change(&site, &mut after)?;
    let too_many = after.site_spaces.len() > MAX_ITEMS
        || after.sections.len() > MAX_ITEMS
        || after.groups.len() > MAX_ITEMS;
    if too_many {
        return Err(ApiError::bad_request(format!(
            "A site holds at most {} site spaces, {0} sections and {0} section groups.",
            MAX_ITEMS
        )));
    }
    store::sites::save_structure(&mut tx, &before, &after).await?;
    tx.commit().await?;
    let site = reload(state, &org.org.id, site_id).await?;
    Ok((out, site, after))
}

/// `spaces` of `createSite`: spaces to publish, or a new space.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum NewSiteSpaces {
    /// Existing spaces of the organization.
    Ids(Vec<String>),
    /// `sample` or `empty`: a new space made for the site.
    New(NewSpaceKind),
}

/// The kinds of new space `createSite` can make.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum NewSpaceKind {
    /// A space with a welcome page.
    Sample,
    /// An empty space.
    Empty,
}

const SAMPLE_PAGE: &str = "# Welcome\n\nThis site is published by Quire. Edit this page in a change request, merge it, and the site shows the new content.\n\n{% hint style=\"info\" %}\nEvery block of the GitBook dialect renders here.\n{% endhint %}\n";

/// A new site: each field not given takes its default.
#[derive(Default)]
pub struct NewSite {
    /// `basic` unless given.
    pub site_type: Option<SiteType>,
    /// `Untitled site` unless given (2 to 128 characters).
    pub title: Option<String>,
    /// `public` unless given.
    pub visibility: Option<SiteVisibility>,
    /// Spaces to publish, or a new space.
    pub spaces: Option<NewSiteSpaces>,
}

/// Creates a site (organization admins) publishing `spaces` or a new space.
pub async fn create(
    state: &AppState,
    org: &OrgCtx,
    caller: &Caller,
    new: NewSite,
) -> ApiResult<SiteRow> {
    org.require_admin("create sites")?;
    let title = new.title.unwrap_or_else(|| "Untitled site".into());
    crate::validate::length("title", &title, 2, 128)?;
    let mut spaces = Vec::new();
    let mut new_space = None;
    match &new.spaces {
        None => {}
        Some(NewSiteSpaces::Ids(ids)) => {
            if ids.len() > MAX_ITEMS {
                return Err(ApiError::bad_request(format!(
                    "`spaces` holds at most {} spaces.",
                    MAX_ITEMS
                )));
            }
            for id in ids {
                let space = live_space(state, &org.org.id, "spaces", id).await?;
                if !spaces.iter().any(|s: &SpaceRow| s.id == space.id) {
                    spaces.push(space);
                }
            }
        }
        Some(NewSiteSpaces::New(kind)) => new_space = Some(*kind),
    }
    let now = state.now();
    let site = SiteRow {
        id: new_id(),
        org_id: org.org.id.to_string(),
        site_type: new.site_type.unwrap_or(SiteType::Basic),
        title,
        visibility: new.visibility.unwrap_or(SiteVisibility::Public),
        basename: None,
        hostname: None,
        proxy: None,
        published: 0,
        adaptive_content: 0,
        agents_context: AgentsContext::Included,
        default_site_space: None,
        default_section: None,
        customization: None,
        customization_updated_at: None,
        adaptive_schema: None,
        adaptive_schema_updated_at: None,
        created_at: now,
        updated_at: now,
        site_spaces: 0,
    };
    let mut tx = state.db.begin().await?;
    tx.touches(&[
        crate::cache::Scope::Site(&site.id),
        crate::cache::Scope::Org(org.org.id.as_str()),
    ]);
    let mut saved = None;
    if let Some(kind) = new_space {
        let (space, content) = crate::domain::spaces::create(
            state,
            &mut tx,
            &org.org.id,
            &site.title,
            (kind == NewSpaceKind::Sample).then_some(SAMPLE_PAGE),
            &caller.user.id,
            now,
        )
        .await?;
        spaces.push(space);
        saved = content;
    }
    store::sites::insert(&mut tx, &site).await?;
    let mut after = Structure::default();
    for space in &spaces {
        let ss = new_site_space(&after, &site.id, None, space, now);
        after.site_spaces.push(ss);
    }
    store::sites::save_structure(&mut tx, &Structure::default(), &after).await?;
    tx.commit().await?;
    if let Some(saved) = saved {
        crate::domain::content::remember(state, saved);
    }
    reload(state, &org.org.id, &site.id).await
}

/// Publishes or unpublishes a site (organization admins).
pub async fn set_published(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    published: bool,
) -> ApiResult<SiteRow> {
    org.require_admin("publish sites")?;
    let patch = SitePatch {
        published: Some(published),
        ..SitePatch::default()
    };
    patch_site(state, org, site_id, &patch).await
}

/// Adds `space_id` (a live space of the organization) to a site (organization admins),
/// at the end of `section` (or of the default section); answers the new site space's id
/// with the site and its structure.
pub async fn add_space(
    state: &AppState,
    org: &OrgCtx,
    site_id: &str,
    space_id: &str,
    section: Option<&str>,
) -> ApiResult<(String, SiteRow, Structure)> {
    org.require_admin("change sites")?;
    let space = live_space(state, &org.org.id, "spaceId", space_id).await?;
    let now = state.now();
    let (id, site, after) = edit(state, org, site_id, |site, s| {
        let section = match section {
            Some(id) => Some(
                s.sections
                    .iter()
                    .find(|x| x.id == id)
                    .ok_or_else(|| {
                        ApiError::bad_request(format!(
                            "`sectionId`: no section `{id}` in this site."
                        ))
                    })?
                    .id
                    .clone(),
            ),
            None => default_section(site, s).map(|x| x.id.clone()),
        };
        let ss = new_site_space(s, &site.id, section.as_deref(), &space, now);
        let id = ss.id.clone();
        s.site_spaces.push(ss);
        Ok(id)
    })
    .await?;
    Ok((id, site, after))
}

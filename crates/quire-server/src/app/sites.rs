//! Docs sites in the app: the sites of an organization, a site's spaces, sections and
//! groups and its state, and for organization admins the forms that create a site, add
//! spaces and sections to it, change a section's settings, regroup, make default and
//! remove sections, change, make default and remove site spaces, add, rename and delete
//! groups, move any item up or down, change its look (customization basics), publish and
//! unpublish it, through the domain's site workflows (the API's own: `domain::sites`,
//! `domain::site_structure`); and its custom hostname's state, with the DNS record that
//! proves its control (which the API's `CustomHostname` has no field for) and a check.

use std::fmt::Write as _;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use quire_content::html::{escape_attr as attr, escape_text as text};

use super::session;
use super::shell::{failed, not_found, options, org_for, page, run_write, Viewer};
use crate::domain::access::OrgCtx;
use crate::domain::auth::Caller;
use crate::domain::hostnames;
use crate::domain::insights;
use crate::domain::share_links;
use crate::domain::site_structure;
use crate::domain::sites::{self, Item, NewSite, NewSiteSpaces, Top, Urls};
use crate::domain::visitor;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::sites::{SectionRow, SiteSpaceRow, Structure};
use crate::store::spaces::SpaceRow;
use crate::values::SiteVisibility;

/// Most sites the organization screen lists.
const SHOWN: i64 = 100;

/// The sites section of the organization screen (non-guests), with the new-site form for
/// admins; `spaces` are the spaces the viewer may read.
pub async fn section(
    state: &AppState,
    org: &OrgCtx,
    viewer: &Viewer<'_>,
    spaces: &[SpaceRow],
) -> ApiResult<String> {
    if org.role.is_none() {
        return Ok(String::new());
    }
    let id = attr(org.org.id.as_str());
    let (list, _) =
        store::sites::list(&state.db, &org.org.id, &Default::default(), None, SHOWN).await?;
    let mut out = String::from("<h2>Sites</h2>");
    if list.is_empty() {
        out.push_str("<p class=\"muted\">No docs site yet.</p>");
    } else {
        out.push_str("<ul class=\"sites\">");
        for s in &list {
            let _ = write!(
                out,
                "<li><a href=\"/o/{id}/sites/{}\">{}</a> <span class=\"muted\">{}</span></li>",
                attr(&s.id),
                text(&s.title),
                if s.published != 0 {
                    "published"
                } else {
                    "not published"
                }
            );
        }
        out.push_str("</ul>");
    }
    if !org.is_admin() {
        return Ok(out);
    }
    let _ = write!(
        out,
        "<form method=\"post\" action=\"/o/{id}/sites\"><input type=\"hidden\" name=\"csrf\" value=\"{}\">\
<input type=\"hidden\" name=\"op\" value=\"create\"><h3>New site</h3>\
<label for=\"site-title\">Title</label><input id=\"site-title\" name=\"subject\" type=\"text\" required minlength=\"2\" maxlength=\"128\">",
        attr(viewer.csrf)
    );
    if !spaces.is_empty() {
        out.push_str("<fieldset><legend>Spaces to publish</legend>");
        for (i, s) in spaces.iter().enumerate() {
            let _ = write!(
                out,
                "<p><input id=\"site-space-{i}\" type=\"checkbox\" name=\"spaces\" value=\"{}\"> <label for=\"site-space-{i}\" class=\"plain\">{}</label></p>",
                attr(&s.id),
                text(&s.title)
            );
        }
        out.push_str("</fieldset>");
    }
    out.push_str("<button type=\"submit\">Create the site</button></form>");
    Ok(out)
}

async fn org_of(state: &AppState, caller: &Caller, org_id: &str) -> Option<OrgCtx> {
    // As the API: guests do not read sites.
    org_for(state, caller, org_id)
        .await
        .filter(|o| o.role.is_some())
}

/// `GET /o/{organizationId}/sites/{siteId}`: a docs site, its state, address, spaces and
/// sections; for admins, the forms that change them, its look and who reads it.
pub async fn screen(
    State(state): State<AppState>,
    Path((org_id, site_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let here = format!("/o/{org_id}/sites/{site_id}");
    let signed = match session::require(&state, &headers, &here).await {
        Ok(s) => s,
        Err(res) => return res,
    };
    let viewer = signed.viewer();
    let caller = signed.caller();
    let missing = "This site does not exist, or you may not see it.";
    let Some(org) = org_of(&state, &caller, &org_id).await else {
        return not_found(Some(&viewer), missing);
    };
    let site = match store::sites::get(&state.db, org.org.id.as_str(), &site_id).await {
        Ok(Some(s)) => s,
        Ok(None) => return not_found(Some(&viewer), missing),
        Err(e) => return failed(e),
    };
    let structure = match store::sites::structure(&state.db, &site.id).await {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let ids: Vec<&str> = structure
        .site_spaces
        .iter()
        .map(|s| s.space_id.as_str())
        .collect();
    let published_spaces = match store::spaces::get_many(&state.db, &ids).await {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let url = Urls::new(&state, &site, None).site();
    let oid = attr(org.org.id.as_str());
    let mut body = format!(
        "<nav class=\"crumbs\" aria-label=\"Breadcrumb\"><ol><li><a href=\"/o/{oid}\">{}</a></li></ol></nav>\
<h1>{}</h1><dl><dt>Visibility</dt><dd>{}</dd><dt>State</dt><dd>{}</dd></dl>",
        text(&org.org.title),
        text(&site.title),
        text(site.visibility.as_str()),
        if site.published != 0 { "Published" } else { "Not published" }
    );
    if site.published != 0 {
        let _ = write!(
            body,
            "<p><a href=\"{}\">Open the published site</a></p>",
            attr(&url)
        );
    }
    let oid_site = format!("/o/{oid}/sites/{}", attr(&site.id));
    let hidden = format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        attr(viewer.csrf)
    );
    let forms = org
        .is_admin()
        .then_some((oid_site.as_str(), hidden.as_str()));
    body.push_str(&structure_section(
        &site,
        &structure,
        &published_spaces,
        forms,
    ));
    match insights(&state, &site.id).await {
        Ok(section) => body.push_str(&section),
        Err(e) => return failed(e),
    }
    if org.is_admin() {
        let action = oid_site;
        let candidates = match store::spaces::list_live(&state.db, org.org.id.as_str(), None).await
        {
            Ok(s) => s,
            Err(e) => return failed(e),
        };
        // The spaces that may be added (at most 500 offered).
        let spaces_offered = options(
            candidates
                .iter()
                .take(500)
                .map(|s| (s.id.as_str(), s.title.as_str())),
            "",
        );
        let _ = write!(
            body,
            "<form method=\"post\" action=\"{action}\">{hidden}<input type=\"hidden\" name=\"op\" value=\"add\">\
<label for=\"add-space\">Add a space</label><select id=\"add-space\" name=\"parent\">"
        );
        body.push_str(&spaces_offered);
        body.push_str("</select>");
        if !structure.sections.is_empty() {
            body.push_str(
                "<label for=\"add-space-section\">In the section</label><select id=\"add-space-section\" name=\"section\"><option value=\"\">The default section</option>",
            );
            let sections = sites::ordered_sections(&structure);
            body.push_str(&options(
                sections.iter().map(|x| (x.id.as_str(), x.title.as_str())),
                "",
            ));
            body.push_str("</select>");
        }
        body.push_str("<button type=\"submit\">Add</button></form>");
        let _ = write!(
            body,
            "<form method=\"post\" action=\"{action}\">{hidden}<input type=\"hidden\" name=\"op\" value=\"section-add\">\
<h3>New section</h3><p class=\"muted\">A section holds a space of its own; the spaces already published move into a first section.</p>\
<label for=\"section-space\">Space</label><select id=\"section-space\" name=\"parent\">"
        );
        body.push_str(&spaces_offered);
        let _ = write!(
            body,
            "</select><label for=\"section-title\">Title (the space's when empty)</label>\
<input id=\"section-title\" name=\"subject\" type=\"text\" maxlength=\"128\">\
<button type=\"submit\">Add the section</button></form>"
        );
        if !structure.sections.is_empty() {
            let _ = write!(
                body,
                "<form method=\"post\" action=\"{action}\">{hidden}<input type=\"hidden\" name=\"op\" value=\"group-add\">\
<h3>New section group</h3><label for=\"group-title\">Title</label>\
<input id=\"group-title\" name=\"subject\" type=\"text\" required maxlength=\"100\">\
<button type=\"submit\">Add the group</button></form>"
            );
        }
        match address_section(&state, &site, &action, &hidden).await {
            Ok(section) => body.push_str(&section),
            Err(e) => return failed(e),
        }
        match customization_form(&site, &action, &hidden) {
            Ok(section) => body.push_str(&section),
            Err(e) => return failed(e),
        }
        match access_section(&state, &site, &action, &hidden).await {
            Ok(section) => body.push_str(&section),
            Err(e) => return failed(e),
        }
        let (op, label) = if site.published != 0 {
            ("unpublish", "Unpublish the site")
        } else {
            ("publish", "Publish the site")
        };
        let _ = write!(
            body,
            "<form method=\"post\" action=\"{action}\">{hidden}<input type=\"hidden\" name=\"op\" value=\"{op}\"><button type=\"submit\">{label}</button></form>"
        );
    }
    page(StatusCode::OK, &site.title, Some(&viewer), "", &body)
}

/// The site's spaces (a site without sections) or its sections, grouped, each with its
/// spaces; with `forms` (the action and the signed hidden fields, for admins) the forms
/// that change each item: a section's settings (title, path, icon, description,
/// condition, default space), its default and its group, a site space's path and
/// condition, a group's title, moving any of them a step up or down, and removing them.
fn structure_section(
    site: &store::sites::SiteRow,
    s: &Structure,
    spaces: &[SpaceRow],
    forms: Option<(&str, &str)>,
) -> String {
    let title_of = |ss: &SiteSpaceRow| {
        spaces
            .iter()
            .find(|x| x.id == ss.space_id)
            .map_or("A deleted space", |x| x.title.as_str())
    };
    // A form of one button acting on `item` of type `kind`.
    let button = |op: &str, kind: &str, id: &str, label: &str, class: &str| {
        let (action, hidden) = forms.unwrap_or_default();
        format!(
            "<form method=\"post\" action=\"{action}\" class=\"inline\">{hidden}\
<input type=\"hidden\" name=\"op\" value=\"{op}\"><input type=\"hidden\" name=\"kind\" value=\"{kind}\">\
<input type=\"hidden\" name=\"item\" value=\"{}\"><button type=\"submit\"{class}>{label}</button></form>",
            attr(id)
        )
    };
    // "Move up" and "Move down" where the item has a sibling that way.
    let arrows = |item: Item, title: &str| {
        let mut out = String::new();
        for (up, op, label) in [
            (true, "move-up", "Move up"),
            (false, "move-down", "Move down"),
        ] {
            if matches!(sites::neighbour(s, &item, up), Ok(Some(_))) {
                let label = format!("{label}<span class=\"sr\"> {}</span>", text(title));
                out.push_str(&button(op, item.kind(), item_id(&item), &label, ""));
            }
        }
        out
    };
    // Numbers for the ids of the site spaces' fields and of the sections'.
    let mut m = 0;
    let mut space_list = |section: Option<&SectionRow>| {
        let within = sites::site_spaces_in(s, section.map(|x| x.id.as_str()));
        if within.is_empty() {
            return "<p class=\"muted\">No space yet.</p>".to_string();
        }
        let mut out = String::from("<ul>");
        for ss in within {
            m += 1;
            let title = title_of(ss);
            let is_default = sites::is_default_site_space(site, s, ss);
            let _ = write!(
                out,
                "<li>{} <span class=\"muted\">/{}{}{}</span>",
                text(title),
                text(&ss.path),
                if is_default { " · default" } else { "" },
                if ss.condition.is_some() {
                    " · conditional"
                } else {
                    ""
                },
            );
            if let Some((action, hidden)) = forms {
                let _ = write!(
                    out,
                    "<div><details><summary>Settings<span class=\"sr\"> of {title}</span></summary>\
<form method=\"post\" action=\"{action}\">{hidden}<input type=\"hidden\" name=\"op\" value=\"site-space-edit\">\
<input type=\"hidden\" name=\"item\" value=\"{id}\">\
<label for=\"ss-{m}-path\">Path</label><input id=\"ss-{m}-path\" name=\"path\" type=\"text\" required maxlength=\"100\" value=\"{path}\">\
<label for=\"ss-{m}-condition\">Shown when (a condition on the visitor; empty for everyone)</label>\
<input id=\"ss-{m}-condition\" name=\"condition\" type=\"text\" maxlength=\"1024\" value=\"{condition}\">\
<button type=\"submit\">Save</button></form></details>",
                    title = text(title),
                    id = attr(&ss.id),
                    path = attr(&ss.path),
                    condition = attr(ss.condition.as_deref().unwrap_or("")),
                );
                if section.is_none() && !is_default {
                    let label = format!(
                        "Make it the default<span class=\"sr\"> {}</span>",
                        text(title)
                    );
                    out.push_str(&button(
                        "site-space-default",
                        "site-space",
                        &ss.id,
                        &label,
                        "",
                    ));
                }
                out.push_str(&arrows(Item::SiteSpace(ss.id.clone()), title));
                let label = format!(
                    "Take off the site<span class=\"sr\"> {}</span>",
                    text(title)
                );
                out.push_str(&button(
                    "site-space-remove",
                    "site-space",
                    &ss.id,
                    &label,
                    " class=\"danger\"",
                ));
                out.push_str("</div>");
            }
            out.push_str("</li>");
        }
        out.push_str("</ul>");
        out
    };
    if s.sections.is_empty() {
        return format!("<h2>Spaces</h2>{}", space_list(None));
    }
    let default = sites::default_section(site, s).map(|x| x.id.clone());
    let mut n = 0;
    let mut section_item = |x: &SectionRow| {
        n += 1;
        let is_default = default.as_deref() == Some(x.id.as_str());
        let mut out = format!(
            "<li><strong>{}</strong> <span class=\"muted\">/{}{}</span>",
            text(&x.title),
            text(&x.path),
            if is_default { " · default" } else { "" }
        );
        if let Some((action, hidden)) = forms {
            let fields = format!(
                "{hidden}<input type=\"hidden\" name=\"section\" value=\"{}\">",
                attr(&x.id)
            );
            let _ = write!(
                out,
                "<div><details><summary>Settings<span class=\"sr\"> of {title}</span></summary>\
<form method=\"post\" action=\"{action}\">{fields}<input type=\"hidden\" name=\"op\" value=\"section-edit\">\
<label for=\"section-{n}-title\">Title</label><input id=\"section-{n}-title\" name=\"subject\" type=\"text\" required minlength=\"2\" maxlength=\"128\" value=\"{value}\">\
<label for=\"section-{n}-path\">Path</label><input id=\"section-{n}-path\" name=\"path\" type=\"text\" required maxlength=\"100\" value=\"{path}\">\
<label for=\"section-{n}-icon\">Icon (a name such as <code>book</code>; empty for none)</label><input id=\"section-{n}-icon\" name=\"icon\" type=\"text\" maxlength=\"50\" value=\"{icon}\">\
<label for=\"section-{n}-description\">Description</label><input id=\"section-{n}-description\" name=\"description\" type=\"text\" maxlength=\"256\" value=\"{description}\">\
<label for=\"section-{n}-condition\">Shown when (a condition on the visitor; empty for everyone)</label><input id=\"section-{n}-condition\" name=\"condition\" type=\"text\" maxlength=\"1024\" value=\"{condition}\">",
                title = text(&x.title),
                value = attr(&x.title),
                path = attr(&x.path),
                icon = attr(x.icon.as_deref().unwrap_or("")),
                description = attr(x.description.as_deref().unwrap_or("")),
                condition = attr(x.condition.as_deref().unwrap_or("")),
            );
            let within = sites::site_spaces_in(s, Some(&x.id));
            if !within.is_empty() {
                let current =
                    sites::default_site_space(site, s, Some(x)).map_or("", |d| d.id.as_str());
                let _ = write!(
                    out,
                    "<label for=\"section-{n}-default\">Space a visitor lands on</label><select id=\"section-{n}-default\" name=\"defaultspace\">"
                );
                out.push_str(&options(
                    within.iter().map(|ss| (ss.id.as_str(), title_of(ss))),
                    current,
                ));
                out.push_str("</select>");
            }
            out.push_str("<button type=\"submit\">Save</button></form></details>");
            if !is_default {
                let _ = write!(
                    out,
                    "<form method=\"post\" action=\"{action}\" class=\"inline\">{fields}<input type=\"hidden\" name=\"op\" value=\"section-default\">\
<button type=\"submit\">Make it the default</button></form>"
                );
            }
            if !s.groups.is_empty() {
                let _ = write!(
                    out,
                    "<form method=\"post\" action=\"{action}\" class=\"inline\">{fields}<input type=\"hidden\" name=\"op\" value=\"section-group\">\
<label class=\"sr\" for=\"section-{n}-group\">Group of {}</label><select id=\"section-{n}-group\" name=\"group\"><option value=\"\">No group</option>",
                    attr(&x.title)
                );
                out.push_str(&options(
                    s.groups.iter().map(|g| (g.id.as_str(), g.title.as_str())),
                    x.group_id.as_deref().unwrap_or(""),
                ));
                out.push_str("</select><button type=\"submit\">Move</button></form>");
            }
            out.push_str(&arrows(Item::Section(x.id.clone()), &x.title));
            let _ = write!(
                out,
                "<form method=\"post\" action=\"{action}\" class=\"inline\">{fields}<input type=\"hidden\" name=\"op\" value=\"section-remove\">\
<button type=\"submit\" class=\"danger\">Remove the section<span class=\"sr\"> {}</span></button></form></div>",
                text(&x.title)
            );
        }
        out.push_str(&space_list(Some(x)));
        out.push_str("</li>");
        out
    };
    let mut out = String::from("<h2>Sections</h2><ul class=\"structure\">");
    for item in sites::top_level(s) {
        match item {
            Top::Section(x) => out.push_str(&section_item(x)),
            Top::Group(g) => {
                let _ = write!(
                    out,
                    "<li><strong>{}</strong> <span class=\"muted\">group</span>",
                    text(&g.title)
                );
                if let Some((action, hidden)) = forms {
                    let fields = format!(
                        "{hidden}<input type=\"hidden\" name=\"group\" value=\"{}\">",
                        attr(&g.id)
                    );
                    let _ = write!(
                        out,
                        "<div><form method=\"post\" action=\"{action}\" class=\"inline\">{fields}<input type=\"hidden\" name=\"op\" value=\"group-rename\">\
<label class=\"sr\" for=\"group-{id}-title\">New title of the group {title}</label><input id=\"group-{id}-title\" name=\"subject\" type=\"text\" required maxlength=\"100\" value=\"{title}\">\
<button type=\"submit\">Rename</button></form>",
                        id = attr(&g.id),
                        title = attr(&g.title)
                    );
                    out.push_str(&arrows(Item::Group(g.id.clone()), &g.title));
                    let _ = write!(
                        out,
                        "<form method=\"post\" action=\"{action}\" class=\"inline\">{fields}<input type=\"hidden\" name=\"op\" value=\"group-delete\">\
<button type=\"submit\" class=\"danger\">Delete the group (its sections stay)<span class=\"sr\"> {}</span></button></form></div>",
                        text(&g.title)
                    );
                }
                out.push_str("<ul>");
                for x in sites::group_sections(s, &g.id) {
                    out.push_str(&section_item(x));
                }
                out.push_str("</ul></li>");
            }
        }
    }
    out.push_str("</ul>");
    out
}

fn item_id(item: &Item) -> &str {
    match item {
        Item::SiteSpace(id) | Item::Section(id) | Item::Group(id) => id,
    }
}

/// The customization basics, for admins: the title visitors see, the primary colour in
/// each theme, the theme a visitor starts in, and the font.
fn customization_form(
    site: &store::sites::SiteRow,
    action: &str,
    hidden: &str,
) -> ApiResult<String> {
    let c = sites::customization_of(site)?;
    let styling = &c["styling"];
    let color = |mode: &str| {
        styling["primaryColor"][mode]
            .as_str()
            .unwrap_or("#346DDB")
            .to_ascii_lowercase()
    };
    let mut o = format!(
        "<h2>Look</h2><form method=\"post\" action=\"{action}\">{hidden}<input type=\"hidden\" name=\"op\" value=\"customize\">\
<label for=\"custom-title\">Title visitors see</label><input id=\"custom-title\" name=\"subject\" type=\"text\" required minlength=\"2\" maxlength=\"128\" value=\"{}\">\
<fieldset><legend>Primary colour</legend>\
<label for=\"custom-light\">In the light theme</label><input id=\"custom-light\" name=\"light\" type=\"color\" value=\"{}\">\
<label for=\"custom-dark\">In the dark theme</label><input id=\"custom-dark\" name=\"dark\" type=\"color\" value=\"{}\"></fieldset>\
<label for=\"custom-theme\">Theme visitors start in</label><select id=\"custom-theme\" name=\"theme\">",
        attr(c["title"].as_str().unwrap_or(&site.title)),
        attr(&color("light")),
        attr(&color("dark")),
    );
    let theme = c["themes"]["default"].as_str().unwrap_or("light");
    for mode in site_structure::THEME_MODES {
        let _ = write!(
            o,
            "<option value=\"{mode}\"{}>{mode}</option>",
            if mode == theme { " selected" } else { "" }
        );
    }
    o.push_str(
        "</select><label for=\"custom-font\">Font</label><select id=\"custom-font\" name=\"font\">",
    );
    let font = &styling["font"];
    if let Some(family) = font.get("fontFamily").and_then(|f| f.as_str()) {
        // A custom font (set through the API) stays unless another is chosen.
        let _ = write!(
            o,
            "<option value=\"\" selected>{} (custom)</option>",
            text(family)
        );
    }
    for name in crate::domain::fonts::DEFAULT_FONTS {
        let _ = write!(
            o,
            "<option value=\"{name}\"{}>{name}</option>",
            if font.as_str() == Some(name) {
                " selected"
            } else {
                ""
            }
        );
    }
    o.push_str("</select><button type=\"submit\">Save the look</button></form>");
    Ok(o)
}

/// Who reads the site, for its admins: its visibility, the key that signs its visitor tokens
/// (a `visitor-auth` site), and its share links (each with its address, on or off, deleted),
/// which open a `share-link` site.
async fn access_section(
    state: &AppState,
    site: &store::sites::SiteRow,
    action: &str,
    hidden: &str,
) -> ApiResult<String> {
    let mut o = format!(
        "<h2>Who reads it</h2><form method=\"post\" action=\"{action}\">{hidden}\
<input type=\"hidden\" name=\"op\" value=\"visibility\"><label for=\"site-visibility\">Visibility</label>\
<select id=\"site-visibility\" name=\"visibility\">"
    );
    for v in SiteVisibility::ALL {
        let _ = write!(
            o,
            "<option value=\"{0}\"{1}>{0}</option>",
            v.as_str(),
            if *v == site.visibility {
                " selected"
            } else {
                ""
            }
        );
    }
    o.push_str("</select><button type=\"submit\">Save</button></form>");
    if site.visibility == SiteVisibility::VisitorAuth {
        // The key signs visitor tokens: shown on demand to the admins alone.
        let auth = visitor::settings(state, &site.id).await?;
        let _ = write!(
            o,
            "<h3>Visitor key</h3><p class=\"muted\">Your sign-in service signs visitor tokens (HS256) \
with this key.</p><details><summary>Show the key</summary><code>{}</code></details>\
<form method=\"post\" action=\"{action}\">{hidden}<input type=\"hidden\" name=\"op\" value=\"regenerate-key\">\
<button type=\"submit\">Make a new key (tokens signed with this one stop working)</button></form>",
            text(&auth.private_key)
        );
    }
    o.push_str("<h3>Share links</h3>");
    let (links, _) = store::sites::list_share_links(&state.db, &site.id, None, 100).await?;
    if links.is_empty() {
        o.push_str("<p class=\"muted\">No share link yet.</p>");
    } else {
        o.push_str("<ul>");
        for l in &links {
            let url = Urls::new(state, site, Some(&l.share_key)).site();
            let (op, label) = if l.active != 0 {
                ("link-off", "Turn off")
            } else {
                ("link-on", "Turn on")
            };
            let link = format!(
                "{hidden}<input type=\"hidden\" name=\"link\" value=\"{}\">",
                attr(&l.id)
            );
            let _ = write!(
                o,
                "<li>{} <span class=\"muted\">{}</span> <input readonly aria-label=\"Address of {}\" value=\"{}\">\
<form method=\"post\" action=\"{action}\">{link}<input type=\"hidden\" name=\"op\" value=\"{op}\"><button type=\"submit\">{label}</button></form>\
<form method=\"post\" action=\"{action}\">{link}<input type=\"hidden\" name=\"op\" value=\"link-delete\"><button type=\"submit\">Delete</button></form></li>",
                text(if l.name.is_empty() { "Unnamed link" } else { &l.name }),
                if l.active != 0 { "on" } else { "off" },
                attr(&l.name),
                attr(&url),
            );
        }
        o.push_str("</ul>");
    }
    let _ = write!(
        o,
        "<form method=\"post\" action=\"{action}\">{hidden}<input type=\"hidden\" name=\"op\" value=\"link-create\">\
<label for=\"link-name\">New share link</label><input id=\"link-name\" name=\"subject\" maxlength=\"50\" placeholder=\"Partners\">\
<button type=\"submit\">Create</button></form>"
    );
    Ok(o)
}

/// The site's custom hostname, if it has one: whether it is served, its latest check, the
/// TXT record that proves its control until it is proven, and the button that checks.
async fn address_section(
    state: &AppState,
    site: &store::sites::SiteRow,
    action: &str,
    hidden: &str,
) -> ApiResult<String> {
    let Some(host) = &site.hostname else {
        return Ok(String::new());
    };
    let held = store::hostnames::holder(&state.db, host).await?;
    let (status, proven) = held
        .filter(|h| h.site_id == site.id)
        .map(|h| (h.hostname_status, h.hostname_verified_at.is_some()))
        .unwrap_or_default();
    let mut o = format!(
        "<h2>Custom hostname</h2><dl><dt>Hostname</dt><dd><code>{}</code></dd><dt>Served there</dt><dd>{}</dd><dt>Latest check</dt><dd>{}</dd></dl>",
        text(host),
        if proven {
            "Yes: its control is proven"
        } else {
            "Not yet: prove that you control it"
        },
        text(status.as_deref().unwrap_or("not checked yet"))
    );
    if !proven {
        let c = hostnames::challenge(state, &site.id, host);
        let _ = write!(
            o,
            "<p>Add this TXT record to the hostname's DNS, then check. The site is served on the hostname once the record is found; the record may be removed afterwards.</p><dl class=\"hostname-challenge\"><dt>Name</dt><dd><code>{}</code></dd><dt>Value</dt><dd><code>{}</code></dd></dl>",
            text(&c.name),
            text(&c.value)
        );
    }
    let _ = write!(
        o,
        "<form method=\"post\" action=\"{action}\">{hidden}<input type=\"hidden\" name=\"op\" value=\"hostname-check\"><button type=\"submit\">Check the hostname now</button></form>"
    );
    Ok(o)
}

/// The site's insights: page views and searches per day over the last 30 days, its top pages
/// and its top searches (`domain::insights`, as `aggregateSiteEvents` answers them), drawn
/// as charts made here (SVG, no script), each with its numbers in a table or list that
/// screen readers read.
async fn insights(state: &AppState, site_id: &str) -> ApiResult<String> {
    let ask = |q: serde_json::Value| async move { insights::aggregate(state, site_id, &q).await };
    let of_type = |ty: &str| serde_json::json!([{ "column": "eventType", "values": [ty] }]);
    let per_day = |ty: &str| {
        serde_json::json!({
            "range": "last30Days",
            "groupBy": [{ "column": "datetime", "interval": "day" }],
            "where": of_type(ty),
        })
    };
    let views = ask(per_day("page_view")).await?;
    let searched = ask(per_day("search_type_query")).await?;
    let pages = ask(serde_json::json!({
        "range": "last30Days",
        "groupBy": [{ "column": "page" }],
        "where": of_type("page_view"),
        "limit": 10,
    }))
    .await?;
    let searches = ask(serde_json::json!({
        "range": "last30Days",
        "groupBy": [{ "column": "eventSearchQuery" }],
        "limit": 10,
    }))
    .await?;
    let col = |a: &insights::Aggregation, i: usize| a.columns[i].values.clone();
    // Every day of the last 30, those without an event too.
    let today = state.now().div_euclid(86_400_000);
    let days = |a: &insights::Aggregation| -> Vec<(String, i64)> {
        let counted: std::collections::HashMap<String, i64> = col(a, 0)
            .iter()
            .zip(col(a, 1))
            .filter_map(|(d, n)| Some((d.as_str()?.get(..10)?.to_string(), n.as_i64()?)))
            .collect();
        (0..30)
            .rev()
            .map(|back| {
                let day = crate::clock::iso((today - back) * 86_400_000)[..10].to_string();
                let n = counted.get(&day).copied().unwrap_or(0);
                (day, n)
            })
            .collect()
    };
    let mut top_pages = Vec::new();
    for (p, n) in col(&pages, 0).iter().zip(col(&pages, 1)) {
        let title = match (p["space"].as_str(), p["page"].as_str()) {
            (Some(space), Some(page)) => insights::page_title(state, space, page)
                .await?
                .unwrap_or_else(|| "A removed page".into()),
            _ => "Other pages".into(),
        };
        top_pages.push((title, n.as_i64().unwrap_or(0)));
    }
    let top_searches: Vec<(String, i64)> = col(&searches, 0)
        .iter()
        .zip(col(&searches, 1))
        .map(|(q, n)| {
            (
                q.as_str().unwrap_or("").to_string(),
                n.as_i64().unwrap_or(0),
            )
        })
        .collect();
    let html = maud::html! {
        h2 { "Insights" }
        (daily_chart("views", "Page views per day", ("page view", "page views"), &days(&views)))
        (daily_chart("searches", "Searches per day", ("search", "searches"), &days(&searched)))
        (ranking("Top pages", "No page view yet.", ("view", "views"), &top_pages))
        (ranking("Top searches", "No search yet.", ("search", "searches"), &top_searches))
    };
    Ok(html.into_string())
}

/// Width and height of a daily chart's drawing, in its own units.
const CHART_W: i64 = 600;
const CHART_H: i64 = 120;

/// A bar chart of 30 days (`days`: ISO date and count, oldest first), with its numbers in a
/// table a click away (and always to screen readers, which the drawing names).
fn daily_chart(id: &str, title: &str, what: (&str, &str), days: &[(String, i64)]) -> maud::Markup {
    let total: i64 = days.iter().map(|(_, n)| n).sum();
    let most = days.iter().map(|(_, n)| *n).max().unwrap_or(0).max(1);
    let slot = CHART_W / days.len().max(1) as i64;
    let summary = format!(
        "{} in the last 30 days, at most {most} in a day.",
        counted(total, what)
    );
    maud::html! {
        section.chart aria-labelledby={ "chart-" (id) } {
            h3 id={ "chart-" (id) } { (title) }
            p { (counted(total, what)) " in the last 30 days." }
            svg.bars role="img" viewBox={ "0 0 " (CHART_W) " " (CHART_H + 16) }
                aria-labelledby={ "chart-" (id) "-title" } {
                title id={ "chart-" (id) "-title" } { (title) ": " (summary) }
                line.axis x1="0" y1=(CHART_H) x2=(CHART_W) y2=(CHART_H) {}
                @for (i, (day, n)) in days.iter().enumerate() {
                    @let h = n * (CHART_H - 4) / most;
                    rect x=(i as i64 * slot + 2) y=(CHART_H - h) width=(slot - 4) height=(h) {
                        title { (day) ": " (counted(*n, what)) }
                    }
                }
                text.label x="0" y=(CHART_H + 14) { (days.first().map_or("", |d| d.0.as_str())) }
                text.label x=(CHART_W) y=(CHART_H + 14) text-anchor="end" { (days.last().map_or("", |d| d.0.as_str())) }
            }
            details {
                summary { "The numbers" }
                table {
                    thead { tr { th scope="col" { "Day" } th scope="col" { (what.1) } } }
                    tbody {
                        @for (day, n) in days {
                            tr { td { (day) } td { (n) } }
                        }
                    }
                }
            }
        }
    }
}

/// `n` with its noun (`what`: singular, plural).
fn counted(n: i64, what: (&str, &str)) -> String {
    format!("{n} {}", if n == 1 { what.0 } else { what.1 })
}

/// A ranked list (label, count) with a bar beside each, drawn to scale with the first.
fn ranking(title: &str, empty: &str, what: (&str, &str), items: &[(String, i64)]) -> maud::Markup {
    let most = items.iter().map(|(_, n)| *n).max().unwrap_or(0).max(1);
    maud::html! {
        h3 { (title) }
        @if items.is_empty() {
            p.muted { (empty) }
        } @else {
            ol.ranking {
                @for (label, n) in items {
                    li {
                        span.name { (label) }
                        " "
                        span.count { (counted(*n, what)) }
                        svg.bar aria-hidden="true" viewBox="0 0 100 8" preserveAspectRatio="none" {
                            rect x="0" y="0" height="8" width=(n * 100 / most) {}
                        }
                    }
                }
            }
        }
    }
}

/// `POST /o/{organizationId}/sites` (`op=create`) and `POST /o/{organizationId}/sites/{siteId}`
/// (`op=publish`, `unpublish`, `add`, `visibility`, `regenerate-key`, `link-…`, `section-…`,
/// `group-…`, `site-space-…`, `move-up`, `move-down`, `customize`): a site change, then the
/// site's screen.
pub async fn act(
    State(state): State<AppState>,
    Path(params): Path<Vec<(String, String)>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let org_id = param("organizationId").unwrap_or_default();
    let site_id = param("siteId");
    let here = match &site_id {
        Some(s) => format!("/o/{org_id}/sites/{s}"),
        None => format!("/o/{org_id}"),
    };
    let (signed, form) = match session::signed_form(&state, &headers, &here, body).await {
        Ok(signed_form) => signed_form,
        Err(res) => return res,
    };
    let viewer = signed.viewer();
    let caller = signed.caller();
    let Some(org) = org_of(&state, &caller, &org_id).await else {
        return not_found(
            Some(&viewer),
            "This site does not exist, or you may not see it.",
        );
    };
    let run = {
        let state = state.clone();
        async move {
            let oid = org.org.id.to_string();
            match (form.op.as_deref().unwrap_or(""), site_id) {
                ("create", None) => {
                    let new = NewSite {
                        title: form.subject.clone(),
                        spaces: Some(NewSiteSpaces::Ids(form.spaces.clone())),
                        ..Default::default()
                    };
                    let site = sites::create(&state, &org, &caller, new).await?;
                    Ok(format!("/o/{oid}/sites/{}", site.id))
                }
                ("publish" | "unpublish", Some(site)) => {
                    let publish = form.op.as_deref() == Some("publish");
                    sites::set_published(&state, &org, &site, publish).await?;
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                ("visibility", Some(site)) => {
                    org.require_admin("change who reads a site")?;
                    let wanted = form.visibility.as_deref().unwrap_or("");
                    let visibility = SiteVisibility::parse(wanted).ok_or_else(|| {
                        ApiError::bad_request(format!(
                            "`visibility` must be one of {}.",
                            SiteVisibility::names()
                        ))
                    })?;
                    sites::reload(&state, &oid, &site).await?;
                    let patch = store::sites::SitePatch {
                        visibility: Some(visibility),
                        ..Default::default()
                    };
                    sites::patch_site(&state, &org, &site, &patch).await?;
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                ("regenerate-key", Some(site)) => {
                    org.require_admin("replace a site's visitor key")?;
                    let row = sites::reload(&state, &oid, &site).await?;
                    visitor::regenerate(&state, &row).await?;
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                ("link-create" | "link-on" | "link-off" | "link-delete", Some(site)) => {
                    org.require_admin("manage a site's share links")?;
                    sites::reload(&state, &oid, &site).await?;
                    let link = form.link.clone().unwrap_or_default();
                    match form.op.as_deref() {
                        Some("link-create") => {
                            let name = form.subject.clone().unwrap_or_default();
                            share_links::create(&state, &site, name.trim().to_string()).await?;
                        }
                        Some("link-delete") => share_links::delete(&state, &site, &link).await?,
                        on_off => {
                            let active = Some(on_off == Some("link-on"));
                            share_links::update(&state, &site, &link, None, active).await?;
                        }
                    }
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                ("hostname-check", Some(site)) => {
                    org.require_admin("check a site's hostname")?;
                    let row = sites::reload(&state, &oid, &site).await?;
                    if let Some(host) = &row.hostname {
                        hostnames::revalidate(&state, &caller, host).await?;
                    }
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                ("add", Some(site)) => {
                    let space = form.parent.clone().unwrap_or_default();
                    let section = given(&form.section);
                    sites::add_space(&state, &org, &site, &space, section.as_deref()).await?;
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                (op, Some(site))
                    if op.starts_with("section-")
                        || op.starts_with("group-")
                        || op.starts_with("site-space-")
                        || op.starts_with("move-") =>
                {
                    structure_change(&state, &org, &site, op, &form).await?;
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                ("customize", Some(site)) => {
                    let primary_color = match (given(&form.light), given(&form.dark)) {
                        (None, None) => None,
                        (light, dark) => {
                            Some((light.unwrap_or_default(), dark.unwrap_or_default()))
                        }
                    };
                    let basics = site_structure::Basics {
                        title: form.subject.clone().map(|t| t.trim().to_string()),
                        primary_color,
                        theme: given(&form.theme),
                        font: given(&form.font),
                    };
                    site_structure::customize_basics(&state, &org, &site, basics).await?;
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                (other, _) => Err(ApiError::bad_request(format!(
                    "`op`: no site change `{other}` here."
                ))),
            }
        }
    };
    run_write(&viewer, &here, "Back", run).await
}

/// A form field given and not blank, trimmed.
fn given(field: &Option<String>) -> Option<String> {
    field
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// A change of the site's structure (`op` is `section-…`, `group-…`, `site-space-…` or
/// `move-…`), through the domain's site structure workflows.
async fn structure_change(
    state: &AppState,
    org: &OrgCtx,
    site: &str,
    op: &str,
    form: &session::Form,
) -> ApiResult<()> {
    let section = form.section.clone().unwrap_or_default();
    let group = form.group.clone().unwrap_or_default();
    let title = form.subject.as_deref().map(str::trim).unwrap_or_default();
    let item = form.item.clone().unwrap_or_default();
    // The settings forms send every field; one left blank (which arrives as absent)
    // clears what it sets.
    let clearable = |field: &Option<String>| Some(given(field));
    match op {
        "section-add" => {
            let space = form.parent.clone().unwrap_or_default();
            site_structure::add_section(state, org, site, &space, given(&form.subject), None)
                .await?;
        }
        "section-edit" => {
            let change = site_structure::SectionChange {
                title: form.subject.as_ref().map(|_| title.to_string()),
                path: form.path.as_deref().map(|p| p.trim().to_string()),
                default_site_space: given(&form.default_space),
                condition: clearable(&form.condition),
                icon: clearable(&form.icon),
                description: clearable(&form.description),
            };
            site_structure::update_section(state, org, site, &section, &change).await?;
        }
        "site-space-edit" => {
            let change = site_structure::SiteSpaceChange {
                path: form.path.as_deref().map(|p| p.trim().to_string()),
                condition: clearable(&form.condition),
                space_id: None,
            };
            site_structure::update_site_space(state, org, site, &item, &change).await?;
        }
        "site-space-default" => {
            sites::update(state, org, site, Default::default(), Some(item)).await?;
        }
        "site-space-remove" => {
            site_structure::remove_site_space(state, org, site, &item).await?;
        }
        "move-up" | "move-down" => {
            let kind = form.kind.as_deref().unwrap_or_default();
            let what = Item::parse(kind, &item, "kind")?;
            site_structure::step(state, org, site, &what, op == "move-up").await?;
        }
        "section-default" => {
            site_structure::set_default_section(state, org, site, &section).await?;
        }
        "section-remove" => {
            site_structure::delete_section(state, org, site, &section).await?;
        }
        "section-group" => {
            let to = given(&form.group);
            site_structure::set_group(state, org, site, &section, to.as_deref()).await?;
        }
        "group-add" => {
            site_structure::add_group(state, org, site, title, None, &[]).await?;
        }
        "group-rename" => {
            site_structure::update_group(state, org, site, &group, Some(title), None).await?;
        }
        "group-delete" => {
            site_structure::delete_group(state, org, site, &group).await?;
        }
        other => {
            return Err(ApiError::bad_request(format!(
                "`op`: no site change `{other}` here."
            )))
        }
    }
    Ok(())
}

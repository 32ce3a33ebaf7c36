//! Docs sites in the app: the sites of an organization, a site's spaces, sections and
//! groups and its state, and for organization admins the forms that create a site, add
//! spaces and sections to it, change a section's settings, regroup, make default and
//! remove sections, change, make default and remove site spaces, add, rename and delete
//! groups, move any item up or down, change its look (customization basics), publish and
//! unpublish it, through the domain's site workflows (the API's own: `domain::sites`,
//! `domain::site_structure`); and its custom hostname's state, with the DNS record that
//! proves its control (which the API's `CustomHostname` has no field for) and a check.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

use super::routes::InOrg;
use super::session::{Posted, Signed};
use super::shell::{failed, not_found, options, page, run_write, Viewer};
use crate::domain::access::OrgCtx;
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
) -> ApiResult<Markup> {
    if org.role.is_none() {
        return Ok(Markup::default());
    }
    let id = org.org.id.as_str();
    let (list, _) =
        store::sites::list(&state.db, &org.org.id, &Default::default(), None, SHOWN).await?;
    let out = html! {
        h2 { "Sites" }
        @if list.is_empty() {
            p.muted { "No docs site yet." }
        } @else {
            ul.sites {
                @for s in &list {
                    li {
                        a href={ "/o/" (id) "/sites/" (s.id) } { (s.title) }
                        " "
                        span.muted {
                            @if s.published != 0 { "published" } @else { "not published" }
                        }
                    }
                }
            }
        }
        @if org.is_admin() {
            form method="post" action={ "/o/" (id) "/sites" } {
                input type="hidden" name="csrf" value=(viewer.csrf);
                h3 { "New site" }
                label for="site-title" { "Title" }
                input id="site-title" name="subject" type="text" required minlength="2" maxlength="128";
                @if !spaces.is_empty() {
                    fieldset {
                        legend { "Spaces to publish" }
                        @for (i, s) in spaces.iter().enumerate() {
                            p {
                                input id={ "site-space-" (i) } type="checkbox" name="spaces" value=(s.id);
                                " "
                                label for={ "site-space-" (i) } class="plain" { (s.title) }
                            }
                        }
                    }
                }
                button type="submit" { "Create the site" }
            }
        }
    };
    Ok(out)
}

/// `GET /o/{organizationId}/sites/{siteId}`: a docs site, its state, address, spaces and
/// sections; for admins, the forms that change them, its look and who reads it. For
/// members: as in the API, guests do not read sites.
pub async fn screen(
    State(state): State<AppState>,
    Path((_, site_id)): Path<(String, String)>,
    signed: Signed,
    InOrg(org): InOrg,
) -> Response {
    let viewer = signed.viewer();
    let missing = "This site does not exist, or you may not see it.";
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
    let oid = org.org.id.as_str();
    let action = format!("/o/{oid}/sites/{}", site.id);
    let csrf = viewer.csrf;
    let forms = org.is_admin().then_some((action.as_str(), csrf));
    let structure_html = structure_section(&site, &structure, &published_spaces, forms);
    let insights_html = match insights(&state, &site.id).await {
        Ok(section) => section,
        Err(e) => return failed(e),
    };
    let admin_html = if org.is_admin() {
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
        let address = match address_section(&state, &site, &action, csrf).await {
            Ok(section) => section,
            Err(e) => return failed(e),
        };
        let look = match customization_form(&site, &action, csrf) {
            Ok(section) => section,
            Err(e) => return failed(e),
        };
        let access = match access_section(&state, &site, &action, csrf).await {
            Ok(section) => section,
            Err(e) => return failed(e),
        };
        let (op, label) = if site.published != 0 {
            ("unpublish", "Unpublish the site")
        } else {
            ("publish", "Publish the site")
        };
        Some(html! {
            form method="post" action=(action) {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="op" value="add";
                label for="add-space" { "Add a space" }
                select id="add-space" name="parent" { (spaces_offered) }
                @if !structure.sections.is_empty() {
                    label for="add-space-section" { "In the section" }
                    select id="add-space-section" name="section" {
                        option value="" { "The default section" }
                        (options(
                            sites::ordered_sections(&structure)
                                .iter()
                                .map(|x| (x.id.as_str(), x.title.as_str())),
                            "",
                        ))
                    }
                }
                button type="submit" { "Add" }
            }
            form method="post" action=(action) {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="op" value="section-add";
                h3 { "New section" }
                p.muted { "A section holds a space of its own; the spaces already published move into a first section." }
                label for="section-space" { "Space" }
                select id="section-space" name="parent" { (spaces_offered) }
                label for="section-title" { "Title (the space's when empty)" }
                input id="section-title" name="subject" type="text" maxlength="128";
                button type="submit" { "Add the section" }
            }
            @if !structure.sections.is_empty() {
                form method="post" action=(action) {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="op" value="group-add";
                    h3 { "New section group" }
                    label for="group-title" { "Title" }
                    input id="group-title" name="subject" type="text" required maxlength="100";
                    button type="submit" { "Add the group" }
                }
            }
            (address)
            (look)
            (access)
            form method="post" action=(action) {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="op" value=(op);
                button type="submit" { (label) }
            }
        })
    } else {
        None
    };
    let body = html! {
        nav class="crumbs" aria-label="Breadcrumb" {
            ol { li { a href={ "/o/" (oid) } { (org.org.title) } } }
        }
        h1 { (site.title) }
        dl {
            dt { "Visibility" }
            dd { (site.visibility.as_str()) }
            dt { "State" }
            dd { @if site.published != 0 { "Published" } @else { "Not published" } }
        }
        @if site.published != 0 {
            p { a href=(url) { "Open the published site" } }
        }
        (structure_html)
        (insights_html)
        @if let Some(admin) = admin_html {
            (admin)
        }
    };
    page(StatusCode::OK, &site.title, Some(&viewer), None, body)
}

/// The site's spaces (a site without sections) or its sections, grouped, each with its
/// spaces; with `forms` (the action and the session's CSRF token, for admins) the forms
/// that change each item: a section's settings (title, path, icon, description,
/// condition, default space), its default and its group, a site space's path and
/// condition, a group's title, moving any of them a step up or down, and removing them.
fn structure_section(
    site: &store::sites::SiteRow,
    s: &Structure,
    spaces: &[SpaceRow],
    forms: Option<(&str, &str)>,
) -> Markup {
    let title_of = |ss: &SiteSpaceRow| {
        spaces
            .iter()
            .find(|x| x.id == ss.space_id)
            .map_or("A deleted space", |x| x.title.as_str())
    };
    // A form of one button acting on `item` of type `kind`.
    let button = |op: &str, kind: &str, id: &str, label: Markup, class: Option<&str>| {
        let (action, csrf) = forms.unwrap_or_default();
        html! {
            form method="post" action=(action) class="inline" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="op" value=(op);
                input type="hidden" name="kind" value=(kind);
                input type="hidden" name="item" value=(id);
                button type="submit" class=[class] { (label) }
            }
        }
    };
    // "Move up" and "Move down" where the item has a sibling that way.
    let arrows = |item: Item, title: &str| {
        html! {
            @for (up, op, label) in [
                (true, "move-up", "Move up"),
                (false, "move-down", "Move down"),
            ] {
                @if matches!(sites::neighbour(s, &item, up), Ok(Some(_))) {
                    (button(op, item.kind(), item_id(&item), html! { (label) span.sr { " " (title) } }, None))
                }
            }
        }
    };
    // Numbers for the ids of the site spaces' fields and of the sections'.
    let mut m = 0;
    let mut space_list = |section: Option<&SectionRow>| {
        let within = sites::site_spaces_in(s, section.map(|x| x.id.as_str()));
        let first = m + 1;
        m += within.len();
        html! {
            @if within.is_empty() {
                p.muted { "No space yet." }
            } @else {
                ul {
                    @for (m, ss) in (first..).zip(&within) {
                        @let title = title_of(ss);
                        @let is_default = sites::is_default_site_space(site, s, ss);
                        li {
                            (title)
                            " "
                            span.muted {
                                "/" (ss.path)
                                @if is_default { " · default" }
                                @if ss.condition.is_some() { " · conditional" }
                            }
                            @if let Some((action, csrf)) = forms {
                                div {
                                    details {
                                        summary { "Settings" span.sr { " of " (title) } }
                                        form method="post" action=(action) {
                                            input type="hidden" name="csrf" value=(csrf);
                                            input type="hidden" name="op" value="site-space-edit";
                                            input type="hidden" name="item" value=(ss.id);
                                            label for={ "ss-" (m) "-path" } { "Path" }
                                            input id={ "ss-" (m) "-path" } name="path" type="text" required maxlength="100" value=(ss.path);
                                            label for={ "ss-" (m) "-condition" } { "Shown when (a condition on the visitor; empty for everyone)" }
                                            input id={ "ss-" (m) "-condition" } name="condition" type="text" maxlength="1024" value=(ss.condition.as_deref().unwrap_or(""));
                                            button type="submit" { "Save" }
                                        }
                                    }
                                    @if section.is_none() && !is_default {
                                        (button(
                                            "site-space-default",
                                            "site-space",
                                            &ss.id,
                                            html! { "Make it the default" span.sr { " " (title) } },
                                            None,
                                        ))
                                    }
                                    (arrows(Item::SiteSpace(ss.id.clone()), title))
                                    (button(
                                        "site-space-remove",
                                        "site-space",
                                        &ss.id,
                                        html! { "Take off the site" span.sr { " " (title) } },
                                        Some("danger"),
                                    ))
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    if s.sections.is_empty() {
        return html! {
            h2 { "Spaces" }
            (space_list(None))
        };
    }
    let default = sites::default_section(site, s).map(|x| x.id.clone());
    let mut n = 0;
    let mut section_item = |x: &SectionRow| {
        n += 1;
        let is_default = default.as_deref() == Some(x.id.as_str());
        // The fields every form of the section sends.
        let fields = |csrf: &str| {
            html! {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="section" value=(x.id);
            }
        };
        html! {
            li {
                strong { (x.title) }
                " "
                span.muted { "/" (x.path) @if is_default { " · default" } }
                @if let Some((action, csrf)) = forms {
                    div {
                        details {
                            summary { "Settings" span.sr { " of " (x.title) } }
                            form method="post" action=(action) {
                                (fields(csrf))
                                input type="hidden" name="op" value="section-edit";
                                label for={ "section-" (n) "-title" } { "Title" }
                                input id={ "section-" (n) "-title" } name="subject" type="text" required minlength="2" maxlength="128" value=(x.title);
                                label for={ "section-" (n) "-path" } { "Path" }
                                input id={ "section-" (n) "-path" } name="path" type="text" required maxlength="100" value=(x.path);
                                label for={ "section-" (n) "-icon" } { "Icon (a name such as " code { "book" } "; empty for none)" }
                                input id={ "section-" (n) "-icon" } name="icon" type="text" maxlength="50" value=(x.icon.as_deref().unwrap_or(""));
                                label for={ "section-" (n) "-description" } { "Description" }
                                input id={ "section-" (n) "-description" } name="description" type="text" maxlength="256" value=(x.description.as_deref().unwrap_or(""));
                                label for={ "section-" (n) "-condition" } { "Shown when (a condition on the visitor; empty for everyone)" }
                                input id={ "section-" (n) "-condition" } name="condition" type="text" maxlength="1024" value=(x.condition.as_deref().unwrap_or(""));
                                @let within = sites::site_spaces_in(s, Some(&x.id));
                                @if !within.is_empty() {
                                    @let current = sites::default_site_space(site, s, Some(x)).map_or("", |d| d.id.as_str());
                                    label for={ "section-" (n) "-default" } { "Space a visitor lands on" }
                                    select id={ "section-" (n) "-default" } name="defaultspace" {
                                        (options(
                                            within.iter().map(|ss| (ss.id.as_str(), title_of(ss))),
                                            current,
                                        ))
                                    }
                                }
                                button type="submit" { "Save" }
                            }
                        }
                        @if !is_default {
                            form method="post" action=(action) class="inline" {
                                (fields(csrf))
                                input type="hidden" name="op" value="section-default";
                                button type="submit" { "Make it the default" }
                            }
                        }
                        @if !s.groups.is_empty() {
                            form method="post" action=(action) class="inline" {
                                (fields(csrf))
                                input type="hidden" name="op" value="section-group";
                                label.sr for={ "section-" (n) "-group" } { "Group of " (x.title) }
                                select id={ "section-" (n) "-group" } name="group" {
                                    option value="" { "No group" }
                                    (options(
                                        s.groups.iter().map(|g| (g.id.as_str(), g.title.as_str())),
                                        x.group_id.as_deref().unwrap_or(""),
                                    ))
                                }
                                button type="submit" { "Move" }
                            }
                        }
                        (arrows(Item::Section(x.id.clone()), &x.title))
                        form method="post" action=(action) class="inline" {
                            (fields(csrf))
                            input type="hidden" name="op" value="section-remove";
                            button type="submit" class="danger" { "Remove the section" span.sr { " " (x.title) } }
                        }
                    }
                }
                (space_list(Some(x)))
            }
        }
    };
    html! {
        h2 { "Sections" }
        ul.structure {
            @for item in sites::top_level(s) {
                @match item {
                    Top::Section(x) => (section_item(x)),
                    Top::Group(g) => {
                        li {
                            strong { (g.title) }
                            " "
                            span.muted { "group" }
                            @if let Some((action, csrf)) = forms {
                                div {
                                    form method="post" action=(action) class="inline" {
                                        input type="hidden" name="csrf" value=(csrf);
                                        input type="hidden" name="group" value=(g.id);
                                        input type="hidden" name="op" value="group-rename";
                                        label.sr for={ "group-" (g.id) "-title" } { "New title of the group " (g.title) }
                                        input id={ "group-" (g.id) "-title" } name="subject" type="text" required maxlength="100" value=(g.title);
                                        button type="submit" { "Rename" }
                                    }
                                    (arrows(Item::Group(g.id.clone()), &g.title))
                                    form method="post" action=(action) class="inline" {
                                        input type="hidden" name="csrf" value=(csrf);
                                        input type="hidden" name="group" value=(g.id);
                                        input type="hidden" name="op" value="group-delete";
                                        button type="submit" class="danger" { "Delete the group (its sections stay)" span.sr { " " (g.title) } }
                                    }
                                }
                            }
                            ul {
                                @for x in sites::group_sections(s, &g.id) {
                                    (section_item(x))
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn item_id(item: &Item) -> &str {
    match item {
        Item::SiteSpace(id) | Item::Section(id) | Item::Group(id) => id,
    }
}

/// The customization basics, for admins: the title visitors see, the primary colour in
/// each theme, the theme a visitor starts in, and the font.
fn customization_form(site: &store::sites::SiteRow, action: &str, csrf: &str) -> ApiResult<Markup> {
    let c = sites::customization_of(site)?;
    let styling = &c["styling"];
    let color = |mode: &str| {
        styling["primaryColor"][mode]
            .as_str()
            .unwrap_or("#346DDB")
            .to_ascii_lowercase()
    };
    let theme = c["themes"]["default"].as_str().unwrap_or("light");
    let font = &styling["font"];
    Ok(html! {
        h2 { "Look" }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="op" value="customize";
            label for="custom-title" { "Title visitors see" }
            input id="custom-title" name="subject" type="text" required minlength="2" maxlength="128" value=(c["title"].as_str().unwrap_or(&site.title));
            fieldset {
                legend { "Primary colour" }
                label for="custom-light" { "In the light theme" }
                input id="custom-light" name="light" type="color" value=(color("light"));
                label for="custom-dark" { "In the dark theme" }
                input id="custom-dark" name="dark" type="color" value=(color("dark"));
            }
            label for="custom-theme" { "Theme visitors start in" }
            select id="custom-theme" name="theme" {
                @for mode in site_structure::THEME_MODES {
                    option value=(mode) selected[mode == theme] { (mode) }
                }
            }
            label for="custom-font" { "Font" }
            select id="custom-font" name="font" {
                @if let Some(family) = font.get("fontFamily").and_then(|f| f.as_str()) {
                    // A custom font (set through the API) stays unless another is chosen.
                    option value="" selected { (family) " (custom)" }
                }
                @for name in crate::domain::fonts::DEFAULT_FONTS {
                    option value=(name) selected[font.as_str() == Some(name)] { (name) }
                }
            }
            button type="submit" { "Save the look" }
        }
    })
}

/// Who reads the site, for its admins: its visibility, the key that signs its visitor tokens
/// (a `visitor-auth` site), and its share links (each with its address, on or off, deleted),
/// which open a `share-link` site.
async fn access_section(
    state: &AppState,
    site: &store::sites::SiteRow,
    action: &str,
    csrf: &str,
) -> ApiResult<Markup> {
    // The key signs visitor tokens: shown on demand to the admins alone.
    let key = if site.visibility == SiteVisibility::VisitorAuth {
        Some(visitor::settings(state, &site.id).await?.private_key)
    } else {
        None
    };
    let (links, _) = store::sites::list_share_links(&state.db, &site.id, None, 100).await?;
    Ok(html! {
        h2 { "Who reads it" }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="op" value="visibility";
            label for="site-visibility" { "Visibility" }
            select id="site-visibility" name="visibility" {
                @for v in SiteVisibility::ALL {
                    option value=(v.as_str()) selected[*v == site.visibility] { (v.as_str()) }
                }
            }
            button type="submit" { "Save" }
        }
        @if let Some(key) = key {
            h3 { "Visitor key" }
            p.muted { "Your sign-in service signs visitor tokens (HS256) with this key." }
            details {
                summary { "Show the key" }
                code { (key) }
            }
            form method="post" action=(action) {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="op" value="regenerate-key";
                button type="submit" { "Make a new key (tokens signed with this one stop working)" }
            }
        }
        h3 { "Share links" }
        @if links.is_empty() {
            p.muted { "No share link yet." }
        } @else {
            ul {
                @for l in &links {
                    @let (op, label) = if l.active != 0 {
                        ("link-off", "Turn off")
                    } else {
                        ("link-on", "Turn on")
                    };
                    li {
                        (if l.name.is_empty() { "Unnamed link" } else { &l.name })
                        " "
                        span.muted { @if l.active != 0 { "on" } @else { "off" } }
                        " "
                        input readonly aria-label={ "Address of " (l.name) } value=(Urls::new(state, site, Some(&l.share_key)).site());
                        form method="post" action=(action) {
                            input type="hidden" name="csrf" value=(csrf);
                            input type="hidden" name="link" value=(l.id);
                            input type="hidden" name="op" value=(op);
                            button type="submit" { (label) }
                        }
                        form method="post" action=(action) {
                            input type="hidden" name="csrf" value=(csrf);
                            input type="hidden" name="link" value=(l.id);
                            input type="hidden" name="op" value="link-delete";
                            button type="submit" { "Delete" }
                        }
                    }
                }
            }
        }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="op" value="link-create";
            label for="link-name" { "New share link" }
            input id="link-name" name="subject" maxlength="50" placeholder="Partners";
            button type="submit" { "Create" }
        }
    })
}

/// The site's custom hostname, if it has one: whether it is served, its latest check, the
/// TXT record that proves its control until it is proven, and the button that checks.
async fn address_section(
    state: &AppState,
    site: &store::sites::SiteRow,
    action: &str,
    csrf: &str,
) -> ApiResult<Markup> {
    let Some(host) = &site.hostname else {
        return Ok(html! {});
    };
    let held = store::hostnames::holder(&state.db, host).await?;
    let (status, proven) = held
        .filter(|h| h.site_id == site.id)
        .map(|h| (h.hostname_status, h.hostname_verified_at.is_some()))
        .unwrap_or_default();
    Ok(html! {
        h2 { "Custom hostname" }
        dl {
            dt { "Hostname" }
            dd { code { (host) } }
            dt { "Served there" }
            dd {
                @if proven {
                    "Yes: its control is proven"
                } @else {
                    "Not yet: prove that you control it"
                }
            }
            dt { "Latest check" }
            dd { (status.as_deref().unwrap_or("not checked yet")) }
        }
        @if !proven {
            @let c = hostnames::challenge(state, &site.id, host);
            p { "Add this TXT record to the hostname's DNS, then check. The site is served on the hostname once the record is found; the record may be removed afterwards." }
            dl.hostname-challenge {
                dt { "Name" }
                dd { code { (c.name) } }
                dt { "Value" }
                dd { code { (c.value) } }
            }
        }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="op" value="hostname-check";
            button type="submit" { "Check the hostname now" }
        }
    })
}

/// The site's insights: page views and searches per day over the last 30 days, its top pages
/// and its top searches (`domain::insights`, as `aggregateSiteEvents` answers them), drawn
/// as charts made here (SVG, no script), each with its numbers in a table or list that
/// screen readers read.
async fn insights(state: &AppState, site_id: &str) -> ApiResult<Markup> {
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
    Ok(html! {
        h2 { "Insights" }
        (daily_chart("views", "Page views per day", ("page view", "page views"), &days(&views)))
        (daily_chart("searches", "Searches per day", ("search", "searches"), &days(&searched)))
        (ranking("Top pages", "No page view yet.", ("view", "views"), &top_pages))
        (ranking("Top searches", "No search yet.", ("search", "searches"), &top_searches))
    })
}

/// Width and height of a daily chart's drawing, in its own units.
const CHART_W: i64 = 600;
const CHART_H: i64 = 120;

/// A bar chart of 30 days (`days`: ISO date and count, oldest first), with its numbers in a
/// table a click away (and always to screen readers, which the drawing names).
fn daily_chart(id: &str, title: &str, what: (&str, &str), days: &[(String, i64)]) -> Markup {
    let total: i64 = days.iter().map(|(_, n)| n).sum();
    let most = days.iter().map(|(_, n)| *n).max().unwrap_or(0).max(1);
    let slot = CHART_W / days.len().max(1) as i64;
    let summary = format!(
        "{} in the last 30 days, at most {most} in a day.",
        counted(total, what)
    );
    html! {
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
fn ranking(title: &str, empty: &str, what: (&str, &str), items: &[(String, i64)]) -> Markup {
    let most = items.iter().map(|(_, n)| *n).max().unwrap_or(0).max(1);
    html! {
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

/// The new-site form of `POST /o/{organizationId}/sites`.
#[derive(Deserialize)]
pub struct NewSiteForm {
    /// The title.
    subject: Option<String>,
    /// The spaces it publishes.
    #[serde(default)]
    spaces: Vec<String>,
}

/// `POST /o/{organizationId}/sites`: creates a site, then opens its screen.
pub async fn create(
    State(state): State<AppState>,
    signed: Signed,
    InOrg(org): InOrg,
    Posted(form): Posted<NewSiteForm>,
) -> Response {
    let viewer = signed.viewer();
    let caller = signed.caller();
    let here = format!("/o/{}", org.org.id.as_str());
    let run = {
        let state = state.clone();
        async move {
            let new = NewSite {
                title: form.subject,
                spaces: Some(NewSiteSpaces::Ids(form.spaces)),
                ..Default::default()
            };
            let site = sites::create(&state, &org, &caller, new).await?;
            Ok(format!("/o/{}/sites/{}", org.org.id.as_str(), site.id))
        }
    };
    run_write(&viewer, &here, "Back", run).await
}

/// The forms of a site's screen: which change (`op`) and the fields it reads.
#[derive(Deserialize)]
pub struct SiteForm {
    op: String,
    /// A title: the site's, a section's, a group's, a share link's name.
    subject: Option<String>,
    visibility: Option<String>,
    /// The share link acted on.
    link: Option<String>,
    /// The space added to the site or as a section.
    parent: Option<String>,
    section: Option<String>,
    group: Option<String>,
    /// The structure item acted on (a site space, section or group), its type in `kind`.
    item: Option<String>,
    kind: Option<String>,
    path: Option<String>,
    condition: Option<String>,
    #[serde(rename = "defaultspace")]
    default_space: Option<String>,
    icon: Option<String>,
    description: Option<String>,
    /// The customization basics: primary colour (light and dark), theme, font.
    light: Option<String>,
    dark: Option<String>,
    theme: Option<String>,
    font: Option<String>,
}

/// `POST /o/{organizationId}/sites/{siteId}` (`op=publish`, `unpublish`, `add`,
/// `visibility`, `regenerate-key`, `link-…`, `section-…`, `group-…`, `site-space-…`,
/// `move-up`, `move-down`, `customize`): a site change, then the site's screen.
pub async fn act(
    State(state): State<AppState>,
    Path((_, site)): Path<(String, String)>,
    signed: Signed,
    InOrg(org): InOrg,
    Posted(form): Posted<SiteForm>,
) -> Response {
    let viewer = signed.viewer();
    let caller = signed.caller();
    let here = format!("/o/{}/sites/{site}", org.org.id.as_str());
    let run = {
        let state = state.clone();
        async move {
            let oid = org.org.id.to_string();
            match form.op.as_str() {
                "publish" | "unpublish" => {
                    let publish = form.op == "publish";
                    sites::set_published(&state, &org, &site, publish).await?;
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                "visibility" => {
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
                "regenerate-key" => {
                    org.require_admin("replace a site's visitor key")?;
                    let row = sites::reload(&state, &oid, &site).await?;
                    visitor::regenerate(&state, &row).await?;
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                "link-create" | "link-on" | "link-off" | "link-delete" => {
                    org.require_admin("manage a site's share links")?;
                    sites::reload(&state, &oid, &site).await?;
                    let link = form.link.clone().unwrap_or_default();
                    match form.op.as_str() {
                        "link-create" => {
                            let name = form.subject.clone().unwrap_or_default();
                            share_links::create(&state, &site, name.trim().to_string()).await?;
                        }
                        "link-delete" => share_links::delete(&state, &site, &link).await?,
                        on_off => {
                            let active = Some(on_off == "link-on");
                            share_links::update(&state, &site, &link, None, active).await?;
                        }
                    }
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                "hostname-check" => {
                    org.require_admin("check a site's hostname")?;
                    let row = sites::reload(&state, &oid, &site).await?;
                    if let Some(host) = &row.hostname {
                        hostnames::revalidate(&state, &caller, host).await?;
                    }
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                "add" => {
                    let space = form.parent.clone().unwrap_or_default();
                    let section = given(&form.section);
                    sites::add_space(&state, &org, &site, &space, section.as_deref()).await?;
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                op if op.starts_with("section-")
                    || op.starts_with("group-")
                    || op.starts_with("site-space-")
                    || op.starts_with("move-") =>
                {
                    structure_change(&state, &org, &site, op, &form).await?;
                    Ok(format!("/o/{oid}/sites/{site}"))
                }
                "customize" => {
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
                other => Err(ApiError::bad_request(format!(
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
    form: &SiteForm,
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

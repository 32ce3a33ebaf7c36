//! Docs sites in the app: the sites of an organization, a site's spaces and state, and for
//! organization admins the forms that create a site, add spaces to it, publish and
//! unpublish it, through the domain's site workflows (the API's own).

use std::fmt::Write as _;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use quire_content::html::{escape_attr as attr, escape_text as text};

use super::session;
use super::shell::{failed, not_found, org_for, page, run_write, Viewer};
use crate::domain::access::OrgCtx;
use crate::domain::auth::Caller;
use crate::domain::insights;
use crate::domain::share_links;
use crate::domain::sites::{self, NewSite, NewSiteSpaces, Urls};
use crate::domain::visitor;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
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

/// `GET /o/{organizationId}/sites/{siteId}`: a docs site, its state, address and spaces;
/// for admins, publishing and adding spaces.
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
    body.push_str("<h2>Spaces</h2>");
    if structure.site_spaces.is_empty() {
        body.push_str("<p class=\"muted\">No space yet.</p>");
    } else {
        body.push_str("<ul>");
        for ss in &structure.site_spaces {
            let title = published_spaces
                .iter()
                .find(|s| s.id == ss.space_id)
                .map(|s| s.title.clone())
                .unwrap_or_else(|| "A deleted space".into());
            let _ = write!(
                body,
                "<li>{} <span class=\"muted\">/{}</span></li>",
                text(&title),
                text(&ss.path)
            );
        }
        body.push_str("</ul>");
    }
    match insights(&state, &site.id).await {
        Ok(section) => body.push_str(&section),
        Err(e) => return failed(e),
    }
    if org.is_admin() {
        let hidden = format!(
            "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
            attr(viewer.csrf)
        );
        let action = format!("/o/{oid}/sites/{}", attr(&site.id));
        let candidates = match store::spaces::list_live(&state.db, org.org.id.as_str(), None).await
        {
            Ok(s) => s,
            Err(e) => return failed(e),
        };
        let _ = write!(
            body,
            "<form method=\"post\" action=\"{action}\">{hidden}<input type=\"hidden\" name=\"op\" value=\"add\">\
<label for=\"add-space\">Add a space</label><select id=\"add-space\" name=\"parent\">"
        );
        for s in candidates.iter().take(500) {
            let _ = write!(
                body,
                "<option value=\"{}\">{}</option>",
                attr(&s.id),
                text(&s.title)
            );
        }
        body.push_str("</select><button type=\"submit\">Add</button></form>");
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

/// The site's insights: page views per day over the last 30 days, its top pages and its
/// top searches (`domain::insights`, as `aggregateSiteEvents` answers them).
async fn insights(state: &AppState, site_id: &str) -> ApiResult<String> {
    let ask = |q: serde_json::Value| async move { insights::aggregate(state, site_id, &q).await };
    let views = serde_json::json!([{ "column": "eventType", "values": ["page_view"] }]);
    let per_day = ask(serde_json::json!({
        "range": "last30Days",
        "groupBy": [{ "column": "datetime", "interval": "day" }],
        "where": views,
    }))
    .await?;
    let pages = ask(serde_json::json!({
        "range": "last30Days",
        "groupBy": [{ "column": "page" }],
        "where": views,
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
    let mut out = String::from("<h2>Insights</h2>");
    // Every day of the last 30, those without a view too.
    let counted: std::collections::HashMap<String, i64> = col(&per_day, 0)
        .iter()
        .zip(col(&per_day, 1))
        .filter_map(|(d, n)| Some((d.as_str()?.to_string(), n.as_i64()?)))
        .collect();
    let today = state.now().div_euclid(86_400_000);
    let days: Vec<(String, i64)> = (0..30)
        .rev()
        .map(|back| {
            let day = crate::clock::iso((today - back) * 86_400_000);
            let n = counted.get(&day).copied().unwrap_or(0);
            (day, n)
        })
        .collect();
    let total: i64 = days.iter().map(|(_, n)| n).sum();
    let most = days.iter().map(|(_, n)| *n).max().unwrap_or(0).max(1);
    let _ = write!(
        out,
        "<h3>Page views per day</h3><p>{total} page views in the last 30 days.</p><table class=\"insights\"><thead><tr><th scope=\"col\">Day</th><th scope=\"col\">Views</th><th scope=\"col\"><span class=\"skip\">Share</span></th></tr></thead><tbody>"
    );
    for (day, n) in &days {
        let _ = write!(
            out,
            "<tr><td>{day}</td><td>{n}</td><td><meter min=\"0\" max=\"{most}\" value=\"{n}\" \
             aria-label=\"{day}: {n} of {most}\"></meter></td></tr>",
            day = text(&day[..10])
        );
    }
    out.push_str("</tbody></table><h3>Top pages</h3>");
    let top = col(&pages, 0);
    if top.is_empty() {
        out.push_str("<p class=\"muted\">No page view yet.</p>");
    } else {
        out.push_str("<ol class=\"insights\">");
        for (p, n) in top.iter().zip(col(&pages, 1)) {
            let title = match (p["space"].as_str(), p["page"].as_str()) {
                (Some(space), Some(page)) => insights::page_title(state, space, page)
                    .await?
                    .unwrap_or_else(|| "A removed page".into()),
                _ => "Other pages".into(),
            };
            let _ = write!(
                out,
                "<li>{} <span class=\"muted\">{n}</span></li>",
                text(&title)
            );
        }
        out.push_str("</ol>");
    }
    out.push_str("<h3>Top searches</h3>");
    let queries = col(&searches, 0);
    if queries.is_empty() {
        out.push_str("<p class=\"muted\">No search yet.</p>");
    } else {
        out.push_str("<ol class=\"insights\">");
        for (q, n) in queries.iter().zip(col(&searches, 1)) {
            let _ = write!(
                out,
                "<li>{} <span class=\"muted\">{n}</span></li>",
                text(q.as_str().unwrap_or(""))
            );
        }
        out.push_str("</ol>");
    }
    Ok(out)
}

/// `POST /o/{organizationId}/sites` (`op=create`) and `POST /o/{organizationId}/sites/{siteId}`
/// (`op=publish`, `unpublish`, `add`): a site change, then the site's screen.
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
                ("add", Some(site)) => {
                    let space = form.parent.clone().unwrap_or_default();
                    sites::add_space(&state, &org, &site, &space, None).await?;
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

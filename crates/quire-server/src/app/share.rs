//! Who may access a space or a collection, in the app: its explicit permissions for members
//! and teams, and for its admins the forms that grant, change and take them away, through
//! the domain's permission workflows (the API's own).

use std::fmt::Write as _;

use axum::http::StatusCode;
use axum::response::Response;
use quire_content::html::{escape_attr as attr, escape_text as text};

use super::session::Form;
use super::shell::{failed, page, run_write, Viewer};
use crate::domain::access::{CollectionCtx, Role, SpaceCtx};
use crate::domain::permissions::{self, Content};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;

/// Most members and teams offered in the forms.
const OFFERED: i64 = 500;

/// Roles a permission may give, strongest first.
const ROLES: [&str; 6] = ["admin", "create", "edit", "review", "comment", "read"];

fn role_select(id: &str, current: &str, label: &str) -> String {
    let mut out = format!(
        "<label for=\"{id}\" class=\"sr\">{}</label><select id=\"{id}\" name=\"role\">",
        text(label)
    );
    for r in ROLES {
        let _ = write!(
            out,
            "<option value=\"{r}\"{}>{r}</option>",
            if r == current { " selected" } else { "" }
        );
    }
    out.push_str("</select>");
    out
}

/// What the sharing screen shows: the content, its title, a line about who reads it
/// besides the permissions, and where its forms are posted.
struct Shared<'a> {
    target: Content,
    title: &'a str,
    note: String,
    action: String,
}

impl<'a> Shared<'a> {
    fn space(ctx: &'a SpaceCtx) -> Self {
        Shared {
            target: Content::space(ctx),
            title: &ctx.space.title,
            note: format!(
                " Visibility: <strong>{}</strong>.",
                text(ctx.space.visibility.as_str())
            ),
            action: format!("/s/{}/~/share", attr(&ctx.space.id)),
        }
    }

    fn collection(ctx: &'a CollectionCtx) -> Self {
        Shared {
            target: Content::collection(ctx),
            title: &ctx.collection.title,
            note: " Its spaces inherit these permissions unless they say otherwise.".into(),
            action: format!("/c/{}/~/share", attr(&ctx.collection.id)),
        }
    }
}

/// `GET /s/{spaceId}/~/share`.
pub async fn screen(state: &AppState, ctx: &SpaceCtx, viewer: &Viewer<'_>, nav: &str) -> Response {
    shown(state, &Shared::space(ctx), viewer, nav).await
}

/// `GET /c/{collectionId}/~/share`.
pub async fn collection_screen(
    state: &AppState,
    ctx: &CollectionCtx,
    viewer: &Viewer<'_>,
) -> Response {
    shown(state, &Shared::collection(ctx), viewer, "").await
}

async fn shown(state: &AppState, shared: &Shared<'_>, viewer: &Viewer<'_>, nav: &str) -> Response {
    match html(state, shared, viewer).await {
        Ok(body) => page(StatusCode::OK, "Share", Some(viewer), nav, &body),
        Err(ApiError::Internal(e)) => failed(e),
        Err(e) => page(
            e.status(),
            "Share",
            Some(viewer),
            nav,
            &format!("<h1>Share</h1><p>{}</p>", text(&e.to_string())),
        ),
    }
}

async fn html(state: &AppState, shared: &Shared<'_>, viewer: &Viewer<'_>) -> ApiResult<String> {
    let target = &shared.target;
    // As the API's listings: guests do not see who else has access.
    target.org.require_non_guest("see who has access")?;
    let admin = target.role >= Role::Admin;
    let action = &shared.action;
    let org_id = target.org_id.as_str();
    let hidden = format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        attr(viewer.csrf)
    );
    let grants = store::permissions::on_target(&state.db, target.kind, &target.id).await?;
    let user_ids: Vec<&str> = grants
        .iter()
        .filter(|g| g.principal_kind == "user")
        .map(|g| g.principal_id.as_str())
        .collect();
    let team_ids: Vec<&str> = grants
        .iter()
        .filter(|g| g.principal_kind == "team")
        .map(|g| g.principal_id.as_str())
        .collect();
    let users = store::users::get_many(&state.db, &user_ids).await?;
    let teams = store::teams::get_many(&state.db, org_id, &team_ids).await?;
    let mut body = format!(
        "<h1>Who may access {}</h1><p>Members of the organization have their organization role here unless a permission below says more.{}</p>",
        text(shared.title),
        shared.note
    );
    body.push_str("<h2>Permissions</h2>");
    if grants.is_empty() {
        let _ = write!(
            body,
            "<p class=\"muted\">No permission given on this {} alone.</p>",
            target.kind
        );
    } else {
        body.push_str("<table><thead><tr><th scope=\"col\">Who</th><th scope=\"col\">Role</th></tr></thead><tbody>");
        for g in &grants {
            let (name, kind) = if g.principal_kind == "user" {
                let name = users
                    .iter()
                    .find(|u| u.id == g.principal_id)
                    .map(|u| u.display_name.clone());
                (name, "user")
            } else {
                let name = teams
                    .iter()
                    .find(|t| t.id == g.principal_id)
                    .map(|t| format!("{} (team)", t.title));
                (name, "team")
            };
            let name = name.unwrap_or_else(|| g.principal_id.clone());
            let _ = write!(
                body,
                "<tr data-grant=\"{}\"><td>{}</td><td>",
                attr(&g.principal_id),
                text(&name)
            );
            if admin {
                let pid = attr(&g.principal_id);
                let _ = write!(
                    body,
                    "<form method=\"post\" action=\"{action}\" class=\"inline\">{hidden}<input type=\"hidden\" name=\"op\" value=\"set-{kind}\"><input type=\"hidden\" name=\"user\" value=\"{pid}\">{}<button type=\"submit\">Change</button></form>\
<form method=\"post\" action=\"{action}\" class=\"inline\">{hidden}<input type=\"hidden\" name=\"op\" value=\"remove-{kind}\"><input type=\"hidden\" name=\"user\" value=\"{pid}\"><button type=\"submit\">Remove</button></form>",
                    role_select(&format!("role-{pid}"), &g.role, &format!("Role of {name}"))
                );
            } else {
                body.push_str(&text(&g.role));
            }
            body.push_str("</td></tr>");
        }
        body.push_str("</tbody></table>");
    }
    if !admin {
        return Ok(body);
    }
    let filter = store::members::MemberFilter {
        ascending: true,
        ..Default::default()
    };
    let (members, _) = store::members::list(&state.db, org_id, &filter, None, OFFERED).await?;
    let _ = write!(
        body,
        "<h2>Give access</h2><form method=\"post\" action=\"{action}\">{hidden}<input type=\"hidden\" name=\"op\" value=\"grant-user\">\
<label for=\"grant-user\">Member</label><select id=\"grant-user\" name=\"user\">"
    );
    for m in &members {
        let _ = write!(
            body,
            "<option value=\"{}\">{}</option>",
            attr(m.user_id.as_str()),
            text(&m.display_name)
        );
    }
    let _ = write!(
        body,
        "</select> {}<button type=\"submit\">Give access</button></form>",
        role_select("grant-user-role", "read", "Role")
    );
    let (all_teams, _) =
        store::teams::list(&state.db, org_id, &Default::default(), None, OFFERED).await?;
    if !all_teams.is_empty() {
        let _ = write!(
            body,
            "<form method=\"post\" action=\"{action}\">{hidden}<input type=\"hidden\" name=\"op\" value=\"grant-team\">\
<label for=\"grant-team\">Team</label><select id=\"grant-team\" name=\"user\">"
        );
        for (t, _) in &all_teams {
            let _ = write!(
                body,
                "<option value=\"{}\">{}</option>",
                attr(&t.id),
                text(&t.title)
            );
        }
        let _ = write!(
            body,
            "</select> {}<button type=\"submit\">Give access</button></form>",
            role_select("grant-team-role", "read", "Role")
        );
    }
    Ok(body)
}

/// `POST /s/{spaceId}/~/share`: grants (`grant-user`, `grant-team`), changes (`set-…`) or
/// takes away (`remove-…`) one permission, then back to the screen.
pub async fn act(state: &AppState, ctx: SpaceCtx, viewer: &Viewer<'_>, form: Form) -> Response {
    let here = format!("/s/{}/~/share", ctx.space.id);
    changed(state, Content::space(&ctx), here, viewer, form).await
}

/// `POST /c/{collectionId}/~/share`: as [`act`], for a collection.
pub async fn collection_act(
    state: &AppState,
    ctx: &CollectionCtx,
    viewer: &Viewer<'_>,
    form: Form,
) -> Response {
    let here = format!("/c/{}/~/share", ctx.collection.id);
    changed(state, Content::collection(ctx), here, viewer, form).await
}

async fn changed(
    state: &AppState,
    target: Content,
    here: String,
    viewer: &Viewer<'_>,
    form: Form,
) -> Response {
    let run = {
        let state = state.clone();
        async move {
            let op = form.op.as_deref().unwrap_or("");
            let principal = form.user.clone().unwrap_or_default();
            let role = || {
                Role::parse(form.role.as_deref().unwrap_or("")).ok_or_else(|| {
                    ApiError::bad_request("`role` must be one of the roles offered.")
                })
            };
            match op {
                "grant-user" => {
                    permissions::grant(&state, &target, &[principal], &[], Some(role()?)).await
                }
                "grant-team" => {
                    permissions::grant(&state, &target, &[], &[principal], Some(role()?)).await
                }
                "set-user" | "set-team" => {
                    let kind = &op[4..];
                    permissions::set(&state, &target, (kind, &principal), Some(Some(role()?))).await
                }
                "remove-user" | "remove-team" => {
                    let kind = &op[7..];
                    permissions::remove(&state, &target, (kind, &principal)).await
                }
                other => Err(ApiError::bad_request(format!(
                    "`op`: no permission change `{other}`."
                ))),
            }
        }
    };
    let to = here.clone();
    run_write(viewer, &here, "Back to sharing", async move {
        run.await.map(|()| to)
    })
    .await
}

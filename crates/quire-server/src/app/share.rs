//! Who may access a space or a collection, in the app: its explicit permissions for members
//! and teams, and for its admins the forms that grant, change and take them away, through
//! the domain's permission workflows (the API's own).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

use super::routes::{InCollection, InSpace};
use super::session::{Posted, Signed};
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

fn role_select(id: &str, current: &str, label: &str) -> Markup {
    html! {
        label for=(id) class="sr" { (label) }
        select id=(id) name="role" {
            @for r in ROLES {
                option value=(r) selected[r == current] { (r) }
            }
        }
    }
}

/// What the sharing screen shows: the content, its title, a line about who reads it
/// besides the permissions, and where its forms are posted.
struct Shared<'a> {
    target: Content,
    title: &'a str,
    note: Markup,
    action: String,
}

impl<'a> Shared<'a> {
    fn space(ctx: &'a SpaceCtx) -> Self {
        Shared {
            target: Content::space(ctx),
            title: &ctx.space.title,
            note: html! { " Visibility: " strong { (ctx.space.visibility.as_str()) } "." },
            action: format!("/s/{}/~/share", ctx.space.id),
        }
    }

    fn collection(ctx: &'a CollectionCtx) -> Self {
        Shared {
            target: Content::collection(ctx),
            title: &ctx.collection.title,
            note: html! { " Its spaces inherit these permissions unless they say otherwise." },
            action: format!("/c/{}/~/share", ctx.collection.id),
        }
    }
}

/// `GET /s/{spaceId}/~/share`.
pub async fn screen(
    state: &AppState,
    ctx: &SpaceCtx,
    viewer: &Viewer<'_>,
    nav: Option<&Markup>,
) -> Response {
    shown(state, &Shared::space(ctx), viewer, nav).await
}

/// `GET /c/{collectionId}/~/share`.
pub async fn collection_screen(
    state: &AppState,
    ctx: &CollectionCtx,
    viewer: &Viewer<'_>,
) -> Response {
    shown(state, &Shared::collection(ctx), viewer, None).await
}

async fn shown(
    state: &AppState,
    shared: &Shared<'_>,
    viewer: &Viewer<'_>,
    nav: Option<&Markup>,
) -> Response {
    match content(state, shared, viewer).await {
        Ok(body) => page(StatusCode::OK, "Share", Some(viewer), nav, body),
        Err(ApiError::Internal(e)) => failed(e),
        Err(e) => page(
            e.status(),
            "Share",
            Some(viewer),
            nav,
            html! { h1 { "Share" } p { (e.to_string()) } },
        ),
    }
}

async fn content(state: &AppState, shared: &Shared<'_>, viewer: &Viewer<'_>) -> ApiResult<Markup> {
    let target = &shared.target;
    // As the API's listings: guests do not see who else has access.
    target.org.require_non_guest("see who has access")?;
    let admin = target.role >= Role::Admin;
    let action = shared.action.as_str();
    let org_id = target.org_id.as_str();
    let csrf = viewer.csrf;
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
    // Each permission's holder, named, and its kind.
    let named: Vec<(String, &str)> = grants
        .iter()
        .map(|g| {
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
            (name.unwrap_or_else(|| g.principal_id.clone()), kind)
        })
        .collect();
    let permissions = html! {
        h1 { "Who may access " (shared.title) }
        p {
            "Members of the organization have their organization role here unless a permission below says more."
            (shared.note)
        }
        h2 { "Permissions" }
        @if grants.is_empty() {
            p.muted { "No permission given on this " (target.kind) " alone." }
        } @else {
            table {
                thead { tr { th scope="col" { "Who" } th scope="col" { "Role" } } }
                tbody {
                    @for (g, (name, kind)) in grants.iter().zip(&named) {
                        @let pid = g.principal_id.as_str();
                        tr data-grant=(pid) {
                            td { (name) }
                            td {
                                @if admin {
                                    form method="post" action=(action) class="inline" {
                                        input type="hidden" name="csrf" value=(csrf);
                                        input type="hidden" name="op" value={ "set-" (kind) };
                                        input type="hidden" name="user" value=(pid);
                                        (role_select(&format!("role-{pid}"), &g.role, &format!("Role of {name}")))
                                        button type="submit" { "Change" }
                                    }
                                    form method="post" action=(action) class="inline" {
                                        input type="hidden" name="csrf" value=(csrf);
                                        input type="hidden" name="op" value={ "remove-" (kind) };
                                        input type="hidden" name="user" value=(pid);
                                        button type="submit" { "Remove" }
                                    }
                                } @else {
                                    (g.role)
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    if !admin {
        return Ok(permissions);
    }
    let filter = store::members::MemberFilter {
        ascending: true,
        ..Default::default()
    };
    let (members, _) = store::members::list(&state.db, org_id, &filter, None, OFFERED).await?;
    let (all_teams, _) =
        store::teams::list(&state.db, org_id, &Default::default(), None, OFFERED).await?;
    Ok(html! {
        (permissions)
        h2 { "Give access" }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="op" value="grant-user";
            label for="grant-user" { "Member" }
            select id="grant-user" name="user" {
                @for m in &members {
                    option value=(m.user_id.as_str()) { (m.display_name) }
                }
            }
            " "
            (role_select("grant-user-role", "read", "Role"))
            button type="submit" { "Give access" }
        }
        @if !all_teams.is_empty() {
            form method="post" action=(action) {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="op" value="grant-team";
                label for="grant-team" { "Team" }
                select id="grant-team" name="user" {
                    @for (t, _) in &all_teams {
                        option value=(t.id) { (t.title) }
                    }
                }
                " "
                (role_select("grant-team-role", "read", "Role"))
                button type="submit" { "Give access" }
            }
        }
    })
}

/// What a sharing form does to one permission.
#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
pub enum ShareOp {
    GrantUser,
    GrantTeam,
    SetUser,
    SetTeam,
    RemoveUser,
    RemoveTeam,
}

impl ShareOp {
    /// The kind of holder the permission is for: `user` or `team`.
    fn kind(self) -> &'static str {
        match self {
            ShareOp::GrantUser | ShareOp::SetUser | ShareOp::RemoveUser => "user",
            ShareOp::GrantTeam | ShareOp::SetTeam | ShareOp::RemoveTeam => "team",
        }
    }
}

/// A sharing form: what it does (`op`) to whose permission (`user`: a member's or a
/// team's id), at which role (`role`, but to remove).
#[derive(Deserialize)]
pub struct ShareForm {
    op: ShareOp,
    user: String,
    role: Option<String>,
}

/// `POST /s/{spaceId}/~/share`: grants (`grant-user`, `grant-team`), changes (`set-…`) or
/// takes away (`remove-…`) one permission, then back to the screen.
pub async fn act(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Posted(form): Posted<ShareForm>,
) -> Response {
    let viewer = signed.viewer();
    if let Some(res) = super::screens::deleted(&ctx, &viewer) {
        return res;
    }
    let here = format!("/s/{}/~/share", ctx.space.id);
    changed(&state, Content::space(&ctx), here, &viewer, form).await
}

/// `POST /c/{collectionId}/~/share`: as [`act`], for a collection (its admins).
pub async fn collection_act(
    State(state): State<AppState>,
    signed: Signed,
    InCollection(ctx): InCollection,
    Posted(form): Posted<ShareForm>,
) -> Response {
    let here = format!("/c/{}/~/share", ctx.collection.id);
    changed(
        &state,
        Content::collection(&ctx),
        here,
        &signed.viewer(),
        form,
    )
    .await
}

async fn changed(
    state: &AppState,
    target: Content,
    here: String,
    viewer: &Viewer<'_>,
    form: ShareForm,
) -> Response {
    let run = {
        let state = state.clone();
        async move {
            let ShareForm { op, user, role } = form;
            let principal = user;
            let role = || {
                Role::parse(role.as_deref().unwrap_or("")).ok_or_else(|| {
                    ApiError::bad_request("`role` must be one of the roles offered.")
                })
            };
            let kind = op.kind();
            match op {
                ShareOp::GrantUser => {
                    permissions::grant(&state, &target, &[principal], &[], Some(role()?)).await
                }
                ShareOp::GrantTeam => {
                    permissions::grant(&state, &target, &[], &[principal], Some(role()?)).await
                }
                ShareOp::SetUser | ShareOp::SetTeam => {
                    permissions::set(&state, &target, (kind, &principal), Some(Some(role()?))).await
                }
                ShareOp::RemoveUser | ShareOp::RemoveTeam => {
                    permissions::remove(&state, &target, (kind, &principal)).await
                }
            }
        }
    };
    let to = here.clone();
    run_write(viewer, &here, "Back to sharing", async move {
        run.await.map(|()| to)
    })
    .await
}

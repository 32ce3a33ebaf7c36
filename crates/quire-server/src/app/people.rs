//! The people of an organization in the app: its members (roles, removal), the invitations
//! by address still waiting, invite links; and the invitation screens where an invited
//! person joins, creating their account when they have none. Every change runs the
//! domain's membership workflows, the API's own.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

use super::routes::InOrg;
use super::session::{self, ByOp, Posted, Signed};
use super::shell::{failed, not_found, org_for, page, run_write, see_other, Viewer};
use crate::domain::access::{OrgCtx, Role};
use crate::domain::accounts::AccountError;
use crate::domain::auth::Caller;
use crate::domain::members::{self, Invitation};
use crate::error::ApiError;
use crate::ids::{OrgId, UserId};
use crate::state::AppState;
use crate::store;

/// Most members and invitations the screen lists.
const LIST_LIMIT: i64 = 500;

/// Roles offered, strongest first; "guest" is no role.
const ROLES: [(&str, &str); 7] = [
    ("admin", "Admin"),
    ("create", "Create"),
    ("edit", "Edit"),
    ("review", "Review"),
    ("comment", "Comment"),
    ("read", "Read"),
    ("guest", "Guest"),
];

fn role_select(name: &str, id: &str, current: Option<&str>, label: &str) -> Markup {
    let current = current.unwrap_or("guest");
    html! {
        label for=(id) class="sr" { (label) }
        select id=(id) name=(name) {
            @for (value, shown) in ROLES {
                option value=(value) selected[current == value] { (shown) }
            }
        }
    }
}

/// A role as sent by a form: `guest` is none; anything else unknown is refused.
fn parse_role(value: &str) -> Result<Option<Role>, ApiError> {
    match value {
        "guest" => Ok(None),
        other => Role::parse(other)
            .map(Some)
            .ok_or_else(|| ApiError::bad_request("`role` must be one of the roles offered.")),
    }
}

/// `GET /o/{organizationId}/members`: the members (for members: guests see no one, as in
/// the API), and for admins the forms that invite, change roles, remove, and manage invite
/// links.
pub async fn members_page(
    State(state): State<AppState>,
    signed: Signed,
    InOrg(org): InOrg,
) -> Response {
    let viewer = signed.viewer();
    match members_html(&state, &org, &viewer, None).await {
        Ok(body) => page(StatusCode::OK, "Members", Some(&viewer), None, body),
        Err(e) => failed(e),
    }
}

async fn members_html(
    state: &AppState,
    org: &OrgCtx,
    viewer: &Viewer<'_>,
    notice: Option<Markup>,
) -> crate::error::ApiResult<Markup> {
    let admin = org.is_admin();
    let id = org.org.id.as_str();
    let csrf = viewer.csrf;
    let action = format!("/o/{id}/members");
    let filter = store::members::MemberFilter {
        ascending: true,
        ..Default::default()
    };
    let (list, total) =
        store::members::list(&state.db, &org.org.id, &filter, None, LIST_LIMIT).await?;
    let members = html! {
        nav class="crumbs" aria-label="Breadcrumb" {
            ol { li { a href={ "/o/" (id) } { (org.org.title) } } }
        }
        h1 { "Members" }
        @if let Some(n) = notice {
            (n)
        }
        p.muted { (total) " member" @if total != 1 { "s" } }
        table {
            thead {
                tr {
                    th scope="col" { "Name" }
                    @if admin { th scope="col" { "E-mail" } }
                    th scope="col" { "Role" }
                    th scope="col" { "Joined" }
                    @if admin { th scope="col" { "Actions" } }
                }
            }
            tbody {
                @for m in &list {
                    @let uid = m.user_id.as_str();
                    tr data-member=(uid) {
                        td { (m.display_name) }
                        @if admin { td { (m.email) } }
                        td { (m.role.as_deref().unwrap_or("guest")) }
                        td { (crate::clock::iso(m.joined_at)) }
                        @if admin {
                            td {
                                form method="post" action=(action) class="inline" {
                                    input type="hidden" name="csrf" value=(csrf);
                                    input type="hidden" name="op" value="role";
                                    input type="hidden" name="user" value=(uid);
                                    (role_select("role", &format!("role-{uid}"), m.role.as_deref(), &format!("Role of {}", m.display_name)))
                                    button type="submit" { "Change" }
                                }
                                form method="post" action=(action) class="inline" {
                                    input type="hidden" name="csrf" value=(csrf);
                                    input type="hidden" name="op" value="remove";
                                    input type="hidden" name="user" value=(uid);
                                    button type="submit" { "Remove" }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    if !admin {
        return Ok(html! {
            (members)
            form method="post" action=(action) {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="op" value="remove";
                input type="hidden" name="user" value=(viewer.user);
                button type="submit" { "Leave the organization" }
            }
        });
    }
    let pending = store::invites::list_pending(&state.db, &org.org.id, LIST_LIMIT).await?;
    // Invitations by address.
    let invitations = html! {
        h2 { "Invite people" }
        form method="post" action=(action) class="write" {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="op" value="invite";
            label for="emails" { "E-mail addresses, one per line" }
            textarea id="emails" name="emails" rows="3" required {}
            (role_select("role", "invite-role", org.org.default_role.as_deref().or(Some("read")), "Role"))
            button type="submit" { "Invite" }
        }
        @if !pending.is_empty() {
            h3 { "Waiting for their account" }
            ul {
                @for p in &pending {
                    @let until = crate::clock::iso(members::expires_at(state, p.created_at));
                    li {
                        (p.email)
                        " "
                        span.muted {
                            (p.role.as_deref().unwrap_or("guest"))
                            " · invited " (crate::clock::iso(p.created_at))
                            " · "
                            @if members::expired(state, p.created_at) { "expired " } @else { "expires " }
                            (until)
                        }
                        " "
                        form method="post" action=(action) class="inline" {
                            input type="hidden" name="csrf" value=(csrf);
                            input type="hidden" name="op" value="withdraw";
                            input type="hidden" name="email" value=(p.email);
                            button type="submit" { "Withdraw" }
                        }
                    }
                }
            }
            p.muted { "Quire sends no e-mail: invite an address again for a new link to hand over. A link lets its person in until the invitation expires." }
        }
        // Invite links.
        h2 { "Invite links" }
    };
    if org.org.invite_links == 0 {
        return Ok(html! {
            (members)
            (invitations)
            p.muted { "Invite links are disabled in this organization." }
        });
    }
    let (links, _) = store::invites::list_links(&state.db, &org.org.id, None, LIST_LIMIT).await?;
    Ok(html! {
        (members)
        (invitations)
        @if links.is_empty() {
            p.muted { "No invite link." }
        } @else {
            ul {
                @for l in &links {
                    li {
                        code { (state.url(&format!("/invite/{}/{}", org.org.id, l.id))) }
                        " "
                        span.muted { "joins as " (l.role.as_deref().unwrap_or("guest")) }
                        " "
                        form method="post" action=(action) class="inline" {
                            input type="hidden" name="csrf" value=(csrf);
                            input type="hidden" name="op" value="unlink";
                            input type="hidden" name="link" value=(l.id);
                            button type="submit" { "Delete" }
                        }
                    }
                }
            }
        }
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="op" value="link";
            (role_select("role", "link-role", Some("read"), "Role of who joins"))
            button type="submit" { "Create an invite link" }
        }
    })
}

/// The forms of `POST /o/{organizationId}/members`, by their `op`.
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum MemberForm {
    /// A member's new role (`guest`: none).
    Role { user: String, role: String },
    /// Removes a member (or the person leaves).
    Remove { user: String },
    /// Invites addresses (one per line, or separated by commas) at a role.
    Invite { emails: String, role: String },
    /// Withdraws the invitation of an address.
    Withdraw { email: String },
    /// Makes an invite link that joins at a role.
    Link { role: String },
    /// Deletes an invite link.
    Unlink { link: String },
}

/// `POST /o/{organizationId}/members`: one membership change, then the members screen
/// again.
pub async fn members_action(
    State(state): State<AppState>,
    signed: Signed,
    InOrg(org): InOrg,
    Posted(ByOp(form)): Posted<ByOp<MemberForm>>,
) -> Response {
    let viewer = signed.viewer();
    let caller = signed.caller();
    let org_id = org.org.id.as_str().to_string();
    let here = format!("/o/{org_id}/members");
    let run = {
        let (state, org, caller) = (state.clone(), org.clone(), caller.clone());
        async move { run(&state, &org, &caller, form).await }
    };
    let done = match tokio::spawn(crate::cache::bypassed(run)).await {
        Ok(done) => done,
        Err(e) => return failed(e),
    };
    match done {
        Ok(None) => {
            // Leaving the organization: its screens are no longer the user's.
            match org_for(&state, &caller, &org_id).await {
                Some(_) => see_other(&here),
                None => see_other("/"),
            }
        }
        Ok(Some(notice)) => {
            let fresh = org_for(&state, &caller, &org_id).await;
            let org = fresh.unwrap_or(org);
            match members_html(&state, &org, &viewer, Some(notice)).await {
                Ok(body) => page(StatusCode::OK, "Members", Some(&viewer), None, body),
                Err(e) => failed(e),
            }
        }
        Err(ApiError::Internal(e)) => failed(e),
        Err(e) => super::shell::not_done(&viewer, &e, &here, "Back to the members"),
    }
}

/// Runs one membership change; answers a notice to show (the links of new invitations), or
/// `None` to go back to the screen.
async fn run(
    state: &AppState,
    org: &OrgCtx,
    caller: &Caller,
    form: MemberForm,
) -> Result<Option<Markup>, ApiError> {
    match form {
        MemberForm::Role { user, role } => {
            members::set_role(state, org, &UserId::new(user), parse_role(&role)?).await?;
            Ok(None)
        }
        MemberForm::Remove { user } => {
            members::remove(state, org, caller, &UserId::new(user)).await?;
            Ok(None)
        }
        MemberForm::Invite { emails, role } => {
            let role = parse_role(&role)?;
            let emails: Vec<(String, Option<Option<Role>>)> = emails
                .split(['\n', ',', ';'])
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .take(100)
                .map(|e| (e.to_string(), None))
                .collect();
            let done = members::invite(state, org, emails, Some(role), false).await?;
            let until = crate::clock::iso(members::expires_at(state, state.now()));
            let notice = html! {
                div class="notice" role="status" {
                    p { (done.invited) " invited; " (done.joined.len()) " joined at once." }
                    @if !done.links.is_empty() {
                        p {
                            "These addresses have no account yet. Hand each person their link (shown only now): it lets them create their account and join, until "
                            (until) "."
                        }
                        ul {
                            @for (email, secret) in &done.links {
                                li {
                                    (email) ": "
                                    code class="invite-link" { (state.url(&format!("/join/{secret}"))) }
                                }
                            }
                        }
                    }
                }
            };
            Ok(Some(notice))
        }
        MemberForm::Withdraw { email } => {
            org.require_admin("withdraw invitations")?;
            store::invites::remove_pending(&state.db, &org.org.id, &email).await?;
            Ok(None)
        }
        MemberForm::Link { role } => {
            members::create_link(state, org, parse_role(&role)?).await?;
            Ok(None)
        }
        MemberForm::Unlink { link } => {
            org.require_admin("delete invite links")?;
            store::invites::delete_link(&state.db, &org.org.id, &link).await?;
            Ok(None)
        }
    }
}

/// The fields of the invitation screens' forms: the account an invited person creates (an
/// invitation by address knows the address), or nothing but the CSRF token when a
/// signed-in person joins through a link.
#[derive(Deserialize)]
pub struct AccountForm {
    name: Option<String>,
    email: Option<String>,
    password: Option<String>,
}

/// The form that creates an account from an invitation.
fn account_form(
    action: &str,
    csrf: Option<&str>,
    email: Option<&str>,
    error: Option<&str>,
) -> Markup {
    let min = crate::domain::accounts::MIN_PASSWORD;
    html! {
        @if let Some(e) = error {
            p class="error" role="alert" { (e) }
        }
        form method="post" action=(action) {
            @if let Some(c) = csrf {
                input type="hidden" name="csrf" value=(c);
            }
            label for="name" { "Your name" }
            input id="name" name="name" type="text" autocomplete="name" required maxlength="255";
            label for="email" { "E-mail" }
            @match email {
                Some(e) => { input id="email" type="email" value=(e) readonly; }
                None => { input id="email" name="email" type="email" autocomplete="username" required; }
            }
            label for="password" { "Password" }
            input id="password" name="password" type="password" autocomplete="new-password" required minlength=(min);
            p.muted { "At least " (min) " characters; a phrase of several words is best." }
            button type="submit" { "Create my account and join" }
        }
    }
}

/// `GET /join/{secret}`: an address's invitation, where the invited person creates their
/// account.
pub async fn join_page(State(state): State<AppState>, Path(secret): Path<String>) -> Response {
    match members::invitation(&state, &secret).await {
        Ok(Invitation::Open(invite)) => {
            let org = store::orgs::get(&state.db, &OrgId::new(invite.org_id.clone()))
                .await
                .ok()
                .flatten();
            let title = org.map(|o| o.title.clone()).unwrap_or_default();
            let body = html! {
                h1 { "Join " (title) }
                p { "You were invited as " (invite.email) "." }
                (account_form(&format!("/join/{secret}"), None, Some(&invite.email), None))
            };
            page(StatusCode::OK, "Join", None, None, body)
        }
        Ok(Invitation::Expired(invite)) => expired(&state, &invite),
        Ok(Invitation::Unknown) => not_found(None, members::UNKNOWN_MESSAGE),
        Err(e) => failed(e),
    }
}

/// The page of an expired invitation's link: 410, saying so and since when.
fn expired(state: &AppState, invite: &store::invites::PendingLink) -> Response {
    let since = crate::clock::iso(members::expires_at(state, invite.created_at));
    let body = html! {
        h1 { "Invitation expired" }
        p { (members::EXPIRED_MESSAGE) }
        p.muted { "It expired on " (since) "." }
    };
    page(StatusCode::GONE, "Invitation expired", None, None, body)
}

/// `POST /join/{secret}`: creates the invited address's account, which joins every
/// organization that invited it, and signs in.
pub async fn join(
    State(state): State<AppState>,
    Path(secret): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let form: AccountForm = match session::read_typed(&state, &headers, None, body).await {
        Ok(f) => f,
        Err(res) => return res,
    };
    let name = form.name.as_deref().filter(|n| !n.trim().is_empty());
    let password = form.password.as_deref().unwrap_or("");
    let invite = match members::invitation(&state, &secret).await {
        Ok(Invitation::Open(i)) => i,
        Ok(Invitation::Expired(i)) => return expired(&state, &i),
        Ok(Invitation::Unknown) => return not_found(None, members::UNKNOWN_MESSAGE),
        Err(e) => return failed(e),
    };
    match members::accept(&state, &secret, name, password).await {
        Ok(user) => {
            let next = format!("/o/{}", invite.org_id);
            session::open_session(&state, &headers, &user, &next).await
        }
        Err(AccountError::Exists) => see_other("/signin"),
        Err(AccountError::Invalid(why)) => page(
            StatusCode::BAD_REQUEST,
            "Join",
            None,
            None,
            html! {
                h1 { "Join" }
                (account_form(&format!("/join/{secret}"), None, Some(&invite.email), Some(&why)))
            },
        ),
        Err(AccountError::Busy) => crate::app::shell::busy(),
        Err(AccountError::Failed(e)) => failed(e),
    }
}

/// `GET /invite/{organizationId}/{inviteId}`: an invite link. Signed in: a button to join.
/// Otherwise: sign in (and come back), or create an account and join.
pub async fn link_page(
    State(state): State<AppState>,
    Path((org_id, invite_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let here = format!("/invite/{org_id}/{invite_id}");
    let link = match store::invites::get_link(&state.db, &org_id, &invite_id).await {
        Ok(Some(l)) => l,
        Ok(None) => return not_found(None, "This invite link does not exist."),
        Err(e) => return failed(e),
    };
    let org = match store::orgs::get(&state.db, &OrgId::new(org_id.clone())).await {
        Ok(Some(o)) if o.invite_links != 0 => o,
        Ok(_) => return not_found(None, "This invite link does not exist."),
        Err(e) => return failed(e),
    };
    let heading = html! {
        h1 { "Join " (org.title) }
        p { "This link lets you join as " (link.role.as_deref().unwrap_or("guest")) "." }
    };
    match session::current(&state, &headers).await {
        Ok(Some(signed)) => {
            let viewer = signed.viewer();
            let body = html! {
                (heading)
                form method="post" action=(here) {
                    input type="hidden" name="csrf" value=(viewer.csrf);
                    button type="submit" { "Join as " (signed.user.display_name) }
                }
            };
            page(StatusCode::OK, "Join", Some(&viewer), None, body)
        }
        Ok(None) => {
            let next: String = url::form_urlencoded::byte_serialize(here.as_bytes()).collect();
            let body = html! {
                (heading)
                p {
                    a href={ "/signin?next=" (next) } { "Sign in" }
                    " if you have an account, or create one:"
                }
                (account_form(&here, None, None, None))
            };
            page(StatusCode::OK, "Join", None, None, body)
        }
        Err(e) => failed(e),
    }
}

/// `POST /invite/{organizationId}/{inviteId}`: joins through the link (`op=join`, signed
/// in), or creates an account and joins (`op=create`).
pub async fn link_join(
    State(state): State<AppState>,
    Path((org_id, invite_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let here = format!("/invite/{org_id}/{invite_id}");
    let signed = match session::current(&state, &headers).await {
        Ok(s) => s,
        Err(e) => return failed(e),
    };
    let session = signed.as_ref().map(|s| &s.session);
    let form: AccountForm = match session::read_typed(&state, &headers, session, body).await {
        Ok(f) => f,
        Err(res) => return res,
    };
    let (caller, fresh) = match signed {
        Some(s) => (s.caller(), false),
        None => {
            let email = form.email.as_deref().unwrap_or("");
            let name = form.name.as_deref().filter(|n| !n.trim().is_empty());
            let password = form.password.as_deref().unwrap_or("");
            let refuse = |why: &str| {
                page(
                    StatusCode::BAD_REQUEST,
                    "Join",
                    None,
                    None,
                    html! {
                        h1 { "Join" }
                        (account_form(&here, None, None, Some(why)))
                    },
                )
            };
            match store::users::by_email(&state.db, &store::users::normalize_email(email)).await {
                Ok(Some(_)) => {
                    return refuse("An account with this address exists already: sign in instead.")
                }
                Ok(None) => {}
                Err(e) => return failed(e),
            }
            match crate::domain::accounts::set_password(
                &state.db,
                &state.hashing,
                email,
                name,
                password,
                crate::domain::accounts::Holder::New,
                state.now(),
            )
            .await
            {
                Ok(u) => (Caller::unscoped(std::sync::Arc::new(u)), true),
                Err(AccountError::Invalid(why)) => return refuse(&why),
                Err(AccountError::Exists) => {
                    return refuse("An account with this address exists already: sign in instead.")
                }
                Err(AccountError::Busy) => return crate::app::shell::busy(),
                Err(AccountError::Failed(e)) => return failed(e),
            }
        }
    };
    let user = caller.user.clone();
    let run = {
        let (state, org_id, invite_id) = (state.clone(), org_id.clone(), invite_id.clone());
        async move { members::join_with_link(&state, &caller, &org_id, &invite_id).await }
    };
    let done = match tokio::spawn(crate::cache::bypassed(run)).await {
        Ok(done) => done,
        Err(e) => return failed(e),
    };
    let next = format!("/o/{org_id}");
    match done {
        Ok(()) if fresh => session::open_session(&state, &headers, &user, &next).await,
        Ok(()) => see_other(&next),
        Err(ApiError::Internal(e)) => failed(e),
        Err(e) => page(
            e.status(),
            "Not joined",
            None,
            None,
            html! {
                h1 { "Not joined" }
                p class="error" role="alert" { (e.to_string()) }
            },
        ),
    }
}

/// Most teams, and members of each, the teams screen lists.
const TEAMS_SHOWN: i64 = 200;

/// `GET /o/{organizationId}/teams`: the teams and their members (for members); admins
/// create and delete teams, admins and a team's owners change its members.
pub async fn teams_page(
    State(state): State<AppState>,
    signed: Signed,
    InOrg(org): InOrg,
) -> Response {
    let viewer = signed.viewer();
    let caller = signed.caller();
    match teams_html(&state, &org, &caller, &viewer).await {
        Ok(body) => page(StatusCode::OK, "Teams", Some(&viewer), None, body),
        Err(e) => failed(e),
    }
}

async fn teams_html(
    state: &AppState,
    org: &OrgCtx,
    caller: &Caller,
    viewer: &Viewer<'_>,
) -> crate::error::ApiResult<Markup> {
    let manage = crate::domain::teams::owned_teams(state, org, caller).await?;
    let id = org.org.id.as_str();
    let csrf = viewer.csrf;
    let action = format!("/o/{id}/teams");
    let (teams, total) = store::teams::list(
        &state.db,
        &org.org.id,
        &Default::default(),
        None,
        TEAMS_SHOWN,
    )
    .await?;
    let (members, _) = if teams.iter().any(|(t, _)| manage.can_manage(&t.id)) {
        let filter = store::members::MemberFilter {
            ascending: true,
            ..Default::default()
        };
        store::members::list(&state.db, &org.org.id, &filter, None, LIST_LIMIT).await?
    } else {
        (Vec::new(), 0)
    };
    // Each team's members.
    let mut lists = Vec::with_capacity(teams.len());
    for (t, _) in &teams {
        let (list, _) = store::teams::list_members(&state.db, &t.id, None, TEAMS_SHOWN).await?;
        lists.push(list);
    }
    Ok(html! {
        nav class="crumbs" aria-label="Breadcrumb" {
            ol { li { a href={ "/o/" (id) } { (org.org.title) } } }
        }
        h1 { "Teams" }
        @if total == 0 {
            p.muted { "No team yet." }
        }
        @for ((t, _), list) in teams.iter().zip(&lists) {
            @let tid = t.id.as_str();
            @let can = manage.can_manage(&t.id);
            section class="team" data-team=(tid) aria-labelledby={ "team-" (tid) } {
                h2 id={ "team-" (tid) } {
                    (t.title)
                    " "
                    span.muted { (t.members) " member" @if t.members != 1 { "s" } }
                }
                ul {
                    @for m in list {
                        li {
                            (m.member.display_name)
                            " "
                            span.muted { (m.team_role) }
                            @if can {
                                " "
                                form method="post" action=(action) class="inline" {
                                    input type="hidden" name="csrf" value=(csrf);
                                    input type="hidden" name="op" value="leave";
                                    input type="hidden" name="team" value=(tid);
                                    input type="hidden" name="user" value=(m.member.user_id.as_str());
                                    button type="submit" { "Remove" }
                                }
                            }
                        }
                    }
                }
                @if can {
                    form method="post" action=(action) {
                        input type="hidden" name="csrf" value=(csrf);
                        input type="hidden" name="op" value="join";
                        input type="hidden" name="team" value=(tid);
                        label for={ "add-" (tid) } { "Add a member" }
                        select id={ "add-" (tid) } name="user" {
                            @for m in &members {
                                option value=(m.user_id.as_str()) { (m.display_name) }
                            }
                        }
                        " "
                        label for={ "owner-" (tid) } class="plain" {
                            input id={ "owner-" (tid) } type="checkbox" name="owner" value="yes";
                            " as an owner"
                        }
                        " "
                        button type="submit" { "Add" }
                    }
                }
                @if org.is_admin() {
                    form method="post" action=(action) {
                        input type="hidden" name="csrf" value=(csrf);
                        input type="hidden" name="op" value="delete";
                        input type="hidden" name="team" value=(tid);
                        button type="submit" class="danger" { "Delete the team" }
                    }
                }
            }
        }
        @if org.is_admin() {
            h2 { "New team" }
            form method="post" action=(action) {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="op" value="create";
                label for="team-title" { "Name" }
                input id="team-title" name="title" type="text" required maxlength="64";
                button type="submit" { "Create the team" }
            }
        }
    })
}

/// The forms of `POST /o/{organizationId}/teams`, by their `op`.
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum TeamForm {
    /// A new team.
    Create { title: String },
    /// Deletes a team.
    Delete { team: String },
    /// Adds a member to a team, as an owner when `owner` is sent.
    Join {
        team: String,
        user: String,
        owner: Option<String>,
    },
    /// Removes a member from a team.
    Leave { team: String, user: String },
}

/// `POST /o/{organizationId}/teams`: `create` and `delete` a team (admins), `join` (add)
/// and `leave` (remove) a member (admins and the team's owners).
pub async fn teams_action(
    State(state): State<AppState>,
    signed: Signed,
    InOrg(org): InOrg,
    Posted(ByOp(form)): Posted<ByOp<TeamForm>>,
) -> Response {
    let viewer = signed.viewer();
    let caller = signed.caller();
    let here = format!("/o/{}/teams", org.org.id.as_str());
    let run = {
        let state = state.clone();
        async move {
            use crate::domain::teams;
            match form {
                TeamForm::Create { title } => {
                    teams::create(&state, &org, &title, &[]).await.map(|_| ())
                }
                TeamForm::Delete { team } => teams::delete(&state, &org, &team).await,
                TeamForm::Join { team, user, owner } => {
                    let role = owner.is_some().then_some("owner");
                    teams::add_member(&state, &org, &caller, &team, (&user, "user"), role).await
                }
                TeamForm::Leave { team, user } => {
                    teams::remove_member(&state, &org, &caller, &team, &user).await
                }
            }
        }
    };
    let to = here.clone();
    run_write(&viewer, &here, "Back to the teams", async move {
        run.await.map(|()| to)
    })
    .await
}

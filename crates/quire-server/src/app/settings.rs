//! A space's settings in the app: title, emoji, edit mode and visibility, deleting the
//! space and restoring it within the retention. The forms run the domain's space
//! workflows, the API's own; each field is offered only to the roles that may change it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use maud::{html, Markup};
use serde::Deserialize;

use super::routes::InSpace;
use super::session::{Posted, Signed};
use super::shell::options;
use super::shell::{page, run_write, Viewer};
use crate::domain::access::grants::Grants;
use crate::domain::access::{Role, SpaceCtx};
use crate::domain::spaces::{self, Settings};
use crate::error::ApiError;
use crate::state::AppState;
use crate::values::{EditMode, Visibility};

/// The settings screen of a space (`nav`: its sidebar; empty for a deleted space).
pub fn screen(ctx: &SpaceCtx, viewer: &Viewer<'_>, nav: Option<&Markup>) -> Response {
    let space = &ctx.space;
    let action = format!("/s/{}/~/settings", space.id);
    let csrf = html! { input type="hidden" name="csrf" value=(viewer.csrf); };
    let admin = ctx.role >= Role::Admin;
    let body = html! {
        h1 { "Settings of " (space.title) }
        @if space.deleted_at.is_some() {
            p.notice { "This space is deleted. It can be restored until it is purged." }
            form method="post" action=(action) {
                (csrf)
                input type="hidden" name="op" value="restore";
                button type="submit" { "Restore the space" }
            }
        } @else if ctx.role < Role::Edit {
            p { "Changing a space's settings needs the edit role on it." }
        } @else {
            form method="post" action=(action) {
                (csrf)
                input type="hidden" name="op" value="save";
                label for="title" { "Title" }
                input #title name="subject" type="text" maxlength="50" value=(space.title);
                label for="emoji" { "Emoji" }
                input #emoji name="emoji" type="text" maxlength="50"
                    value=(space.emoji.as_deref().map(super::screens::emoji).unwrap_or_default());
                @if admin {
                    label for="mode" { "Editing" }
                    select #mode name="status" {
                        @for (mode, label) in [
                            (EditMode::Live, "Live: change requests and live edits"),
                            (EditMode::Locked, "Locked: nothing is merged"),
                        ] {
                            option value=(mode.as_str()) selected[space.edit_mode == mode] { (label) }
                        }
                    }
                    label for="visibility" { "Visibility" }
                    select #visibility name="role" {
                        @for v in Visibility::ALL {
                            @if *v != Visibility::InCollection || space.parent_id.is_some() {
                                option value=(v.as_str()) selected[space.visibility == *v] { (v.as_str()) }
                            }
                        }
                    }
                }
                button type="submit" { "Save" }
            }
            @if admin {
                h2 { "Collection" }
                (place_form(
                    &ctx.grants,
                    None,
                    space.parent_id.as_deref().unwrap_or(""),
                    (&action, viewer.csrf),
                    "parent",
                ))
                h2 { "Delete" }
                p { "A deleted space can be restored by an admin until it is purged." }
                form method="post" action=(action) {
                    (csrf)
                    input type="hidden" name="op" value="delete";
                    p {
                        input #confirm name="confirm" type="checkbox" value="yes" required;
                        " "
                        label.plain for="confirm" { "Yes, delete " (space.title) }
                    }
                    button.danger type="submit" { "Delete the space" }
                }
            }
        }
    };
    page(StatusCode::OK, "Settings", Some(viewer), nav, body)
}

/// What a settings form asks for.
#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SettingsOp {
    /// Title and emoji, and for admins the edit mode and visibility.
    Save,
    /// Delete the space (with `confirm=yes`).
    Delete,
    /// Restore a deleted space.
    Restore,
    /// Move the space into `parent` (a collection, or the organization when empty).
    Move,
}

/// The settings screen's forms (`op` says which).
#[derive(Deserialize)]
pub struct SettingsForm {
    op: SettingsOp,
    /// The title.
    subject: Option<String>,
    /// Empty removes the emoji.
    #[serde(default, deserialize_with = "super::session::sent")]
    emoji: Option<String>,
    /// The edit mode (`live`, `locked`).
    status: Option<String>,
    /// The visibility.
    role: Option<String>,
    /// `yes`: the deletion is confirmed.
    confirm: Option<String>,
    /// The collection the space moves into.
    parent: Option<String>,
}

/// `POST /s/{spaceId}/~/settings`: saves, deletes (confirmed) or restores, through the
/// domain's workflows on a task of their own; then to the space (or its organization).
/// Served for a deleted space too: its admins restore it here.
pub async fn act(
    State(state): State<AppState>,
    signed: Signed,
    InSpace(ctx): InSpace,
    Posted(form): Posted<SettingsForm>,
) -> Response {
    let viewer = signed.viewer();
    let here = format!("/s/{}/~/settings", ctx.space.id);
    let org = ctx.space.org_id.to_string();
    let run = {
        let state = state.clone();
        async move {
            match form.op {
                SettingsOp::Save => {
                    let mut change = Settings {
                        title: form.subject.map(|t| t.trim().to_string()),
                        emoji: form.emoji.as_deref().map(emoji_code),
                        ..Default::default()
                    };
                    if ctx.role >= Role::Admin {
                        change.edit_mode = match form.status.as_deref() {
                            None => None,
                            Some(m) => Some(EditMode::parse(m).ok_or_else(|| {
                                ApiError::bad_request(format!(
                                    "`editMode` must be one of {}.",
                                    EditMode::names()
                                ))
                            })?),
                        };
                        change.visibility = match form.role.as_deref() {
                            None => None,
                            Some(v) => Some(Visibility::parse(v).ok_or_else(|| {
                                ApiError::bad_request(format!(
                                    "`visibility` must be one of {}.",
                                    Visibility::names()
                                ))
                            })?),
                        };
                    }
                    spaces::update(&state, &ctx, change).await.map(|_| true)
                }
                SettingsOp::Delete => {
                    if form.confirm.as_deref() != Some("yes") {
                        return Err(ApiError::bad_request(
                            "Tick the confirmation to delete the space.",
                        ));
                    }
                    spaces::delete(&state, &ctx).await.map(|_| false)
                }
                SettingsOp::Restore => spaces::restore(&state, &ctx).await.map(|_| true),
                SettingsOp::Move => {
                    let body = crate::domain::placement::MoveBody {
                        parent: Some(form.parent.filter(|p| !p.is_empty())),
                        position: None,
                    };
                    spaces::move_space(&state, &ctx, &body).await.map(|_| true)
                }
            }
        }
    };
    let space = here.trim_end_matches("/~/settings").to_string();
    // A deleted space is gone from its own screens: back to its organization.
    let done = async move {
        run.await
            .map(|kept| if kept { space } else { format!("/o/{org}") })
    };
    run_write(&viewer, &here, "Back to the settings", done).await
}

/// An emoji as typed (`📘`) in the API's form, its code points in hex (`1f4d8`); a code
/// given as such stays; empty removes the emoji.
fn emoji_code(typed: &str) -> Option<String> {
    let typed = typed.trim();
    if typed.is_empty() {
        return None;
    }
    if typed.is_ascii() {
        return Some(typed.to_string());
    }
    Some(
        typed
            .chars()
            .filter(|c| *c != '\u{fe0f}')
            .map(|c| format!("{:x}", c as u32))
            .collect::<Vec<_>>()
            .join("-"),
    )
}

/// The form that moves a space or a collection (`op` `move`, `parent`): into the
/// organization or a collection the user creates in, but not into `moving` (a collection)
/// or anything below it; `current` is selected. Posted to `action` with the session's
/// `csrf`; `id` names its select.
pub(super) fn place_form(
    grants: &Grants,
    moving: Option<&str>,
    current: &str,
    (action, csrf): (&str, &str),
    id: &str,
) -> Markup {
    let mut places: Vec<(&str, &str)> = grants
        .collections()
        .values()
        .filter(|c| moving.is_none_or(|m| !grants.is_within(&c.id, m)))
        .filter(|c| grants.collection_role(c).is_some_and(|r| r >= Role::Create))
        .map(|c| (c.id.as_str(), c.title.as_str()))
        .collect();
    places.sort_by(|a, b| a.1.cmp(b.1));
    html! {
        form method="post" action=(action) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="op" value="move";
            label for=(id) { "In" }
            select #(id) name="parent" {
                (options(std::iter::once(("", "The organization")).chain(places), current))
            }
            button type="submit" { "Move" }
        }
    }
}

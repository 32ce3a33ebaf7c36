//! Discussions in the app: the comments of a space, of one of its pages and of a change
//! request, with their replies and reactions, and the forms that post, reply, resolve,
//! reopen, edit, react and delete. Every action runs the domain's comment workflows, the
//! API's own; a form is offered only where the workflow would allow it.

use maud::{html, Markup, PreEscaped};
use quire_content::html::{render_document, FileRef};
use quire_content::model::ContentRef;

use super::shell::Viewer;
use crate::domain::access::{self, Role};
use crate::domain::comments::{self, BodyIn, Change, Thread};
use crate::error::{ApiError, ApiResult};
use crate::ids::UserId;
use crate::state::AppState;
use crate::store;
use crate::store::comments::{CommentFilter, ReactionRow};
use crate::values::{ChangeRequestStatus, CommentStatus};

/// Most comments a discussion shows, and most replies in all.
const COMMENTS_SHOWN: i64 = 100;
const REPLIES_SHOWN: i64 = 1000;

/// Emojis offered as reactions besides those already left.
const OFFERED: [&str; 3] = ["👍", "🎉", "❤️"];

/// Resolves only plain links: comments refer to no page of a revision the screen holds.
struct PlainLinks;

impl quire_content::html::Resolve for PlainLinks {
    fn page_url(&self, _page_id: &str, _anchor: Option<&str>) -> Option<String> {
        None
    }

    fn file(&self, _file_id: &str) -> Option<FileRef> {
        None
    }

    fn other(&self, r: &ContentRef) -> Option<String> {
        quire_content::html::ref_url(self, r, &|s| Some(format!("/s/{s}")))
    }
}

/// Where a thread's forms post: `/s/{space}/~/comments` or
/// `/s/{space}/~/changes/{number}/comments`.
pub fn actions_base(thread: &Thread) -> String {
    match &thread.cr {
        Some(cr) => format!(
            "/s/{}/~/changes/{}/comments",
            thread.ctx.space.id, cr.number
        ),
        None => format!("/s/{}/~/comments", thread.ctx.space.id),
    }
}

/// Renders a discussion: the comments of `thread` (only those on `page` when given), oldest
/// first, with replies, reactions and the forms the viewer may use; `back` is where the
/// forms return to.
pub async fn section(
    state: &AppState,
    thread: &Thread,
    viewer: &Viewer<'_>,
    page: Option<&str>,
    back: &str,
) -> ApiResult<Markup> {
    let user = viewer.user;
    let filter = CommentFilter {
        ascending: true,
        page: page.map(str::to_string),
        ..Default::default()
    };
    let space = &thread.ctx.space.id;
    let (list, total) = store::comments::list(
        &state.db,
        space,
        thread.cr_id(),
        &filter,
        None,
        COMMENTS_SHOWN,
    )
    .await?;
    let ids: Vec<&str> = list.iter().map(|c| c.id.as_str()).collect();
    let replies = store::comments::replies_of(&state.db, &ids, REPLIES_SHOWN).await?;
    let mut targets = ids.clone();
    targets.extend(replies.iter().map(|r| r.id.as_str()));
    let reactions = store::comments::reactions(&state.db, &targets).await?;
    let mut people: Vec<&str> = list.iter().map(|c| c.posted_by.as_str()).collect();
    people.extend(replies.iter().map(|r| r.posted_by.as_str()));
    let people = access::people(state, &people).await?;
    let name = |id: &str| {
        people
            .get(id)
            .map(|u| u.display_name.clone())
            .unwrap_or_else(|| "Former member".to_string())
    };
    let form = Forms {
        base: actions_base(thread),
        csrf: viewer.csrf,
        back,
    };
    let heading = if page.is_some() {
        "Comments"
    } else {
        "Discussion"
    };
    // The editor links first: finding a comment's line reads its page.
    let mut located = Located::default();
    let mut links = Vec::with_capacity(list.len());
    for c in &list {
        links.push(editor_link(state, thread, c, &mut located).await?);
    }
    let out = html! {
        section class="discussion" aria-labelledby="discussion" {
            h2 id="discussion" { (heading) " " span class="muted" { (total) } }
            @if list.is_empty() {
                p class="muted" { "No comment yet." }
            }
            @for (c, link) in list.iter().zip(&links) {
                @let may = thread.may(user, &c.posted_by);
                @let resolved = c.status == CommentStatus::Resolved;
                @let target = format!("{}/{}", form.base, c.id);
                article class={ "comment" @if resolved { " resolved" } } id={ "comment-" (c.id) } data-comment=(c.id) {
                    p {
                        strong { (name(&c.posted_by)) }
                        " "
                        span class="muted" {
                            (crate::clock::iso(c.posted_at))
                            @if c.edited_at.is_some() { " · edited" }
                            @if let (Some(t), None) = (&c.page_title, page) { " · on " (t) }
                            @if resolved { " · resolved" }
                        }
                    }
                    // why: the comment's markdown as the content renderer renders it.
                    div class="content" { (PreEscaped(rendered(&c.body))) }
                    @if let Some(link) = link { (link) }
                    (form.reactions(&target, &c.id, &reactions, user, may.reply))
                    div class="actions" {
                        @if may.reply {
                            @if resolved {
                                (form.button(&format!("{target}/reopen"), "Reopen"))
                            } @else {
                                (form.button(&format!("{target}/resolve"), "Resolve"))
                            }
                        }
                        @if may.delete {
                            (form.button(&format!("{target}/delete"), "Delete"))
                        }
                    }
                    @if may.edit {
                        (form.edit(&format!("{target}/edit"), &c.body))
                    }
                    @let mine: Vec<_> = replies.iter().filter(|r| r.comment_id == c.id).collect();
                    @if !mine.is_empty() {
                        ol class="replies" {
                            @for r in mine {
                                @let may_r = thread.may(user, &r.posted_by);
                                @let rt = format!("{target}/replies/{}", r.id);
                                li class="reply" id={ "reply-" (r.id) } {
                                    p {
                                        strong { (name(&r.posted_by)) }
                                        " "
                                        span class="muted" {
                                            (crate::clock::iso(r.posted_at))
                                            @if r.edited_at.is_some() { " · edited" }
                                        }
                                    }
                                    // why: the reply's markdown as the content renderer renders it.
                                    div class="content" { (PreEscaped(rendered(&r.body))) }
                                    (form.reactions(&rt, &r.id, &reactions, user, may_r.reply))
                                    @if may_r.delete {
                                        div class="actions" {
                                            (form.button(&format!("{rt}/delete"), "Delete"))
                                        }
                                    }
                                    @if may_r.edit {
                                        (form.edit(&format!("{rt}/edit"), &r.body))
                                    }
                                }
                            }
                        }
                    }
                    @if may.reply {
                        (form.write(&format!("{target}/reply"), "Reply", "Reply", None))
                    }
                }
            }
            @if thread.live() && thread.ctx.role >= Role::Comment {
                @let label = if page.is_some() { "Comment on this page" } else { "New comment" };
                (form.write(&form.base, label, "Comment", page))
            }
        }
    };
    Ok(out)
}

/// Most comments of one screen whose block is looked for in their page.
const LOCATED: usize = 20;

/// What one screen found for its comments: each page's text in the change request now, and
/// the lines of comments' blocks, by revision, page and node.
#[derive(Default)]
struct Located {
    now: std::collections::HashMap<String, Option<std::sync::Arc<str>>>,
    lines: std::collections::HashMap<(String, String, String), Option<usize>>,
}

/// For a comment on a page of an open change request, to those who may edit it: a link to
/// the page in the editor, at the line of the block the comment is about when that can be
/// told (the block found in the text the comment was made on, its first line then found in
/// the text as it is now, nearest the same place; for at most [`LOCATED`] blocks a screen).
async fn editor_link(
    state: &AppState,
    thread: &Thread,
    c: &store::comments::CommentRow,
    located: &mut Located,
) -> ApiResult<Option<Markup>> {
    let (Some(cr), Some(page)) = (&thread.cr, &c.page_id) else {
        return Ok(None);
    };
    let open = matches!(
        cr.status,
        ChangeRequestStatus::Open | ChangeRequestStatus::Draft
    );
    if !open || super::editor::why_not(&thread.ctx).is_some() {
        return Ok(None);
    }
    let ctx = &thread.ctx;
    let now = match located.now.get(page) {
        Some(now) => now.clone(),
        None => {
            let now = super::editor::document_at(state, ctx, &cr.revision_id, page)
                .await?
                .map(std::sync::Arc::from);
            located.now.insert(page.clone(), now.clone());
            now
        }
    };
    let Some(now) = now else {
        return Ok(None);
    };
    let key = (
        c.revision_id.clone(),
        page.clone(),
        c.node_id.clone().unwrap_or_default(),
    );
    let line = match (&c.node_id, located.lines.get(&key)) {
        (None, _) => None,
        (Some(_), Some(line)) => *line,
        // Each lookup reads the page as the comment saw it: a few per screen, not one per
        // comment of a long discussion.
        (Some(_), None) if located.lines.len() >= LOCATED => None,
        (Some(node), None) => {
            let then = super::editor::document_at(state, ctx, &c.revision_id, page)
                .await
                .ok()
                .flatten();
            let line = then.and_then(|then| {
                let at = quire_content::markdown::node_line(&then, page, node)?;
                let first = then.lines().nth(at - 1)?;
                now.lines()
                    .enumerate()
                    .filter(|(_, l)| *l == first)
                    .min_by_key(|(i, _)| i.abs_diff(at - 1))
                    .map(|(i, _)| i + 1)
            });
            located.lines.insert(key, line);
            line
        }
    };
    let href = format!(
        "/s/{}/~/changes/{}/edit/{}{}",
        ctx.space.id,
        cr.number,
        page,
        line.map(|l| format!("?line={l}")).unwrap_or_default()
    );
    let label = match line {
        Some(l) => format!("Open in the editor at line {l}"),
        None => "Open the page in the editor".to_string(),
    };
    Ok(Some(html! {
        p class="to-editor" { a href=(href) { (label) } }
    }))
}

fn rendered(markdown: &str) -> String {
    let document = quire_content::markdown::markdown_to_document(markdown);
    render_document(&document, &PlainLinks).html
}

/// The forms of one discussion.
struct Forms<'a> {
    base: String,
    csrf: &'a str,
    back: &'a str,
}

impl Forms<'_> {
    fn hidden(&self) -> Markup {
        html! {
            input type="hidden" name="csrf" value=(self.csrf);
            input type="hidden" name="back" value=(self.back);
        }
    }

    fn button(&self, action: &str, label: &str) -> Markup {
        html! {
            form method="post" action=(action) class="inline" {
                (self.hidden())
                button type="submit" { (label) }
            }
        }
    }

    /// A text area that posts markdown to `action`.
    fn write(&self, action: &str, label: &str, submit: &str, page: Option<&str>) -> Markup {
        html! {
            form method="post" action=(action) class="write" {
                (self.hidden())
                @if let Some(p) = page {
                    input type="hidden" name="page" value=(p);
                }
                label { (label) textarea name="body" rows="3" required maxlength="65536" {} }
                button type="submit" { (submit) }
            }
        }
    }

    /// The author's edit form, folded.
    fn edit(&self, action: &str, markdown: &str) -> Markup {
        html! {
            details class="edit" {
                summary { "Edit" }
                form method="post" action=(action) class="write" {
                    (self.hidden())
                    label { "Markdown" textarea name="body" rows="4" required maxlength="65536" { (markdown) } }
                    button type="submit" { "Save" }
                }
            }
        }
    }

    /// The reactions on `id`: each left emoji with its count (pressed when the user left
    /// it; pressing takes it back), and the offered ones not yet left. A button's name holds
    /// its visible text (the emoji and the count), after what pressing it does.
    fn reactions(
        &self,
        target: &str,
        id: &str,
        all: &[ReactionRow],
        user: &str,
        may: bool,
    ) -> Markup {
        let mut counts: Vec<(&str, usize, bool)> = Vec::new();
        for r in all.iter().filter(|r| r.target_id == id) {
            match counts.iter_mut().find(|(e, _, _)| *e == r.emoji) {
                Some(c) => {
                    c.1 += 1;
                    c.2 |= r.user_id == user;
                }
                None => counts.push((&r.emoji, 1, r.user_id == user)),
            }
        }
        if counts.is_empty() && !may {
            return html! {};
        }
        // Emojis no one left are offered only to who may react.
        let offered = OFFERED
            .iter()
            .filter(|e| may && !counts.iter().any(|(c, _, _)| c == *e))
            .map(|e| (*e, 0, false));
        let shown: Vec<_> = counts.iter().copied().chain(offered).collect();
        html! {
            div class="reactions" {
                @for (emoji, n, pressed) in shown {
                    @let count = if n > 0 { format!(" {n}") } else { String::new() };
                    @if !may {
                        span class="reaction" { (emoji) (count) }
                        " "
                    } @else {
                        form method="post" action={ (target) "/react" } class="inline" {
                            (self.hidden())
                            input type="hidden" name="emoji" value=(emoji);
                            input type="hidden" name="op" value=(if pressed { "remove" } else { "add" });
                            button type="submit" class="reaction" aria-pressed=(pressed)
                                aria-label={ (if pressed { "Take back" } else { "React with" }) " " (emoji) (count) } {
                                (emoji) (count)
                            }
                        }
                        " "
                    }
                }
            }
        }
    }
}

/// What a discussion form asks for, from the path after the thread's `comments`.
pub enum Act {
    /// Post a comment (on `page` when given).
    Post,
    /// Act on a comment: `reply`, `resolve`, `reopen`, `edit`, `react`, `delete`.
    Comment(String, String),
    /// Act on a reply: `edit`, `react`, `delete`.
    Reply(String, String, String),
}

impl Act {
    /// The act named by the path segments after `comments`.
    pub fn parse(rest: &[&str]) -> Option<Act> {
        match rest {
            [] => Some(Act::Post),
            [id, verb @ ("reply" | "resolve" | "reopen" | "edit" | "react" | "delete")] => {
                Some(Act::Comment(id.to_string(), verb.to_string()))
            }
            [id, "replies", reply, verb @ ("edit" | "react" | "delete")] => Some(Act::Reply(
                id.to_string(),
                reply.to_string(),
                verb.to_string(),
            )),
            _ => None,
        }
    }
}

/// What a discussion form sent.
pub struct Sent {
    /// Markdown of a comment or reply.
    pub body: Option<String>,
    /// The page a new comment is about.
    pub page: Option<String>,
    /// An emoji, and whether to `add` or `remove` it.
    pub emoji: Option<(String, bool)>,
}

/// Runs a discussion form's act through the domain's workflows; answers the fragment to
/// return to (`comment-{id}`).
pub async fn run(
    state: &AppState,
    thread: &Thread,
    user: &UserId,
    act: Act,
    sent: Sent,
) -> ApiResult<String> {
    let body = || {
        sent.body
            .clone()
            .map(|markdown| BodyIn::Markdown { markdown })
            .ok_or_else(|| ApiError::bad_request("`body` must not be empty."))
    };
    let reaction = || match &sent.emoji {
        Some((e, true)) => Ok(Change {
            added_reactions: vec![e.clone()],
            ..Default::default()
        }),
        Some((e, false)) => Ok(Change {
            removed_reactions: vec![e.clone()],
            ..Default::default()
        }),
        None => Err(ApiError::bad_request("`emoji` must be given.")),
    };
    let edit = || -> ApiResult<Change> {
        Ok(Change {
            body: Some(body()?),
            ..Default::default()
        })
    };
    match act {
        Act::Post => {
            let anchor = comments::Anchor {
                page: sent.page.clone().filter(|p| !p.is_empty()),
                ..Default::default()
            };
            let c = comments::post(state, thread, user, body()?, anchor).await?;
            Ok(format!("comment-{}", c.id))
        }
        Act::Comment(id, verb) => {
            match verb.as_str() {
                "reply" => {
                    let r = comments::reply(state, thread, user, &id, body()?).await?;
                    return Ok(format!("reply-{}", r.id));
                }
                "delete" => {
                    comments::delete(state, thread, user, &id).await?;
                    return Ok("discussion".into());
                }
                "resolve" | "reopen" => {
                    let change = Change {
                        resolved: Some(verb == "resolve"),
                        ..Default::default()
                    };
                    comments::update(state, thread, user, &id, change).await?;
                }
                "edit" => {
                    comments::update(state, thread, user, &id, edit()?).await?;
                }
                _ => {
                    comments::update(state, thread, user, &id, reaction()?).await?;
                }
            }
            Ok(format!("comment-{id}"))
        }
        Act::Reply(id, reply, verb) => {
            let ids = (id.as_str(), reply.as_str());
            match verb.as_str() {
                "delete" => {
                    comments::delete_reply(state, thread, user, ids).await?;
                    return Ok(format!("comment-{id}"));
                }
                "edit" => {
                    comments::update_reply(state, thread, user, ids, edit()?).await?;
                }
                _ => {
                    comments::update_reply(state, thread, user, ids, reaction()?).await?;
                }
            }
            Ok(format!("reply-{reply}"))
        }
    }
}

//! Site insights: events sent by published sites (`trackEventsInSiteById`, and the site's
//! own `~insights` path), counted per day in `store::insights`, and read back by
//! `aggregateSiteEvents` and the app's site screen.
//!
//! Nothing of the visitor is kept: no address, user agent, cookie, language, referrer,
//! session or visitor id (the session the spec requires is checked for its shape, then
//! dropped). What is kept per site and UTC day: the event's type, its section, site space,
//! space and page, and by type the search query (trimmed, lowercased, cut to
//! [`MAX_TEXT_CHARS`]), the link's target and position, or the rating given. Feedback
//! comments and questions asked are not kept. A day holds at most [`KEYS_PER_DAY`] keys,
//! [`TEXTS_PER_DAY`] of them free text (queries, link targets); later new keys count under
//! their event type alone. Days older than [`RETENTION_DAYS`] are deleted by [`PRUNE_JOB`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::domain::{access, content, published};
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use crate::store;
use crate::store::insights::{Caps, Kept, Key};
use crate::store::sites::{SiteRow, Structure};

/// Most events one request may send.
pub const MAX_EVENTS: usize = 100;

/// Largest request body of events, in bytes.
pub const MAX_BODY: usize = 256 * 1024;

/// Longest search query or link URL kept, in characters (longer ones are cut).
pub const MAX_TEXT_CHARS: usize = 200;

/// Keys (distinct combinations of dimensions) one site's day may hold.
pub const KEYS_PER_DAY: i64 = 1000;

/// Of those, keys holding free text (search queries, link targets).
pub const TEXTS_PER_DAY: i64 = 200;

/// Days of counts kept.
pub const RETENTION_DAYS: i64 = 90;

/// Job kind that deletes the counts of days past the retention.
pub const PRUNE_JOB: &str = "prune-insights";

/// The job that prunes old insight counts.
pub const PRUNE_KIND: crate::state::JobKind = crate::state::JobKind {
    name: PRUNE_JOB,
    run: |state, _| Box::pin(async move { prune(state).await.map(drop) }),
    given_up: None,
};

/// Track requests writing at once on this node; others wait their turn a short while.
const WRITERS: usize = 4;

const DAY_MS: i64 = 86_400_000;

/// The event types of the spec (`SiteInsightsEventType`).
pub const EVENT_TYPES: [&str; 14] = [
    "page_view",
    "search_open",
    "search_type_query",
    "search_open_result",
    "page_post_feedback",
    "page_post_feedback_comment",
    "ask_question",
    "ask_rate_response",
    "link_click",
    "api_client_open",
    "api_client_request",
    "ad_click",
    "ad_display",
    "trademark_click",
];

const RATINGS: [&str; 3] = ["bad", "ok", "good"];
const LINK_POSITIONS: [&str; 5] = ["announcement", "header", "footer", "sidebar", "content"];
const LINK_KINDS: [&str; 8] = [
    "url",
    "page",
    "file",
    "anchor",
    "space",
    "collection",
    "user",
    "reusable-content",
];

/// What a track request counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tracked {
    /// Events counted.
    pub counted: usize,
    /// Valid events left out: their section, site space, space or page is not the site's.
    pub skipped: usize,
}

/// One checked event, before it is matched with the site.
struct Event {
    day: i64,
    event_type: &'static str,
    section: Option<String>,
    site_space: Option<String>,
    space: Option<String>,
    page: Option<String>,
    detail: String,
    position: String,
    text: bool,
}

fn bad(field: &str, what: &str) -> ApiError {
    ApiError::bad_request(format!("`{field}` {what}"))
}

fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => text[..at].to_string(),
        None => text.to_string(),
    }
}

/// `v[name]` as a required string.
fn req_str<'v>(v: &'v Value, base: &str, name: &str) -> ApiResult<&'v str> {
    match v.get(name) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(bad(&format!("{base}.{name}"), "must be a string.")),
        None => Err(bad(&format!("{base}.{name}"), "is required.")),
    }
}

/// `v[name]`, required, a string or null.
fn req_nullable<'v>(v: &'v Value, base: &str, name: &str) -> ApiResult<Option<&'v str>> {
    match v.get(name) {
        Some(Value::String(s)) => Ok(Some(s)),
        Some(Value::Null) => Ok(None),
        Some(_) => Err(bad(&format!("{base}.{name}"), "must be a string or null.")),
        None => Err(bad(&format!("{base}.{name}"), "is required.")),
    }
}

fn req_obj<'v>(v: &'v Value, base: &str, name: &str) -> ApiResult<&'v Map<String, Value>> {
    match v.get(name) {
        Some(Value::Object(o)) => Ok(o),
        Some(_) => Err(bad(&format!("{base}.{name}"), "must be an object.")),
        None => Err(bad(&format!("{base}.{name}"), "is required.")),
    }
}

fn one_of(v: &str, field: &str, allowed: &[&str]) -> ApiResult<()> {
    match allowed.contains(&v) {
        true => Ok(()),
        false => Err(bad(
            field,
            &format!("must be one of {}.", allowed.join(", ")),
        )),
    }
}

/// A URL the spec types as `URL`: absolute, at most 2048 characters.
fn check_url(v: &str, field: &str) -> ApiResult<()> {
    if v.len() > 2048 || url::Url::parse(v).is_err() {
        return Err(bad(
            field,
            "must be an absolute URL of at most 2048 characters.",
        ));
    }
    Ok(())
}

/// An id the location names: a non-empty string of at most 128 characters, or none.
fn id_of(v: Option<&str>, field: &str) -> ApiResult<Option<String>> {
    match v {
        None | Some("") => Ok(None),
        Some(s) if s.len() <= 128 => Ok(Some(s.to_string())),
        Some(_) => Err(bad(field, "is longer than 128 characters.")),
    }
}

/// A search query as counted: trimmed, spaces folded, lowercased, cut.
fn query_key(q: &str) -> String {
    let folded = q.split_whitespace().collect::<Vec<_>>().join(" ");
    cut(&folded.to_lowercase(), MAX_TEXT_CHARS)
}

/// A link target (`ContentRef`) checked and kept as compact JSON of its known fields.
fn link_target(v: &Value, field: &str) -> ApiResult<String> {
    let Some(o) = v.as_object() else {
        return Err(bad(field, "must be an object."));
    };
    let kind = req_str(v, field, "kind")?;
    let (required, optional): (&str, &[&str]) = match kind {
        "url" => ("url", &[]),
        "page" => ("page", &["space"]),
        "file" => ("file", &[]),
        "anchor" => ("anchor", &["space", "page"]),
        "space" => ("space", &[]),
        "collection" => ("collection", &[]),
        "user" => ("user", &[]),
        "reusable-content" => ("reusableContent", &["space"]),
        "openapi" => ("spec", &[]),
        _ => {
            return Err(bad(
                &format!("{field}.kind"),
                "is not a kind of content reference.",
            ))
        }
    };
    let mut out = Map::new();
    out.insert("kind".into(), json!(kind));
    for name in std::iter::once(&required).chain(optional) {
        let value = match o.get(*name) {
            Some(Value::String(s)) => s,
            Some(_) => return Err(bad(&format!("{field}.{name}"), "must be a string.")),
            None if *name == required => {
                return Err(bad(&format!("{field}.{name}"), "is required."))
            }
            None => continue,
        };
        out.insert((*name).into(), json!(cut(value, MAX_TEXT_CHARS)));
    }
    Ok(Value::Object(out).to_string())
}

/// Checks one event against the spec's shapes (`SiteInsightsEvent`).
fn check_event(v: &Value, i: usize, now: i64) -> ApiResult<Event> {
    let base = format!("events[{i}]");
    if !v.is_object() {
        return Err(bad(&base, "must be an object."));
    }
    let ty = match v.get("type") {
        Some(Value::String(t)) => EVENT_TYPES
            .iter()
            .find(|x| **x == t)
            .copied()
            .ok_or_else(|| bad(&format!("{base}.type"), "is not an event type of the spec."))?,
        Some(_) => return Err(bad(&format!("{base}.type"), "must be a string.")),
        None => return Err(bad(&format!("{base}.type"), "is required.")),
    };
    // The session is checked for its shape and then dropped: nothing of it is kept.
    let sb = format!("{base}.session");
    let session = req_obj(v, &base, "session")?;
    let session = Value::Object(session.clone());
    req_str(&session, &sb, "visitorId")?;
    req_str(&session, &sb, "sessionId")?;
    req_str(&session, &sb, "userAgent")?;
    req_nullable(&session, &sb, "language")?;
    let cookies = req_obj(&session, &sb, "cookies")?;
    if cookies.values().any(|c| !c.is_string()) {
        return Err(bad(&format!("{sb}.cookies"), "must map names to strings."));
    }
    if let Some(r) = req_nullable(&session, &sb, "referrer")? {
        if !r.is_empty() {
            check_url(r, &format!("{sb}.referrer"))?;
        }
    }
    let lb = format!("{base}.location");
    let location = Value::Object(req_obj(v, &base, "location")?.clone());
    check_url(req_str(&location, &lb, "url")?, &format!("{lb}.url"))?;
    let mut ids = HashMap::new();
    for name in [
        "siteSection",
        "siteSpace",
        "siteShareKey",
        "space",
        "revision",
        "page",
    ] {
        let field = format!("{lb}.{name}");
        ids.insert(name, id_of(req_nullable(&location, &lb, name)?, &field)?);
    }
    let day = match v.get("timestamp") {
        None => now.div_euclid(DAY_MS),
        Some(Value::String(t)) => {
            let at = chrono::DateTime::parse_from_rfc3339(t)
                .map_err(|_| bad(&format!("{base}.timestamp"), "must be a date-time."))?
                .timestamp_millis();
            if (at - now).abs() > 5 * 60_000 {
                return Err(bad(
                    &format!("{base}.timestamp"),
                    "must be within 5 minutes of the current time.",
                ));
            }
            at.div_euclid(DAY_MS)
        }
        Some(_) => return Err(bad(&format!("{base}.timestamp"), "must be a date-time.")),
    };
    let (mut detail, mut position, mut text) = (String::new(), String::new(), false);
    match ty {
        "search_type_query" | "search_open_result" => {
            detail = query_key(req_str(v, &base, "query")?);
            text = !detail.is_empty();
            if ty == "search_open_result" {
                let rb = format!("{base}.result");
                let result = Value::Object(req_obj(v, &base, "result")?.clone());
                req_str(&result, &rb, "spaceId")?;
                req_str(&result, &rb, "pageId")?;
            }
        }
        "ask_question" => {
            // The question is not kept: a visitor may write anything in it.
            req_str(v, &base, "query")?;
        }
        "ask_rate_response" => {
            req_str(v, &base, "query")?;
            req_str(v, &base, "responseId")?;
            detail = match v.get("rating").and_then(Value::as_i64) {
                Some(1) => "1".into(),
                Some(-1) => "-1".into(),
                _ => return Err(bad(&format!("{base}.rating"), "must be 1 or -1.")),
            };
        }
        "page_post_feedback" | "page_post_feedback_comment" => {
            let fb = format!("{base}.feedback");
            let feedback = Value::Object(req_obj(v, &base, "feedback")?.clone());
            let rating = req_str(&feedback, &fb, "rating")?;
            one_of(rating, &format!("{fb}.rating"), &RATINGS)?;
            if ty == "page_post_feedback_comment" {
                // Checked as the spec bounds it, never kept.
                let comment = req_str(&feedback, &fb, "comment")?;
                let n = comment.chars().count();
                if !(1..=512).contains(&n) {
                    return Err(bad(
                        &format!("{fb}.comment"),
                        "must hold 1 to 512 characters.",
                    ));
                }
            }
            detail = rating.to_string();
        }
        "link_click" => {
            let kb = format!("{base}.link");
            let link = Value::Object(req_obj(v, &base, "link")?.clone());
            let p = req_str(&link, &kb, "position")?;
            one_of(p, &format!("{kb}.position"), &LINK_POSITIONS)?;
            let target = link
                .get("target")
                .ok_or_else(|| bad(&format!("{kb}.target"), "is required."))?;
            detail = link_target(target, &format!("{kb}.target"))?;
            position = p.to_string();
            text = true;
        }
        "api_client_open" | "api_client_request" => {
            let ob = format!("{base}.operation");
            let op = Value::Object(req_obj(v, &base, "operation")?.clone());
            req_str(&op, &ob, "path")?;
            req_str(&op, &ob, "method")?;
        }
        "trademark_click" => {
            let p = req_str(v, &base, "placement")?;
            one_of(
                p,
                &format!("{base}.placement"),
                &["sidebar", "ad", "footer", "pdf"],
            )?;
        }
        "ad_click" | "ad_display" => {
            let ab = format!("{base}.ad");
            let ad = Value::Object(req_obj(v, &base, "ad")?.clone());
            req_str(&ad, &ab, "domain")?;
            req_str(&ad, &ab, "zoneId")?;
            one_of(
                req_str(&ad, &ab, "placement")?,
                &format!("{ab}.placement"),
                &["aside"],
            )?;
        }
        _ => {}
    }
    Ok(Event {
        day,
        event_type: ty,
        section: ids.remove("siteSection").flatten(),
        site_space: ids.remove("siteSpace").flatten(),
        space: ids.remove("space").flatten(),
        page: ids.remove("page").flatten(),
        detail,
        position,
        text,
    })
}

/// Checks a body of events (`{"events": [...]}`) against the spec; the events in order.
fn check_body(body: &Value, now: i64) -> ApiResult<Vec<Event>> {
    let Some(events) = body.get("events") else {
        return Err(bad("events", "is required."));
    };
    let Some(events) = events.as_array() else {
        return Err(bad("events", "must be an array."));
    };
    if events.len() > MAX_EVENTS {
        return Err(bad(
            "events",
            &format!("holds more than {MAX_EVENTS} events: send them in several requests."),
        ));
    }
    events
        .iter()
        .enumerate()
        .map(|(i, e)| check_event(e, i, now))
        .collect()
}

/// Matches an event with the site: its key, or `None` when something it names is not the
/// site's (a section, a site space, a space, or a page of that space's current revision).
async fn key_of(
    state: &AppState,
    structure: &Structure,
    e: &Event,
    pages: &mut HashMap<(String, String), bool>,
) -> ApiResult<Option<Key>> {
    if let Some(section) = &e.section {
        if !structure.sections.iter().any(|s| &s.id == section) {
            return Ok(None);
        }
    }
    let site_space = match &e.site_space {
        Some(id) => match structure.site_spaces.iter().find(|s| &s.id == id) {
            Some(ss) => Some(ss),
            None => return Ok(None),
        },
        None => None,
    };
    if let (Some(ss), Some(section)) = (site_space, &e.section) {
        if ss.section_id.as_deref() != Some(section.as_str()) {
            return Ok(None);
        }
    }
    let space = match (site_space, &e.space) {
        (Some(ss), Some(space)) if &ss.space_id != space => return Ok(None),
        (Some(ss), _) => Some(ss.space_id.clone()),
        (None, Some(space)) => match structure.site_spaces.iter().any(|s| &s.space_id == space) {
            true => Some(space.clone()),
            false => return Ok(None),
        },
        (None, None) => None,
    };
    if let Some(page) = &e.page {
        let Some(space) = &space else {
            return Ok(None);
        };
        let known = match pages.get(&(space.clone(), page.clone())) {
            Some(known) => *known,
            None => {
                let known = page_in_space(state, space, page).await?;
                pages.insert((space.clone(), page.clone()), known);
                known
            }
        };
        if !known {
            return Ok(None);
        }
    }
    Ok(Some(Key {
        day: e.day,
        event_type: e.event_type.to_string(),
        section_id: e.section.clone().unwrap_or_default(),
        site_space_id: site_space.map(|s| s.id.clone()).unwrap_or_default(),
        space_id: space.unwrap_or_default(),
        page_id: e.page.clone().unwrap_or_default(),
        detail: e.detail.clone(),
        position: e.position.clone(),
    }))
}

/// Whether the space's current revision has the page.
async fn page_in_space(state: &AppState, space_id: &str, page_id: &str) -> ApiResult<bool> {
    Ok(page_title(state, space_id, page_id).await?.is_some())
}

/// The title of a page of a live space's current revision (read through its id index), or
/// `None` when it has no such page.
pub async fn page_title(
    state: &AppState,
    space_id: &str,
    page_id: &str,
) -> ApiResult<Option<String>> {
    let Some(space) = access::space_row(state, space_id)
        .await?
        .filter(|s| s.deleted_at.is_none())
    else {
        return Ok(None);
    };
    let Some(row) = content::revision_row(state, space_id, &space.revision_id).await? else {
        return Ok(None);
    };
    Ok(content::page_of(state, space_id, &row.root, page_id)
        .await?
        .map(|p| p.title))
}

/// A published site by id (in `org_id` when given), through the access cache.
async fn published_site(
    state: &AppState,
    org_id: Option<&str>,
    site_id: &str,
) -> ApiResult<(SiteRow, Arc<Structure>)> {
    published::site_with_structure(state, site_id)
        .await?
        .filter(|(site, _)| site.published != 0 && org_id.is_none_or(|o| site.org_id == o))
        .ok_or_else(|| ApiError::not_found(format!("Site `{site_id}` not found.")))
}

/// Counts a body of events for a published site: the body is checked whole first (one
/// event against the spec refuses them all), then the events whose ids are the site's are
/// added in one transaction, a statement or three per distinct key.
pub async fn track(
    state: &AppState,
    org_id: Option<&str>,
    site_id: &str,
    body: &Value,
) -> ApiResult<Tracked> {
    let (_, structure) = published_site(state, org_id, site_id).await?;
    let now = state.now();
    let events = check_body(body, now)?;
    let mut pages = HashMap::new();
    let mut keys: BTreeMap<Key, (i64, bool)> = BTreeMap::new();
    let mut tracked = Tracked::default();
    for e in &events {
        match key_of(state, &structure, e, &mut pages).await? {
            Some(key) => {
                tracked.counted += 1;
                let slot = keys.entry(key).or_insert((0, e.text));
                slot.0 += 1;
            }
            None => tracked.skipped += 1,
        }
    }
    if keys.is_empty() {
        return Ok(tracked);
    }
    static TURNS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(WRITERS);
    let _turn = tokio::time::timeout(Duration::from_secs(5), TURNS.acquire())
        .await
        .ok()
        .and_then(Result::ok)
        .ok_or_else(|| ApiError::Busy("Too many events are being counted: retry.".into(), 1))?;
    let caps = Caps {
        keys: KEYS_PER_DAY,
        texts: TEXTS_PER_DAY,
    };
    // Days, then keys, in order: concurrent writers on PostgreSQL lock rows in one order.
    let written = async {
        let mut tx = state.db.begin().await?;
        tx.touches(&[]);
        let mut new_day = false;
        let days: std::collections::BTreeSet<i64> = keys.keys().map(|k| k.day).collect();
        for day in days {
            new_day |= store::insights::open_day(&mut tx, site_id, day).await?;
        }
        for (key, (n, text)) in &keys {
            store::insights::add(&mut tx, site_id, key, *n, *text, caps).await?;
        }
        // A site's first count of a day is when older days are looked for.
        let enqueued =
            new_day && store::jobs::enqueue_once(&mut tx, PRUNE_JOB, "", now, now).await?;
        tx.commit().await?;
        Ok::<bool, sqlx::Error>(enqueued)
    }
    .await;
    let enqueued = match written {
        Ok(enqueued) => enqueued,
        // The site was deleted since it was read: its counts went with it.
        Err(sqlx::Error::Database(e)) if e.is_foreign_key_violation() => {
            return Err(ApiError::not_found(format!("Site `{site_id}` not found.")))
        }
        Err(e) => return Err(e.into()),
    };
    if enqueued {
        state.jobs_due.notify_one();
    }
    Ok(tracked)
}

/// Deletes the counts of days past the retention, a site's day per transaction; returns
/// how many such days were deleted.
pub async fn prune(state: &AppState) -> anyhow::Result<usize> {
    let before = state.now().div_euclid(DAY_MS) - RETENTION_DAYS;
    let mut days = 0;
    while store::insights::prune_one(&state.db, before).await? {
        days += 1;
        tokio::task::yield_now().await;
    }
    Ok(days)
}

// ---- Aggregation ----

/// How `datetime` buckets days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Interval {
    Day,
    Week,
    Month,
}

/// A column of a query that Quire can answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    DateTime(Interval),
    EventType,
    SiteSection,
    SiteSpace,
    Page,
    SearchQuery,
    LinkTargetValue,
    LinkTargetKind,
    LinkTargetDomain,
    LinkPosition,
    FeedbackRating,
    AskRating,
    EventsCount,
    FeedbackRatings,
    AskRatings,
}

impl Col {
    fn name(self) -> &'static str {
        match self {
            Col::DateTime(_) => "datetime",
            Col::EventType => "eventType",
            Col::SiteSection => "siteSection",
            Col::SiteSpace => "siteSpace",
            Col::Page => "page",
            Col::SearchQuery => "eventSearchQuery",
            Col::LinkTargetValue => "eventLinkTargetValue",
            Col::LinkTargetKind => "eventLinkTargetKind",
            Col::LinkTargetDomain => "eventLinkTargetDomain",
            Col::LinkPosition => "eventLinkPosition",
            Col::FeedbackRating => "eventPageFeedbackRating",
            Col::AskRating => "eventAskResponseRating",
            Col::EventsCount => "eventsCount",
            Col::FeedbackRatings => "pageFeedbackRating",
            Col::AskRatings => "askResponseRating",
        }
    }

    /// Counted over a group rather than grouped by.
    fn is_metric(self) -> bool {
        matches!(
            self,
            Col::EventsCount | Col::FeedbackRatings | Col::AskRatings
        )
    }

    fn keep(self, k: &mut Kept) {
        match self {
            Col::DateTime(_) => k.day = true,
            Col::EventType => k.event_type = true,
            Col::SiteSection => k.section = true,
            Col::SiteSpace => k.site_space = true,
            Col::Page => {
                k.page = true;
                k.space = true;
            }
            Col::LinkPosition => {
                k.event_type = true;
                k.position = true;
            }
            Col::EventsCount => {}
            _ => {
                k.event_type = true;
                k.detail = true;
            }
        }
    }

    /// The value of a dimension for a row; `None` when its events do not carry it (a
    /// search query of a page view), which leaves the row out of a query that names it.
    fn value(self, r: &store::insights::CountRow) -> Option<Value> {
        let ty = r.event_type.as_str();
        let text = |s: &str| match s.is_empty() {
            true => Value::Null,
            false => json!(s),
        };
        let link = || match (ty, r.detail.is_empty()) {
            ("link_click", false) => serde_json::from_str::<Value>(&r.detail).ok(),
            _ => None,
        };
        match self {
            Col::DateTime(iv) => Some(json!(crate::clock::iso(bucket(r.day, iv)))),
            Col::EventType => Some(json!(ty)),
            Col::SiteSection => Some(text(&r.section_id)),
            Col::SiteSpace => Some(text(&r.site_space_id)),
            Col::Page => Some(match r.page_id.is_empty() {
                true => Value::Null,
                false => json!({ "page": r.page_id, "space": r.space_id }),
            }),
            Col::SearchQuery => match ty {
                "search_type_query" | "search_open_result" if !r.detail.is_empty() => {
                    Some(json!(r.detail))
                }
                _ => None,
            },
            Col::LinkTargetValue => link(),
            Col::LinkTargetKind => link()
                .and_then(|t| t["kind"].as_str().map(str::to_string))
                .filter(|k| LINK_KINDS.contains(&k.as_str()))
                .map(Value::String),
            Col::LinkTargetDomain => link().map(|t| {
                t["url"]
                    .as_str()
                    .and_then(|u| url::Url::parse(u).ok())
                    .and_then(|u| u.host_str().map(str::to_string))
                    .map_or(Value::Null, Value::String)
            }),
            Col::LinkPosition => match (ty, r.position.is_empty()) {
                ("link_click", false) => Some(json!(r.position)),
                _ => None,
            },
            Col::FeedbackRating => match ty {
                "page_post_feedback" | "page_post_feedback_comment" if !r.detail.is_empty() => {
                    Some(json!(r.detail))
                }
                _ => None,
            },
            Col::AskRating => match ty {
                "ask_rate_response" => r.detail.parse::<i64>().ok().map(|n| json!(n)),
                _ => None,
            },
            Col::EventsCount | Col::FeedbackRatings | Col::AskRatings => None,
        }
    }
}

/// Columns of the spec that Quire does not keep, and why.
fn not_kept(name: &str) -> Option<&'static str> {
    Some(match name {
        "sessionsCount" | "visitorsCount" => "Quire keeps no session or visitor identifiers",
        "visitorGeoCountry"
        | "visitorGeoPoint"
        | "visitorDevice"
        | "visitorBrowser"
        | "visitorOS"
        | "visitorBot"
        | "visitorLanguage"
        | "visitorClaim"
        | "visitorClaimProperty"
        | "referrer"
        | "referrerDomain"
        | "utmSource"
        | "utmMedium"
        | "utmCampaign"
        | "utmTerm"
        | "utmContent" => "Quire keeps nothing of the visitor",
        "url" | "siteShareKey" => "Quire keeps pages by id, not by URL or share link",
        "eventPageFeedbackComment" => "Quire does not keep feedback comments",
        "eventAPIOperationPath"
        | "eventAPIOperationMethod"
        | "eventAdDomain"
        | "eventAdPlacement"
        | "eventTrademarkPlacement" => "Quire counts these events by type only",
        _ => return None,
    })
}

fn parse_col(v: &Value, field: &str) -> ApiResult<Col> {
    if !v.is_object() {
        return Err(bad(field, "must be an object."));
    }
    let name = req_str(v, field, "column")?;
    let f = format!("{field}.column");
    Ok(match name {
        "datetime" => Col::DateTime(match v.get("interval").and_then(Value::as_str) {
            None if v.get("interval").is_none() => Interval::Day,
            Some("day") => Interval::Day,
            Some("week") => Interval::Week,
            Some("month") => Interval::Month,
            Some("hour") => {
                return Err(bad(
                    &format!("{field}.interval"),
                    "cannot be `hour`: Quire counts events per day.",
                ))
            }
            _ => {
                return Err(bad(
                    &format!("{field}.interval"),
                    "must be day, week or month.",
                ))
            }
        }),
        "eventType" => Col::EventType,
        "siteSection" => Col::SiteSection,
        "siteSpace" => Col::SiteSpace,
        "page" => Col::Page,
        "eventSearchQuery" => Col::SearchQuery,
        "eventLinkTargetValue" => Col::LinkTargetValue,
        "eventLinkTargetKind" => Col::LinkTargetKind,
        "eventLinkTargetDomain" => Col::LinkTargetDomain,
        "eventLinkPosition" => Col::LinkPosition,
        "eventPageFeedbackRating" => Col::FeedbackRating,
        "eventAskResponseRating" => Col::AskRating,
        "eventsCount" => Col::EventsCount,
        "pageFeedbackRating" => Col::FeedbackRatings,
        "askResponseRating" => Col::AskRatings,
        other => {
            return Err(match not_kept(other) {
                Some(why) => bad(&f, &format!("cannot be `{other}`: {why}.")),
                None => bad(&f, "is not a column of the spec."),
            })
        }
    })
}

fn parse_cols(v: Option<&Value>, field: &str, max: usize) -> ApiResult<Vec<Col>> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let items = v
        .as_array()
        .ok_or_else(|| bad(field, "must be an array."))?;
    if items.len() > max {
        return Err(bad(field, &format!("holds more than {max} columns.")));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, c)| parse_col(c, &format!("{field}[{i}]")))
        .collect()
}

/// The first day (days since the epoch) of the bucket holding `day`, in milliseconds.
fn bucket(day: i64, iv: Interval) -> i64 {
    match iv {
        Interval::Day => day * DAY_MS,
        // 1970-01-01 was a Thursday: weeks start on Monday.
        Interval::Week => (day - (day + 3).rem_euclid(7)) * DAY_MS,
        Interval::Month => {
            use chrono::Datelike;
            let date = chrono::DateTime::from_timestamp_millis(day * DAY_MS)
                .unwrap_or_default()
                .date_naive();
            date.with_day(1)
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map_or(day * DAY_MS, |d| d.and_utc().timestamp_millis())
        }
    }
}

fn timestamp(v: &Value, field: &str) -> ApiResult<i64> {
    v.as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.timestamp_millis())
        .ok_or_else(|| bad(field, "must be a date-time."))
}

/// The days `from..=to` a range covers.
fn range_days(v: Option<&Value>, now: i64) -> ApiResult<(i64, i64)> {
    let today = now.div_euclid(DAY_MS);
    let back = |ms: i64| Ok(((now - ms).div_euclid(DAY_MS), today));
    match v {
        None => Err(bad("range", "is required.")),
        Some(Value::String(p)) => match p.as_str() {
            "lastYear" => back(365 * DAY_MS),
            "last3Months" => back(90 * DAY_MS),
            "last30Days" => back(30 * DAY_MS),
            "last7Days" => back(7 * DAY_MS),
            "last24Hours" => back(DAY_MS),
            _ => Err(bad(
                "range",
                "must be lastYear, last3Months, last30Days, last7Days, last24Hours or {from, to}.",
            )),
        },
        Some(o @ Value::Object(_)) => {
            let from = timestamp(o.get("from").unwrap_or(&Value::Null), "range.from")?;
            let to = timestamp(o.get("to").unwrap_or(&Value::Null), "range.to")?;
            if from > to {
                return Err(bad("range.from", "is after `range.to`."));
            }
            Ok((from.div_euclid(DAY_MS), to.div_euclid(DAY_MS)))
        }
        Some(_) => Err(bad("range", "must be a preset name or {from, to}.")),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Gt,
    Ge,
    Lt,
    Le,
}

struct Filter {
    col: Col,
    op: Op,
    values: Vec<Value>,
    /// `values` as JSON text: `in` and `notIn` look a row's value up once, however many.
    set: std::collections::HashSet<String>,
}

fn parse_filters(v: Option<&Value>) -> ApiResult<Vec<Filter>> {
    let Some(v) = v else {
        return Ok(Vec::new());
    };
    let items = v
        .as_array()
        .ok_or_else(|| bad("where", "must be an array."))?;
    if items.len() > 16 {
        return Err(bad("where", "holds more than 16 filters."));
    }
    let mut out = Vec::new();
    for (i, f) in items.iter().enumerate() {
        let field = format!("where[{i}]");
        let col = parse_col(f, &field)?;
        if matches!(col, Col::FeedbackRatings | Col::AskRatings) {
            return Err(bad(&format!("{field}.column"), "cannot be filtered on."));
        }
        let op = match f.get("operator").and_then(Value::as_str) {
            None if f.get("operator").is_none() => Op::In,
            Some("in") => Op::In,
            Some("notIn") => Op::NotIn,
            Some("greaterThan") => Op::Gt,
            Some("greaterThanOrEqual") => Op::Ge,
            Some("lessThan") => Op::Lt,
            Some("lessThanOrEqual") => Op::Le,
            _ => return Err(bad(
                &format!("{field}.operator"),
                "must be in, notIn, greaterThan, greaterThanOrEqual, lessThan or lessThanOrEqual.",
            )),
        };
        let ordered = matches!(col, Col::DateTime(_) | Col::EventsCount | Col::AskRating);
        if !matches!(op, Op::In | Op::NotIn) && !ordered {
            return Err(bad(
                &format!("{field}.operator"),
                "compares only datetime, eventsCount and eventAskResponseRating.",
            ));
        }
        let values = f
            .get("values")
            .and_then(Value::as_array)
            .ok_or_else(|| bad(&format!("{field}.values"), "must be an array."))?;
        if values.len() > 1000 {
            return Err(bad(
                &format!("{field}.values"),
                "holds more than 1000 values.",
            ));
        }
        let mut checked = Vec::new();
        for (j, value) in values.iter().enumerate() {
            let vf = format!("{field}.values[{j}]");
            checked.push(match col {
                // Compared by their instant: any offset the client writes means the same.
                Col::DateTime(_) => json!(timestamp(value, &vf)?),
                Col::EventType => {
                    let t = value
                        .as_str()
                        .ok_or_else(|| bad(&vf, "must be a string."))?;
                    one_of(t, &vf, &EVENT_TYPES)?;
                    value.clone()
                }
                Col::EventsCount | Col::AskRating if !value.is_number() => {
                    return Err(bad(&vf, "must be a number."))
                }
                _ => value.clone(),
            });
        }
        if !matches!(op, Op::In | Op::NotIn) && checked.len() != 1 {
            return Err(bad(
                &format!("{field}.values"),
                "must hold one value to compare with.",
            ));
        }
        out.push(Filter {
            col,
            op,
            set: checked.iter().map(Value::to_string).collect(),
            values: checked,
        });
    }
    Ok(out)
}

fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}

impl Filter {
    /// Whether a value passes (datetime values as milliseconds).
    fn passes(&self, v: &Value) -> bool {
        match self.op {
            Op::In => self.set.contains(&v.to_string()),
            Op::NotIn => !self.set.contains(&v.to_string()),
            op => {
                let (a, b) = (number(v), number(&self.values[0]));
                match op {
                    Op::Gt => a > b,
                    Op::Ge => a >= b,
                    Op::Lt => a < b,
                    _ => a <= b,
                }
            }
        }
    }
}

/// One column of an aggregation's answer (`SiteInsightsQueryEventsValues`).
#[derive(Debug, Clone, Serialize)]
pub struct ColumnValues {
    pub column: &'static str,
    pub values: Vec<Value>,
}

/// An aggregation's answer (`SiteInsightsQueryEventsAggregationResult`).
#[derive(Debug, Clone, Serialize)]
pub struct Aggregation {
    pub columns: Vec<ColumnValues>,
}

#[derive(Default)]
struct Group {
    dims: Vec<Value>,
    events: i64,
    ratings: [i64; 3],
    asks: [i64; 2],
}

/// The order of answer cells: numbers by value, null first, strings (timestamps too) by
/// text, anything else by its JSON.
fn cmp_values(a: &Value, b: &Value) -> std::cmp::Ordering {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => number(a).total_cmp(&number(b)),
        (Value::Null, Value::Null) => std::cmp::Ordering::Equal,
        (Value::Null, _) => std::cmp::Ordering::Less,
        (_, Value::Null) => std::cmp::Ordering::Greater,
        (Value::String(x), Value::String(y)) => x.cmp(y),
        _ => a.to_string().cmp(&b.to_string()),
    }
}

/// Answers `aggregateSiteEvents`'s query (`SiteInsightsQueryEventsAggregation`) for a site.
///
/// Selected dimensions are grouped by (as `groupBy`'s are); without `select`, the answer is
/// the `groupBy` columns and `eventsCount`. A dimension only some events carry (a search
/// query, a link, a rating) leaves the other events out of a query that names it.
pub async fn aggregate(state: &AppState, site_id: &str, q: &Value) -> ApiResult<Aggregation> {
    if !q.is_object() {
        return Err(ApiError::bad_request("Request body must be a JSON object."));
    }
    let now = state.now();
    let (from, to) = range_days(q.get("range"), now)?;
    let from = from.max(now.div_euclid(DAY_MS) - RETENTION_DAYS);
    let group_by = parse_cols(q.get("groupBy"), "groupBy", 16)?;
    if let Some(i) = group_by.iter().position(|c| c.is_metric()) {
        return Err(bad(
            &format!("groupBy[{i}].column"),
            "is a count: name it in `select`.",
        ));
    }
    let mut select = parse_cols(q.get("select"), "select", 32)?;
    if q.get("select").is_none() {
        select = group_by.clone();
        select.push(Col::EventsCount);
    }
    let mut dims: Vec<Col> = Vec::new();
    for c in group_by.iter().chain(&select) {
        if !c.is_metric() && !dims.contains(c) {
            dims.push(*c);
        }
    }
    let filters = parse_filters(q.get("where"))?;
    let limit = match q.get("limit") {
        None => 1000,
        Some(v) => v
            .as_u64()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| bad("limit", "must be an integer from 1 to 1000."))?
            as usize,
    };
    let order = match q.get("order") {
        None => None,
        Some(o) => {
            let named = parse_col(o.get("by").unwrap_or(&Value::Null), "order.by")?;
            // By name: `datetime` orders by the selected one, whatever its interval.
            let by = *select
                .iter()
                .find(|c| c.name() == named.name())
                .ok_or_else(|| bad("order.by", "must be one of the selected columns."))?;
            let desc = match o.get("direction").and_then(Value::as_str) {
                Some("asc") => false,
                Some("desc") => true,
                _ => return Err(bad("order.direction", "must be asc or desc.")),
            };
            Some((by, desc))
        }
    };
    let mut kept = Kept::default();
    for c in dims
        .iter()
        .chain(&select)
        .chain(filters.iter().map(|f| &f.col))
    {
        c.keep(&mut kept);
    }
    let rows = match from <= to {
        true => store::insights::read(&state.db, site_id, from, to, kept).await?,
        false => Vec::new(),
    };
    let mut groups: Vec<Group> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    'rows: for r in &rows {
        for f in filters.iter().filter(|f| f.col != Col::EventsCount) {
            let Some(v) = f.col.value(r) else {
                continue 'rows;
            };
            let v = match f.col {
                Col::DateTime(iv) => json!(bucket(r.day, iv)),
                _ => v,
            };
            if !f.passes(&v) {
                continue 'rows;
            }
        }
        let mut key = Vec::with_capacity(dims.len());
        for c in &dims {
            match c.value(r) {
                Some(v) => key.push(v),
                None => continue 'rows,
            }
        }
        let name = Value::Array(key.clone()).to_string();
        let at = *index.entry(name).or_insert_with(|| {
            groups.push(Group {
                dims: key,
                ..Group::default()
            });
            groups.len() - 1
        });
        let g = &mut groups[at];
        g.events += r.events;
        match (r.event_type.as_str(), r.detail.as_str()) {
            ("page_post_feedback" | "page_post_feedback_comment", rating) => {
                if let Some(i) = RATINGS.iter().position(|x| *x == rating) {
                    g.ratings[i] += r.events;
                }
            }
            ("ask_rate_response", "1") => g.asks[0] += r.events,
            ("ask_rate_response", "-1") => g.asks[1] += r.events,
            _ => {}
        }
    }
    // Filters on the count apply to groups.
    groups.retain(|g| {
        filters
            .iter()
            .filter(|f| f.col == Col::EventsCount)
            .all(|f| f.passes(&json!(g.events)))
    });
    let cell = |g: &Group, c: Col| -> Value {
        match c {
            Col::EventsCount => json!(g.events),
            Col::FeedbackRatings => {
                json!({ "bad": g.ratings[0], "ok": g.ratings[1], "good": g.ratings[2] })
            }
            Col::AskRatings => json!({ "positive": g.asks[0], "negative": g.asks[1] }),
            dim => dims
                .iter()
                .position(|d| *d == dim)
                .map_or(Value::Null, |i| g.dims[i].clone()),
        }
    };
    let (by, desc) =
        order.unwrap_or_else(
            || match dims.iter().find(|c| matches!(c, Col::DateTime(_))) {
                Some(c) => (*c, false),
                None => (Col::EventsCount, true),
            },
        );
    groups.sort_by(|a, b| {
        let o = cmp_values(&cell(a, by), &cell(b, by));
        let o = if desc { o.reverse() } else { o };
        o.then_with(|| {
            Value::Array(a.dims.clone())
                .to_string()
                .cmp(&Value::Array(b.dims.clone()).to_string())
        })
    });
    groups.truncate(limit);
    Ok(Aggregation {
        columns: select
            .iter()
            .map(|c| ColumnValues {
                column: c.name(),
                values: groups.iter().map(|g| cell(g, *c)).collect(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weeks_start_on_monday_and_months_on_the_first() {
        // 2026-11-26 is a Thursday.
        let day = chrono::NaiveDate::from_ymd_opt(2026, 11, 26)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc()
            .timestamp_millis()
            / DAY_MS;
        assert_eq!(
            crate::clock::iso(bucket(day, Interval::Week)),
            "2026-11-23T00:00:00.000Z"
        );
        assert_eq!(
            crate::clock::iso(bucket(day, Interval::Month)),
            "2026-11-01T00:00:00.000Z"
        );
    }

    #[test]
    fn queries_are_folded_and_cut() {
        assert_eq!(query_key("  Install   GUIDE "), "install guide");
        assert_eq!(query_key(&"é".repeat(500)).chars().count(), MAX_TEXT_CHARS);
    }
}

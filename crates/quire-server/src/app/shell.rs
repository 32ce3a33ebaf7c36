//! The app's page shell: the HTML around every screen, its headers, its stylesheet and its
//! script.

use std::sync::LazyLock;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use maud::{html, Markup, DOCTYPE};
use sha2::{Digest, Sha256};

use crate::state::AppState;

/// Only Quire's own script (no inline script, no eval), which may fetch only from Quire; no
/// inline style, no framing; images may come from anywhere a page's own content names (as
/// on published sites), over https or from Quire.
pub const CSP: &str = "default-src 'none'; script-src 'self'; connect-src 'self'; \
    style-src 'self'; img-src 'self' https: data:; form-action 'self'; \
    frame-ancestors 'none'; base-uri 'none'";

/// The stylesheet, embedded in the binary.
const CSS: &str = include_str!("app.css");

/// The script, embedded in the binary: enhancements only (every screen works without it).
const JS: &str = include_str!("app.js");

/// The editor's script (`editor.js`, built by `scripts/editor-bundle.sh`), loaded by the
/// editing screen alone.
const EDITOR_JS: &str = include_str!("editor.js");

/// The app's files, embedded in the binary. Each is served at a name carrying a hash of
/// its content (`/-/app.3f2a9c1d.css`), which browsers keep for a year without asking
/// again: a new build changes the name of what it changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Asset {
    /// `app.css`, the stylesheet.
    Css,
    /// `app.js`, the script every screen loads.
    Js,
    /// `editor.js`, the editor's script.
    Editor,
}

impl Asset {
    /// Every asset, in the order of [`Asset::index`].
    pub const ALL: [Asset; 3] = [Asset::Css, Asset::Js, Asset::Editor];

    fn index(self) -> usize {
        match self {
            Asset::Css => 0,
            Asset::Js => 1,
            Asset::Editor => 2,
        }
    }

    /// Its name without the hash, and its extension.
    fn name(self) -> (&'static str, &'static str) {
        match self {
            Asset::Css => ("app", "css"),
            Asset::Js => ("app", "js"),
            Asset::Editor => ("editor", "js"),
        }
    }

    fn body(self) -> &'static str {
        match self {
            Asset::Css => CSS,
            Asset::Js => JS,
            Asset::Editor => EDITOR_JS,
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Asset::Css => "text/css; charset=utf-8",
            Asset::Js | Asset::Editor => "text/javascript; charset=utf-8",
        }
    }

    /// The URL pages load it from: `/-/{name}.{hash}.{ext}`, the hash the first 8 hex
    /// digits of the SHA-256 of its content. Every screen links assets through this alone.
    pub fn url(self) -> &'static str {
        static URLS: LazyLock<[String; 3]> = LazyLock::new(|| {
            Asset::ALL.map(|a| {
                let (name, ext) = a.name();
                let digest = Sha256::digest(a.body().as_bytes());
                let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
                format!("/-/{name}.{hash}.{ext}")
            })
        });
        &URLS[self.index()]
    }

    /// The URL it had before names carried hashes: `/-/app.css`, `/-/app.js`,
    /// `/-/editor.js`.
    pub fn unhashed_url(self) -> &'static str {
        match self {
            Asset::Css => "/-/app.css",
            Asset::Js => "/-/app.js",
            Asset::Editor => "/-/editor.js",
        }
    }

    /// `GET` of [`Asset::url`]: kept for a year, never revalidated (a name with another
    /// hash is no route: a 404).
    pub fn serve(self) -> Response {
        asset(
            self.body(),
            self.content_type(),
            "public, max-age=31536000, immutable",
        )
    }

    /// `GET` of [`Asset::unhashed_url`]. Pages no longer name these, but a page a browser
    /// cached before an upgrade still may: they keep answering, with the current content,
    /// revalidated on every use so that they never pin an old file.
    pub fn serve_unhashed(self) -> Response {
        asset(self.body(), self.content_type(), "no-cache")
    }
}

/// The assets' routes: each at its hashed name and at its old one.
pub fn asset_routes() -> Router<AppState> {
    Asset::ALL.into_iter().fold(Router::new(), |router, a| {
        router
            .route(a.url(), get(move || async move { a.serve() }))
            .route(
                a.unhashed_url(),
                get(move || async move { a.serve_unhashed() }),
            )
    })
}

/// An embedded asset, never sniffed as another type.
fn asset(body: &'static str, content_type: &'static str, cache_control: &'static str) -> Response {
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

/// Who the page is for: shown in the top bar with the sign-out form.
pub struct Viewer<'a> {
    /// The signed-in user's name.
    pub name: &'a str,
    /// The session's CSRF token, for the sign-out form.
    pub csrf: &'a str,
    /// The signed-in user's id.
    pub user: &'a str,
}

/// A whole page: `body` beside the sidebar `nav`, when the screen has one.
pub fn page(
    status: StatusCode,
    title: &str,
    viewer: Option<&Viewer<'_>>,
    nav: Option<&Markup>,
    body: Markup,
) -> Response {
    let main_class = (nav.is_none() && viewer.is_none()).then_some("narrow");
    let html = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Quire" }
                link rel="stylesheet" href=(Asset::Css.url());
                script src=(Asset::Js.url()) defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/" { "Quire" }
                    @if let Some(v) = viewer {
                        div {
                            a href="/find" aria-keyshortcuts="Control+K Meta+K" { "Find" }
                            " · "
                            a href="/account" { (v.name) }
                            " · "
                            form method="post" action="/signout" {
                                input type="hidden" name="csrf" value=(v.csrf);
                                button.link type="submit" { "Sign out" }
                            }
                        }
                    }
                }
                div class=[nav.is_some().then_some("layout")] {
                    @if let Some(nav) = nav { (nav) }
                    main #main class=[main_class] { (body) }
                }
            }
        }
    };
    with_headers((status, html.into_string()).into_response())
}

/// The app's headers on an answer.
pub fn with_headers(mut res: Response) -> Response {
    crate::http::download::page_headers(&mut res, CSP, "same-origin");
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// A `303 See Other` to a path of this server.
pub fn see_other(location: &str) -> Response {
    let mut res = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(location) {
        res.headers_mut().insert(header::LOCATION, v);
    }
    with_headers(res)
}

/// The page of something missing (or not visible to the viewer).
pub fn not_found(viewer: Option<&Viewer<'_>>, what: &str) -> Response {
    page(
        StatusCode::NOT_FOUND,
        "Not found",
        viewer,
        None,
        html! {
            h1 { "Not found" }
            p { (what) }
            p { a href="/" { "Back to the home page" } }
        },
    )
}

/// The organization `org_id` as `caller` sees it; `None` when it does not exist or they
/// are not one of its members (one answer for both, as the API's 404).
pub async fn org_for(
    state: &crate::state::AppState,
    caller: &crate::domain::auth::Caller,
    org_id: &str,
) -> Option<crate::domain::access::OrgCtx> {
    crate::domain::access::load_org(state, caller, &crate::ids::OrgId::new(org_id.to_string()))
        .await
        .ok()
}

/// The page of a failure of the server (logged).
pub fn failed(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "app screen failed");
    page(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        None,
        None,
        html! {
            h1 { "Something went wrong" }
            p { "Quire could not answer. Try again later." }
        },
    )
}

/// The answer when this node is hashing as many passwords as it may: 503, and when to try
/// again (`Retry-After`). `res` is the page to show.
pub fn retry_later(mut res: Response) -> Response {
    *res.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    res.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(crate::passwords::BUSY_RETRY_SECONDS),
    );
    res
}

/// The page of a node too busy hashing passwords to take another now.
pub fn busy() -> Response {
    retry_later(page(
        StatusCode::SERVICE_UNAVAILABLE,
        "Busy",
        None,
        None,
        html! {
            h1 { "Busy" }
            p { (crate::domain::accounts::BUSY_MESSAGE) }
        },
    ))
}

/// The page of a refused action: the reason, and the way back.
pub fn not_done(
    viewer: &Viewer<'_>,
    e: &crate::error::ApiError,
    back: &str,
    label: &str,
) -> Response {
    page(
        e.status(),
        "Not done",
        Some(viewer),
        None,
        html! {
            h1 { "Not done" }
            p.error role="alert" { (e) }
            p { a href=(back) { (label) } }
        },
    )
}

/// Runs an app write to its end on a task of its own, with the access cache bypassed (as
/// the API's writes run), then answers: to `Ok(path)` on success; a refusal's page, with
/// the way `back` (`label`), when the workflow refused; a failure page otherwise.
pub async fn run_write<F>(viewer: &Viewer<'_>, back: &str, label: &str, run: F) -> Response
where
    F: std::future::Future<Output = crate::error::ApiResult<String>> + Send + 'static,
{
    match tokio::spawn(crate::cache::bypassed(run)).await {
        Ok(Ok(to)) => see_other(&to),
        Ok(Err(crate::error::ApiError::Internal(e))) => failed(e),
        Ok(Err(e)) => not_done(viewer, &e, back, label),
        Err(e) => failed(e),
    }
}

/// `<option>`s of `(value, label)` pairs, the one whose value is `selected` marked.
pub fn options<'a>(items: impl IntoIterator<Item = (&'a str, &'a str)>, selected: &str) -> Markup {
    html! {
        @for (value, label) in items {
            option value=(value) selected[value == selected] { (label) }
        }
    }
}

//! Signing in and out of the app, the first-run account, and the sessions of an account.
//!
//! A session is a random secret in an `HttpOnly`, `SameSite=Lax` cookie (`Secure` when the
//! public URL is https), stored server-side as a hash (`app_sessions`, shared by every
//! node). It ends after [`IDLE_MS`] unused or [`ABSOLUTE_MS`] after sign-in, whichever
//! comes first, or when ended from the account's sessions page. A single sign-on login
//! opens its session in the same table, under the same cookie, confined to the
//! organization of its provider (`domain::saml::login`).

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::Extension;
use maud::{html, Markup};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::shell::{failed, page, see_other, with_headers, Viewer};
use crate::clock::iso;
use crate::domain::accounts::{self, SignIn};
use crate::domain::auth::Caller;
use crate::http::cookies;
use crate::http::edge::ClientAddress;
use crate::ids::OrgId;
use crate::keys::hash_token;
use crate::state::AppState;
use crate::store;
use crate::store::sessions::SessionRow;
use crate::store::users::UserRow;

/// A session unused this long ends.
pub const IDLE_MS: i64 = 7 * 24 * 3600 * 1000;
/// A session ends this long after sign-in, used or not.
pub const ABSOLUTE_MS: i64 = 30 * 24 * 3600 * 1000;
/// How often a session's last use is written (not on every request).
const TOUCH_EVERY_MS: i64 = 5 * 60 * 1000;
/// Largest form accepted: the editor's page, whose markdown may be as large as the API
/// accepts (2 MiB), percent-encoded.
const FORM_BYTES: usize = 6 * 1024 * 1024;

/// A signed-in user and their session. A handler of a route that needs a session takes it
/// as an argument: the route's access check loaded it.
#[derive(Clone)]
pub struct Signed {
    pub session: SessionRow,
    pub user: UserRow,
    /// The one organization a single sign-on session may act in (`None`: a password
    /// session, with the account's whole reach).
    pub scope: Option<OrgId>,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Signed {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Response> {
        super::routes::loaded(parts).await
    }
}

impl Signed {
    /// The top bar's view of the user.
    pub fn viewer(&self) -> Viewer<'_> {
        Viewer {
            name: &self.user.display_name,
            csrf: &self.session.csrf,
            user: self.user.id.as_str(),
        }
    }

    /// Who acts, for the domain's access checks: confined to the session's organization
    /// when it came from that organization's single sign-on.
    pub fn caller(&self) -> Caller {
        Caller {
            user: std::sync::Arc::new(self.user.clone()),
            scope: self.scope.clone(),
        }
    }
}

/// The session of a request, if it carries a live one: one the app's sign-in opened, or one
/// an organization's single sign-on opened (confined to that organization, as its API
/// tokens are).
pub async fn current(state: &AppState, headers: &HeaderMap) -> sqlx::Result<Option<Signed>> {
    let Some(secret) = cookies::read(headers, cookies::SESSION, 128) else {
        return Ok(None);
    };
    let now = state.now();
    let Some(session) =
        store::sessions::get(&state.db, &hash_token(&secret), now, now - IDLE_MS).await?
    else {
        return Ok(None);
    };
    let Some(user) = store::users::get(&state.db, &session.user_id).await? else {
        return Ok(None);
    };
    if now - session.seen_at > TOUCH_EVERY_MS {
        store::sessions::touch(&state.db, &session.id, now).await?;
    }
    let scope = session.org_id.clone().map(OrgId::new);
    Ok(Some(Signed {
        session,
        user,
        scope,
    }))
}

/// The signed-in user, or the answer sending the browser to sign in and back to `here`.
pub async fn require(
    state: &AppState,
    headers: &HeaderMap,
    here: &str,
) -> Result<Signed, Response> {
    match current(state, headers).await {
        Ok(Some(s)) => Ok(s),
        Ok(None) => Err(see_other(&format!(
            "/signin?next={}",
            url::form_urlencoded::byte_serialize(here.as_bytes()).collect::<String>()
        ))),
        Err(e) => Err(failed(e)),
    }
}

fn set_cookie(state: &AppState, res: &mut Response, secret: Option<&str>) {
    cookies::set(
        res.headers_mut(),
        &state.public_url,
        cookies::SESSION,
        "/",
        secret,
        Some(ABSOLUTE_MS / 1000),
    );
}

/// A local path to return to after sign-in (never another site's). Browsers drop tabs and
/// line breaks from a URL and read a backslash as a slash, so `/\t/evil.example` would be
/// `//evil.example` to them: any whitespace, control character or backslash is refused,
/// as is a second leading slash.
fn local_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if n.starts_with('/')
                && !n.starts_with("//")
                && !n
                    .chars()
                    .any(|c| c == '\\' || c.is_whitespace() || c.is_control()) =>
        {
            n.to_string()
        }
        _ => "/".to_string(),
    }
}

/// Whether a state-changing request comes from a page of this server: its `Origin` (or,
/// without one, its `Referer`) must be Quire's public origin.
fn same_origin(state: &AppState, headers: &HeaderMap) -> bool {
    let ours = url::Url::parse(&state.public_url)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_default();
    if let Some(origin) = headers.get(header::ORIGIN) {
        return origin.to_str().ok() == Some(ours.as_str());
    }
    headers
        .get(header::REFERER)
        .and_then(|r| r.to_str().ok())
        .and_then(|r| url::Url::parse(r).ok())
        .is_some_and(|u| u.origin().ascii_serialization() == ours)
}

fn refused(why: &str) -> Response {
    page(
        StatusCode::FORBIDDEN,
        "Request refused",
        None,
        None,
        html! {
            h1 { "Request refused" }
            p { (why) }
            p { a href="/" { "Back to the home page" } }
        },
    )
}

/// Reads a form of type `T` sent from this server's pages (origin checked) and, when
/// `session` is given, by its holder (its CSRF token in the form), both first (403); then
/// the fields (400 naming what is wrong).
pub async fn read_typed<T: serde::de::DeserializeOwned>(
    state: &AppState,
    headers: &HeaderMap,
    session: Option<&SessionRow>,
    body: Body,
) -> Result<T, Response> {
    #[derive(Deserialize)]
    struct Csrf {
        csrf: Option<String>,
    }
    if !same_origin(state, headers) {
        return Err(refused("This form must be sent from Quire's own pages."));
    }
    let Ok(bytes) = axum::body::to_bytes(body, FORM_BYTES).await else {
        return Err(refused("The form is too large."));
    };
    if let Some(session) = session {
        let csrf = serde_html_form::from_bytes::<Csrf>(&bytes)
            .ok()
            .and_then(|c| c.csrf)
            .unwrap_or_default();
        if Sha256::digest(csrf.as_bytes()) != Sha256::digest(session.csrf.as_bytes()) {
            return Err(refused(
                "The form has expired: reload the page and try again.",
            ));
        }
    }
    serde_html_form::from_bytes::<T>(&bytes).map_err(|e| {
        let mut res = refused(&format!("The form is not valid: {e}."));
        *res.status_mut() = StatusCode::BAD_REQUEST;
        res
    })
}

/// A form of type `T` sent by the signed-in person from this server's pages, as
/// [`read_typed`] reads it: origin and CSRF token checked (403), then the fields (400
/// naming what is wrong). The last argument of an action's handler.
pub struct Posted<T>(pub T);

impl<T: serde::de::DeserializeOwned> axum::extract::FromRequest<AppState> for Posted<T> {
    type Rejection = Response;

    async fn from_request(req: axum::extract::Request, state: &AppState) -> Result<Self, Response> {
        let (parts, body) = req.into_parts();
        let signed: Signed = super::routes::loaded(&parts).await?;
        read_typed(state, &parts.headers, Some(&signed.session), body)
            .await
            .map(Posted)
    }
}

/// A form whose `op` field says which of the variants of `T` (an enum tagged by `op`) it
/// is. The form reader gives a field's values as a list, which a tag cannot be read from:
/// the fields are handed on one by one, as text, so each variant's fields are single values
/// (a field sent twice is refused as a duplicate).
pub struct ByOp<T>(pub T);

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for ByOp<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let fields = Vec::<(String, String)>::deserialize(d)?;
        let map = serde::de::value::MapDeserializer::<_, serde::de::value::Error>::new(
            fields.into_iter(),
        );
        T::deserialize(map).map(ByOp).map_err(D::Error::custom)
    }
}

/// Reads an optional field that a form sends empty to clear what it sets: sent, even
/// empty, is `Some` (the form reader takes an empty value for an absent one otherwise).
/// For `#[serde(default, deserialize_with = "…")]`.
pub fn sent<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// The form of an action that sends nothing but its CSRF token (a button).
#[derive(Deserialize)]
pub struct NoFields {}

/// Whether a request from this server's pages whose body is not a form (the editor's file
/// uploads) comes from `signed`'s page: origin checked, the CSRF token in `X-Quire-CSRF`.
#[allow(clippy::result_large_err)]
pub fn from_script(state: &AppState, headers: &HeaderMap, signed: &Signed) -> Result<(), Response> {
    if !same_origin(state, headers) {
        return Err(refused("This request must come from Quire's own pages."));
    }
    let given = headers
        .get("x-quire-csrf")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if Sha256::digest(given.as_bytes()) != Sha256::digest(signed.session.csrf.as_bytes()) {
        return Err(refused("The page has expired: reload it and try again."));
    }
    Ok(())
}

/// The sign-in (or first-run) form.
pub fn signin_form(next: &str, error: Option<&str>, first_run: bool, email: &str) -> Markup {
    let (action, button, autocomplete) = if first_run {
        ("/setup", "Create account", "new-password")
    } else {
        ("/signin", "Sign in", "current-password")
    };
    html! {
        @if first_run {
            h1 { "Welcome to Quire" }
            p { "No account exists yet. Create the first one: it administers this Quire server." }
        } @else {
            h1 { "Sign in" }
        }
        @if let Some(e) = error {
            p.error role="alert" { (e) }
        }
        form method="post" action=(action) {
            input type="hidden" name="next" value=(next);
            @if first_run {
                label for="name" { "Your name" }
                input #name name="name" type="text" autocomplete="name" required maxlength="255";
            }
            label for="email" { "E-mail" }
            input #email name="email" type="email" autocomplete="username" required value=(email);
            label for="password" { "Password" }
            input #password name="password" type="password" autocomplete=(autocomplete) required
                minlength=(accounts::MIN_PASSWORD);
            @if first_run {
                p.muted {
                    "At least " (accounts::MIN_PASSWORD) " characters; a phrase of several words is best."
                }
            }
            button type="submit" { (button) }
        }
    }
}

/// Query of the sign-in page.
#[derive(Deserialize, Default)]
pub struct NextQuery {
    next: Option<String>,
}

/// `GET /signin`.
pub async fn signin_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NextQuery>,
) -> Response {
    let next = local_next(q.next.as_deref());
    match current(&state, &headers).await {
        Ok(Some(_)) => return see_other(&next),
        Ok(None) => {}
        Err(e) => return failed(e),
    }
    let first_run = match store::sessions::user_count(&state.db).await {
        Ok(n) => n == 0,
        Err(e) => return failed(e),
    };
    page(
        StatusCode::OK,
        "Sign in",
        None,
        None,
        signin_form(&next, None, first_run, ""),
    )
}

/// Opens a session for `user` and sends the browser on to `next`.
pub async fn open_session(
    state: &AppState,
    headers: &HeaderMap,
    user: &UserRow,
    next: &str,
) -> Response {
    // As with a first API token: invitations waiting for the address become memberships.
    if user.first_auth_at.is_none() {
        if let Err(e) = crate::domain::auth::first_authentication(state, user).await {
            return failed(e);
        }
    }
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let now = state.now();
    // Old rows of every node are forgotten as new sessions open.
    if let Err(e) = store::sessions::purge_expired(&state.db, now).await {
        return failed(e);
    }
    match store::sessions::open(&state.db, user.id.as_str(), agent, now, now + ABSOLUTE_MS).await {
        Ok((_, secret)) => {
            let mut res = see_other(next);
            set_cookie(state, &mut res, Some(&secret));
            res
        }
        Err(e) => failed(e),
    }
}

/// The form of `POST /signin`.
#[derive(Deserialize)]
pub struct SignInForm {
    /// Where to go once signed in.
    next: Option<String>,
    email: String,
    password: String,
}

/// `POST /signin`.
pub async fn signin(
    State(state): State<AppState>,
    address: Option<Extension<ClientAddress>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let form: SignInForm = match read_typed(&state, &headers, None, body).await {
        Ok(f) => f,
        Err(res) => return res,
    };
    let next = local_next(form.next.as_deref());
    let SignInForm {
        email, password, ..
    } = form;
    let from = address.and_then(|Extension(a)| a.0);
    let again = |status: StatusCode, why: &str| {
        page(
            status,
            "Sign in",
            None,
            None,
            signin_form(&next, Some(why), false, &email),
        )
    };
    let now = state.now();
    match accounts::sign_in(
        &state.db,
        &state.keys,
        &state.hashing,
        &email,
        &password,
        from,
        now,
    )
    .await
    {
        SignIn::Accepted(user) => open_session(&state, &headers, &user, &next).await,
        SignIn::Refused => again(
            StatusCode::UNAUTHORIZED,
            "The e-mail address or the password is wrong.",
        ),
        SignIn::Throttled => again(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many failed attempts: wait 15 minutes before trying again.",
        ),
        SignIn::SsoRequired => again(
            StatusCode::FORBIDDEN,
            "Your organization requires its single sign-on: sign in through it.",
        ),
        SignIn::Busy => crate::app::shell::retry_later(again(
            StatusCode::SERVICE_UNAVAILABLE,
            accounts::BUSY_MESSAGE,
        )),
    }
}

/// The form of `POST /setup`.
#[derive(Deserialize)]
pub struct SetupForm {
    /// Where to go once signed in.
    next: Option<String>,
    name: Option<String>,
    email: String,
    password: String,
}

/// `POST /setup`: the first account, which administers the server. Refused once any
/// account exists.
pub async fn setup(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let form: SetupForm = match read_typed(&state, &headers, None, body).await {
        Ok(f) => f,
        Err(res) => return res,
    };
    // Cheap before hashing; the account is made only if none exists when it is written.
    match store::sessions::user_count(&state.db).await {
        Ok(0) => {}
        Ok(_) => return see_other("/signin"),
        Err(e) => return failed(e),
    }
    let next = local_next(form.next.as_deref());
    let SetupForm {
        name,
        email,
        password,
        ..
    } = form;
    let name = name.filter(|n| !n.trim().is_empty());
    let now = state.now();
    let first = accounts::Holder::First;
    let hashing = &state.hashing;
    match accounts::set_password(
        &state.db,
        hashing,
        &email,
        name.as_deref(),
        &password,
        first,
        now,
    )
    .await
    {
        Ok(user) => open_session(&state, &headers, &user, &next).await,
        // Someone else set the server up first (or it was set up before this form was sent).
        Err(accounts::AccountError::Exists) => see_other("/signin"),
        Err(accounts::AccountError::Invalid(why)) => page(
            StatusCode::BAD_REQUEST,
            "Welcome to Quire",
            None,
            None,
            signin_form(&next, Some(&why), true, &email),
        ),
        Err(accounts::AccountError::Busy) => crate::app::shell::busy(),
        Err(e) => failed(e),
    }
}

/// `POST /signout`: ends this session.
pub async fn signout(State(state): State<AppState>, headers: HeaderMap, body: Body) -> Response {
    let signed = match current(&state, &headers).await {
        Ok(Some(s)) => s,
        Ok(None) => return see_other("/signin"),
        Err(e) => return failed(e),
    };
    if let Err(res) = read_typed::<NoFields>(&state, &headers, Some(&signed.session), body).await {
        return res;
    }
    let mut res = see_other("/signin");
    if let Err(e) =
        store::sessions::close(&state.db, signed.user.id.as_str(), &signed.session.id).await
    {
        return failed(e);
    }
    set_cookie(&state, &mut res, None);
    res
}

/// The signed-in user of a password session, the only kind that may see and end the
/// account's sessions: a single sign-on session reaches one organization, not the account,
/// and is sent to its own account page.
fn not_the_account(signed: &Signed) -> Option<Response> {
    signed.scope.as_ref().map(|_| see_other("/account"))
}

/// `GET /account/sessions`: the account's live sessions, each of which can be ended.
pub async fn sessions(State(state): State<AppState>, signed: Signed) -> Response {
    if let Some(res) = not_the_account(&signed) {
        return res;
    }
    let list =
        match store::sessions::list(&state.db, signed.user.id.as_str(), state.now(), 100).await {
            Ok(l) => l,
            Err(e) => return failed(e),
        };
    let csrf = signed.session.csrf.as_str();
    let body = html! {
        h1 { "Your sessions" }
        p { "Signed in as " strong { (signed.user.display_name) } " (" (signed.user.email) ")." }
        table {
            thead {
                tr {
                    th scope="col" { "Browser" }
                    th scope="col" { "Signed in" }
                    th scope="col" { "Last used" }
                    th scope="col" { span.skip { "Action" } }
                }
            }
            tbody {
                @for s in &list {
                    tr data-session=(s.id) {
                        td {
                            (if s.agent.is_empty() { "Unknown browser" } else { &s.agent })
                            @if s.org_id.is_some() {
                                " " span.muted { "(single sign-on)" }
                            }
                            @if s.id == signed.session.id {
                                " " span.muted { "(this one)" }
                            }
                        }
                        td { (iso(s.created_at)) }
                        td { (iso(s.seen_at)) }
                        td {
                            form method="post" action={ "/account/sessions/" (s.id) "/end" } {
                                input type="hidden" name="csrf" value=(csrf);
                                button.link type="submit" { "End" }
                            }
                        }
                    }
                }
            }
        }
        form method="post" action="/account/sessions/end-all" {
            input type="hidden" name="csrf" value=(csrf);
            button type="submit" { "Sign out everywhere" }
        }
        p.muted {
            "API tokens are made and revoked on " a href="/account" { "your account page" } "."
        }
    };
    page(
        StatusCode::OK,
        "Your sessions",
        Some(&signed.viewer()),
        None,
        body,
    )
}

/// `POST /account/sessions/{sessionId}/end`.
pub async fn end_session(
    State(state): State<AppState>,
    Path(id): Path<String>,
    signed: Signed,
    Posted(_): Posted<NoFields>,
) -> Response {
    if let Some(res) = not_the_account(&signed) {
        return res;
    }
    if let Err(e) = store::sessions::close(&state.db, signed.user.id.as_str(), &id).await {
        return failed(e);
    }
    if id == signed.session.id {
        let mut res = see_other("/signin");
        set_cookie(&state, &mut res, None);
        return res;
    }
    with_headers(see_other("/account/sessions"))
}

/// `POST /account/sessions/end-all`: "sign out everywhere".
pub async fn end_all(
    State(state): State<AppState>,
    signed: Signed,
    Posted(_): Posted<NoFields>,
) -> Response {
    if let Some(res) = not_the_account(&signed) {
        return res;
    }
    if let Err(e) = store::sessions::close_all(&state.db, signed.user.id.as_str()).await {
        return failed(e);
    }
    let mut res = see_other("/signin");
    set_cookie(&state, &mut res, None);
    res
}

#[cfg(test)]
mod tests {
    use super::local_next;

    #[test]
    fn only_local_paths_are_returned_to() {
        assert_eq!(local_next(Some("/s/abc")), "/s/abc");
        assert_eq!(local_next(Some("//evil.example")), "/");
        assert_eq!(local_next(Some("https://evil.example")), "/");
        assert_eq!(local_next(Some("/\\evil.example")), "/");
        assert_eq!(local_next(Some("/\t/evil.example")), "/");
        assert_eq!(local_next(Some("/\n/evil.example")), "/");
        assert_eq!(local_next(Some("/\u{0}/evil.example")), "/");
        assert_eq!(local_next(Some("/ /evil.example")), "/");
        assert_eq!(
            local_next(Some("/o/abc?tab=members#x")),
            "/o/abc?tab=members#x"
        );
        assert_eq!(local_next(None), "/");
    }
}

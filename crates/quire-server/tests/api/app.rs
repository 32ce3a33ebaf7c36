//! The app in a browser's place: first run, sign-in and sign-out, sessions, CSRF, and the
//! reading screens that every `urls.app` of the API opens, with the access the API grants.

use reqwest::header::{CONTENT_SECURITY_POLICY, COOKIE, LOCATION, ORIGIN, SET_COOKIE};
use reqwest::redirect::Policy;
use serde_json::json;

use crate::harness::TestApp;

/// The app's Content-Security-Policy, exactly: its own script and stylesheet only, fetches
/// to itself only, no framing.
const APP_CSP: &str = "default-src 'none'; script-src 'self'; connect-src 'self'; \
    style-src 'self'; img-src 'self' https: data:; form-action 'self'; \
    frame-ancestors 'none'; base-uri 'none'";

/// A browser: its cookie, and requests that do not follow redirects.
pub(crate) struct Browser {
    client: reqwest::Client,
    base: String,
    cookie: Option<String>,
}

pub(crate) struct Page {
    pub(crate) status: u16,
    pub(crate) location: Option<String>,
    set_cookie: Option<String>,
    csp: Option<String>,
    headers: reqwest::header::HeaderMap,
    pub(crate) html: String,
}

impl Browser {
    pub(crate) fn new(app: &TestApp) -> Self {
        Browser {
            client: reqwest::Client::builder()
                .redirect(Policy::none())
                .build()
                .unwrap(),
            base: app.base.clone(),
            cookie: None,
        }
    }

    async fn send(&mut self, req: reqwest::RequestBuilder) -> Page {
        let req = match &self.cookie {
            Some(c) => req.header(COOKIE, format!("quire_app={c}")),
            None => req,
        };
        let res = req.send().await.unwrap();
        let header = |name| {
            res.headers()
                .get(name)
                .map(|v: &reqwest::header::HeaderValue| v.to_str().unwrap().to_string())
        };
        let (location, set_cookie, csp) = (
            header(LOCATION),
            header(SET_COOKIE),
            header(CONTENT_SECURITY_POLICY),
        );
        if let Some(sc) = &set_cookie {
            let value = sc
                .strip_prefix("quire_app=")
                .and_then(|v| v.split(';').next())
                .unwrap_or("");
            self.cookie = (!value.is_empty()).then(|| value.to_string());
        }
        Page {
            status: res.status().as_u16(),
            location,
            set_cookie,
            csp,
            headers: res.headers().clone(),
            html: res.text().await.unwrap(),
        }
    }

    pub(crate) async fn get(&mut self, path: &str) -> Page {
        let req = self.client.get(format!("{}{path}", self.base));
        self.send(req).await
    }

    /// A search screen's results region, as the app's script asks for it.
    async fn fragment(&mut self, path: &str) -> Page {
        let req = self
            .client
            .get(format!("{}{path}", self.base))
            .header("x-quire-fragment", "results");
        self.send(req).await
    }

    /// A form posted from this server's own pages (`Origin` set), or from `origin`.
    async fn post_from(&mut self, origin: Option<&str>, path: &str, form: &[(&str, &str)]) -> Page {
        let mut req = self.client.post(format!("{}{path}", self.base)).form(form);
        if let Some(o) = origin {
            req = req.header(ORIGIN, o);
        }
        self.send(req).await
    }

    /// Bytes posted as the editor's script posts a file: same origin, the CSRF token in a
    /// header.
    async fn upload(&mut self, path: &str, csrf: &str, bytes: Vec<u8>) -> Page {
        let req = self
            .client
            .post(format!("{}{path}", self.base))
            .header(ORIGIN, self.base.clone())
            .header("x-quire-csrf", csrf)
            .body(bytes);
        self.send(req).await
    }

    pub(crate) async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Page {
        let origin = self.base.clone();
        self.post_from(Some(&origin), path, form).await
    }
}

/// Gives `names` (personas of `app`) a password, and a browser signed in as each.
pub(crate) async fn signed_in(app: &TestApp, names: &[&str]) -> Vec<Browser> {
    let mut browsers = Vec::new();
    for name in names {
        browsers.push(sign_in(app, name, false).await);
    }
    browsers
}

/// Gives `name@example.com` a password (and the server's administration when `admin`),
/// and a browser signed in with it.
pub(crate) async fn sign_in(app: &TestApp, name: &str, admin: bool) -> Browser {
    let email = format!("{name}@example.com");
    quire_server::admin::set_password(&app.config, &email, Some(name), "a fine passphrase", admin)
        .await
        .unwrap();
    let mut b = Browser::new(app);
    let p = b
        .post(
            "/signin",
            &[("email", &email), ("password", "a fine passphrase")],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    b
}

/// The CSRF token of the forms of a page.
fn csrf(html: &str) -> String {
    let at = html
        .find("name=\"csrf\" value=\"")
        .expect("a form with a CSRF token")
        + 19;
    html[at..at + html[at..].find('"').unwrap()].to_string()
}

/// The URL of the asset a page links to where `from` (up to the file's name) stands, up to
/// the quote that ends it: `/-/app.{hash}.js` after `<script src="/-/app.`.
fn asset_url(html: &str, from: &str) -> String {
    let at = html
        .find(from)
        .unwrap_or_else(|| panic!("{from} in {html}"));
    let start = at + html[at..].find("/-/").unwrap();
    html[start..start + html[start..].find('"').unwrap()].to_string()
}

#[tokio::test]
async fn the_app_s_files_are_named_by_a_hash_of_their_content_and_kept_a_year() {
    let app = TestApp::start().await;
    let mut browser = Browser::new(&app);
    let home = browser.get("/").await;
    assert_eq!(home.status, 200);
    let css = asset_url(&home.html, "<link rel=\"stylesheet\" href=\"/-/app.");
    let js = asset_url(&home.html, "<script src=\"/-/app.");
    for (url, old, content_type, sample) in [
        (&css, "/-/app.css", "text/css; charset=utf-8", ":root"),
        (
            &js,
            "/-/app.js",
            "text/javascript; charset=utf-8",
            "X-Quire-Fragment",
        ),
    ] {
        // `/-/app.` then 8 hex digits of the hash, then the extension.
        let hash = &url["/-/app.".len()..url.rfind('.').unwrap()];
        assert_eq!(hash.len(), 8, "{url}");
        assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()), "{url}");
        let file = browser.get(url).await;
        assert_eq!(file.status, 200, "{url}");
        assert_eq!(file.headers["content-type"], content_type);
        assert_eq!(
            file.headers["cache-control"],
            "public, max-age=31536000, immutable"
        );
        assert_eq!(file.headers["x-content-type-options"], "nosniff");
        assert!(file.html.contains(sample), "{url}");
        // Another hash is no file.
        let other = if hash == "00000000" {
            "11111111"
        } else {
            "00000000"
        };
        let wrong = url.replace(hash, other);
        assert_eq!(browser.get(&wrong).await.status, 404, "{wrong}");
        // The name without a hash, which a page cached before may still ask for, still
        // answers the same file, asked again on every use.
        let unhashed = browser.get(old).await;
        assert_eq!(unhashed.status, 200, "{old}");
        assert_eq!(unhashed.headers["content-type"], content_type);
        assert_eq!(unhashed.headers["cache-control"], "no-cache");
        assert_eq!(unhashed.headers["x-content-type-options"], "nosniff");
        assert_eq!(unhashed.html, file.html);
    }
    let editor = browser.get("/-/editor.js").await;
    assert_eq!(editor.status, 200);
    assert_eq!(editor.headers["cache-control"], "no-cache");
    assert!(editor.html.starts_with("// Quire's editor"));
}

#[tokio::test]
async fn the_first_account_is_made_on_the_home_page_and_signs_in_and_out() {
    let app = TestApp::start().await;
    let mut browser = Browser::new(&app);
    let home = browser.get("/").await;
    assert_eq!(home.status, 200);
    assert!(home.html.contains("No account exists yet"), "{}", home.html);
    assert_eq!(home.csp.as_deref(), Some(APP_CSP));
    // One script, the app's own file: nothing inline.
    assert_eq!(home.html.matches("<script").count(), 1, "{}", home.html);
    let js = asset_url(&home.html, "<script src=\"/-/app.");
    assert!(home
        .html
        .contains(&format!("<script src=\"{js}\" defer></script></head>")));

    // A form from another site is refused.
    let form = [
        ("name", "Ada"),
        ("email", "ada@example.com"),
        ("password", "correct horse battery"),
    ];
    let foreign = browser
        .post_from(Some("https://evil.example"), "/setup", &form)
        .await;
    assert_eq!(foreign.status, 403);
    let weak = browser
        .post(
            "/setup",
            &[("email", "ada@example.com"), ("password", "password123")],
        )
        .await;
    assert_eq!(weak.status, 400);
    assert!(weak.html.contains("most common"), "{}", weak.html);

    let made = browser.post("/setup", &form).await;
    assert_eq!(made.status, 303, "{}", made.html);
    let cookie = made.set_cookie.unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    let home = browser.get("/").await;
    assert_eq!(home.status, 200);
    assert!(home.html.contains("Your organizations"), "{}", home.html);
    assert!(home.html.contains("Ada"));

    // Once an account exists, the first-run form is closed.
    let mut other = Browser::new(&app);
    assert_eq!(
        other.post("/setup", &form).await.location.as_deref(),
        Some("/signin")
    );
    assert_eq!(other.get("/").await.location.as_deref(), Some("/signin"));

    // Signing out needs the session's CSRF token; then the cookie is dead.
    let kept = browser.cookie.clone();
    assert_eq!(
        browser.post("/signout", &[("csrf", "forged")]).await.status,
        403
    );
    let token = csrf(&home.html);
    let out = browser.post("/signout", &[("csrf", &token)]).await;
    assert_eq!(out.status, 303);
    browser.cookie = kept;
    assert_eq!(browser.get("/").await.location.as_deref(), Some("/signin"));

    // Signing in again with the password; a wrong one is refused the same way for an
    // unknown address.
    let mut b = Browser::new(&app);
    let wrong = b
        .post(
            "/signin",
            &[
                ("email", "ada@example.com"),
                ("password", "not the password"),
            ],
        )
        .await;
    assert_eq!(wrong.status, 401);
    let unknown = b
        .post(
            "/signin",
            &[
                ("email", "nobody@example.com"),
                ("password", "not the password"),
            ],
        )
        .await;
    assert_eq!(unknown.status, 401);
    assert!(wrong.html.contains("wrong") && unknown.html.contains("wrong"));
    let ok = b
        .post(
            "/signin",
            &[
                ("email", "Ada@Example.com"),
                ("password", "correct horse battery"),
                ("next", "/account/sessions"),
            ],
        )
        .await;
    assert_eq!(ok.status, 303);
    assert_eq!(ok.location.as_deref(), Some("/account/sessions"));
    let sessions = b.get("/account/sessions").await;
    assert_eq!(sessions.status, 200);
    assert_eq!(
        sessions.html.matches("data-session=").count(),
        1,
        "{}",
        sessions.html
    );
    // "Sign out everywhere" ends every session.
    let token = csrf(&sessions.html);
    assert_eq!(
        b.post("/account/sessions/end-all", &[("csrf", &token)])
            .await
            .status,
        303
    );
    assert_eq!(b.get("/account/sessions").await.status, 303);
}

/// From an empty server, in the browser alone: the first account, an organization, an API
/// token that works and is shown once, revoked; and a server administrator who keeps the
/// creation of organizations to administrators, in the app and through the API alike.
#[tokio::test]
async fn a_newcomer_makes_an_organization_and_an_api_token_in_the_app() {
    use reqwest::Method;
    let app = TestApp::start().await;
    let mut ada = Browser::new(&app);
    let made = ada
        .post(
            "/setup",
            &[
                ("name", "Ada"),
                ("email", "ada@example.com"),
                ("password", "correct horse battery"),
            ],
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.html);
    let home = ada.get("/").await;
    assert!(
        home.html.contains("not a member of any organization"),
        "{}",
        home.html
    );
    assert!(home.html.contains("action=\"/orgs\""), "{}", home.html);
    assert!(!home.html.contains("through the API"), "{}", home.html);
    let token = csrf(&home.html);

    // An organization: named, or refused saying why.
    let short = ada
        .post("/orgs", &[("csrf", &token), ("title", " A ")])
        .await;
    assert_eq!(short.status, 400, "{}", short.html);
    assert!(short.html.contains("`title`"), "{}", short.html);
    let missing = ada.post("/orgs", &[("csrf", &token)]).await;
    assert_eq!(missing.status, 400, "{}", missing.html);
    let forged = ada
        .post("/orgs", &[("csrf", "forged"), ("title", "Acme Docs")])
        .await;
    assert_eq!(forged.status, 403);
    let created = ada
        .post("/orgs", &[("csrf", &token), ("title", "  Acme <Docs>  ")])
        .await;
    assert_eq!(created.status, 303, "{}", created.html);
    let org_path = created.location.unwrap();
    assert!(org_path.starts_with("/o/"), "{org_path}");
    let org_page = ada.get(&org_path).await;
    assert_eq!(org_page.status, 200, "{}", org_page.html);
    assert!(
        org_page.html.contains("Acme &lt;Docs&gt;"),
        "{}",
        org_page.html
    );
    let home = ada.get("/").await;
    assert!(
        home.html.contains(&format!("href=\"{org_path}\"")),
        "{}",
        home.html
    );

    // A token, shown once, that reaches the organization through the API.
    let account = ada.get("/account").await;
    assert_eq!(account.status, 200, "{}", account.html);
    assert!(account.html.contains("No tokens yet"), "{}", account.html);
    let empty = ada
        .post("/account/tokens", &[("csrf", &token), ("label", "   ")])
        .await;
    assert_eq!(empty.status, 400, "{}", empty.html);
    let made = ada
        .post(
            "/account/tokens",
            &[("csrf", &token), ("label", "laptop <b>")],
        )
        .await;
    assert_eq!(made.status, 200, "{}", made.html);
    assert!(made.html.contains("laptop &lt;b&gt;"), "{}", made.html);
    let secret = made
        .html
        .split("<code id=\"new-token\">")
        .nth(1)
        .and_then(|s| s.split('<').next())
        .expect("the new token")
        .to_string();
    let orgs = app
        .call(Method::GET, "/v1/orgs", Some(&secret), None)
        .await
        .expect(200);
    assert_eq!(orgs["items"][0]["title"], "Acme <Docs>", "{orgs}");
    assert_eq!(orgs["items"][0]["id"], org_path.trim_start_matches("/o/"));
    let again = ada.get("/account").await;
    assert!(!again.html.contains(&secret), "shown once");
    let id = again
        .html
        .split("data-token=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("the token listed")
        .to_string();
    let revoked = ada
        .post(&format!("/account/tokens/{id}/revoke"), &[("csrf", &token)])
        .await;
    assert_eq!(revoked.status, 303);
    app.call(Method::GET, "/v1/orgs", Some(&secret), None)
        .await
        .expect_error(401);
    assert!(ada.get("/account").await.html.contains("No tokens yet"));

    // Only administrators create organizations once the server says so.
    let bob = app.persona("bob").await;
    let mut browsers = signed_in(&app, &["bob"]).await;
    let bob_browser = &mut browsers[0];
    let bob_csrf = csrf(&bob_browser.get("/account").await.html);
    assert_eq!(
        bob_browser
            .post(
                "/admin/settings",
                &[("csrf", &bob_csrf), ("creators", "admins")]
            )
            .await
            .status,
        404,
        "not an administrator"
    );
    let settings = ada.get("/admin/accounts").await;
    assert!(
        settings.html.contains("value=\"everyone\" checked"),
        "{}",
        settings.html
    );
    let bad = ada
        .post(
            "/admin/settings",
            &[("csrf", &token), ("creators", "nobody")],
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.html);
    let set = ada
        .post(
            "/admin/settings",
            &[("csrf", &token), ("creators", "admins")],
        )
        .await;
    assert_eq!(set.status, 303, "{}", set.html);
    assert!(ada
        .get("/admin/accounts")
        .await
        .html
        .contains("value=\"admins\" checked"));
    let bob_home = bob_browser.get("/").await;
    assert!(
        !bob_home.html.contains("action=\"/orgs\""),
        "{}",
        bob_home.html
    );
    assert!(bob_home
        .html
        .contains("An administrator of one can invite you"));
    let refused = bob_browser
        .post("/orgs", &[("csrf", &bob_csrf), ("title", "Bob's")])
        .await;
    assert_eq!(refused.status, 403, "{}", refused.html);
    assert!(refused.html.contains("administrators"), "{}", refused.html);
    let res = app
        .post(&bob, "/v1/orgs", json!({ "title": "Bob's" }))
        .await
        .expect_error(403);
    assert!(res.contains("administrators"), "{res}");
    assert_eq!(
        ada.post("/orgs", &[("csrf", &token), ("title", "Second")])
            .await
            .status,
        303
    );
}

/// The quick find: with no words, the person's recent pages and every organization and
/// space they may read; with words, the places whose names hold them and the pages the
/// search finds in all of them, from anywhere, for that person alone.
#[tokio::test]
async fn quick_find_reaches_pages_spaces_and_organizations_and_lists_recent_pages() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Walrus Works").await;
    let space = app
        .space_with_pages(
            &alice,
            &org,
            "Field Manual",
            &[
                ("Welcome", "Read this first.\n"),
                ("Install the tusk", "Unpack it, then tighten the bolts.\n"),
            ],
        )
        .await;
    let other = app.org(&alice, "Another Org").await;
    let hidden = app.space(&alice, &other, "Hidden Plans", None).await;
    let bob = app.persona("bob").await;
    let bobs = app.org(&bob, "Bob's Place").await;
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;

    // No words: every place, and no recent page yet.
    let find = browsers[0].get("/find").await;
    assert_eq!(find.status, 200, "{}", find.html);
    for link in [
        format!("href=\"/o/{org}\""),
        format!("href=\"/s/{space}\""),
        format!("href=\"/o/{other}\""),
        format!("href=\"/s/{hidden}\""),
    ] {
        assert!(find.html.contains(&link), "{link}: {}", find.html);
    }
    assert!(!find.html.contains(&bobs), "{}", find.html);
    assert!(!find.html.contains("Recent pages"), "{}", find.html);
    assert!(find.html.contains("aria-keyshortcuts=\"Control+K Meta+K\""));

    // A page read is a recent page, on the home screen and in the quick find.
    assert_eq!(
        browsers[0]
            .get(&format!("/s/{space}/install-the-tusk"))
            .await
            .status,
        200
    );
    let home = browsers[0].get("/").await;
    assert!(home.html.contains("Recent pages"), "{}", home.html);
    assert!(
        home.html.contains(&format!(
            "<a href=\"/s/{space}/install-the-tusk\">Install the tusk</a>"
        )),
        "{}",
        home.html
    );
    assert!(browsers[0]
        .get("/find")
        .await
        .html
        .contains("Install the tusk"));
    // Read again after another page, a page heads the list again.
    for path in ["welcome", "install-the-tusk"] {
        let read = browsers[0].get(&format!("/s/{space}/{path}")).await;
        assert_eq!(read.status, 200);
    }
    let home = browsers[0].get("/").await;
    let install = home.html.find(">Install the tusk</a>").expect("listed");
    let welcome = home.html.find(">Welcome</a>").expect("listed");
    assert!(install < welcome, "{}", home.html);

    // Words: the places whose names hold them, and the pages found in every space.
    let found = browsers[0].get("/find?q=tusk").await;
    assert!(found.html.contains("1 page matches"), "{}", found.html);
    assert!(
        found
            .html
            .contains(&format!("/s/{space}/install-the-tusk\"")),
        "{}",
        found.html
    );
    assert!(
        !found.html.contains(&format!("href=\"/s/{hidden}\"")),
        "{}",
        found.html
    );
    let places = browsers[0].get("/find?q=plans").await;
    assert!(
        places.html.contains(&format!("href=\"/s/{hidden}\"")),
        "{}",
        places.html
    );
    assert!(
        !places.html.contains(&format!("href=\"/s/{space}\"")),
        "{}",
        places.html
    );
    // As the script asks while one types: the results region alone.
    let fragment = browsers[0].fragment("/find?q=tusk").await;
    assert_eq!(fragment.headers["x-quire-fragment"], "results");
    assert!(
        fragment.html.starts_with("<p id=\"search-status\""),
        "{}",
        fragment.html
    );

    // Another person finds only their own.
    let theirs = browsers[1].get("/find?q=tusk").await;
    assert!(theirs.html.contains("0 pages match"), "{}", theirs.html);
    assert!(!theirs.html.contains(&org), "{}", theirs.html);
    let theirs = browsers[1].get("/find").await;
    assert!(
        theirs.html.contains(&format!("href=\"/o/{bobs}\"")),
        "{}",
        theirs.html
    );
    assert!(!theirs.html.contains("Install the tusk"), "{}", theirs.html);
    let _ = bob;
}

#[tokio::test]
async fn the_first_run_makes_one_account_however_many_ask_at_once() {
    let app = TestApp::start().await;
    let forms: Vec<[(&str, String); 2]> = (0..8)
        .map(|i| {
            [
                ("email", format!("first{i}@example.com")),
                ("password", "correct horse battery".to_string()),
            ]
        })
        .collect();
    let mut browsers: Vec<Browser> = (0..8).map(|_| Browser::new(&app)).collect();
    let pages = futures_util::future::join_all(browsers.iter_mut().zip(&forms).map(|(b, f)| {
        let form = [(f[0].0, f[0].1.as_str()), (f[1].0, f[1].1.as_str())];
        async move { b.post("/setup", &form).await }
    }))
    .await;
    let signed_in = pages.iter().filter(|p| p.set_cookie.is_some()).count();
    assert_eq!(signed_in, 1, "one setup signs in");
    for p in pages.iter().filter(|p| p.set_cookie.is_none()) {
        assert_eq!(p.location.as_deref(), Some("/signin"));
    }
    let count = |sql: &'static str| {
        let db = app.state.db.clone();
        async move {
            db.scalar::<i64>(&quire_server::db::sql::Sql::new(sql))
                .await
                .unwrap()
        }
    };
    assert_eq!(count("SELECT COUNT(*) FROM users").await, 1);
    assert_eq!(
        count("SELECT COUNT(*) FROM users WHERE instance_admin = 1").await,
        1
    );
}

/// Posts the accounts screen's form `op` for `email` with `password`.
async fn accounts_form(b: &mut Browser, csrf: &str, op: &str, email: &str, password: &str) -> Page {
    let form = [
        ("csrf", csrf),
        ("op", op),
        ("email", email),
        ("password", password),
    ];
    b.post("/admin/accounts", &form).await
}

#[tokio::test]
async fn instance_administrators_make_accounts_and_set_passwords_in_the_app() {
    let app = TestApp::start().await;
    let mut admin = Browser::new(&app);
    let made = admin
        .post(
            "/setup",
            &[
                ("email", "ada@example.com"),
                ("password", "correct horse battery"),
            ],
        )
        .await;
    assert_eq!(made.status, 303, "{}", made.html);
    let mut bo = signed_in(&app, &["bo"]).await.remove(0);

    // Only the server's administrators find the screen, and only they may post to it.
    assert!(!bo.get("/").await.html.contains("/admin/accounts"));
    assert_eq!(bo.get("/admin/accounts").await.status, 404);
    let bo_csrf = csrf(&bo.get("/account/sessions").await.html);
    let by_bo = bo
        .post(
            "/admin/accounts",
            &[
                ("csrf", &bo_csrf),
                ("op", "reset"),
                ("email", "ada@example.com"),
                ("password", "taken over now"),
            ],
        )
        .await;
    assert_eq!(by_bo.status, 404);
    assert!(admin
        .get("/")
        .await
        .html
        .contains("href=\"/admin/accounts\""));
    let screen = admin.get("/admin/accounts").await;
    assert_eq!(screen.status, 200, "{}", screen.html);
    assert!(screen.html.contains("ada@example.com") && screen.html.contains("bo@example.com"));
    let token = csrf(&screen.html);
    // A new account, who signs in with the password given.
    let created = accounts_form(
        &mut admin,
        &token,
        "create",
        "cy@example.com",
        "a long passphrase",
    )
    .await;
    assert_eq!(created.status, 303, "{}", created.html);
    let mut cy = Browser::new(&app);
    let p = cy
        .post(
            "/signin",
            &[
                ("email", "cy@example.com"),
                ("password", "a long passphrase"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    // Refusals name what was wrong, and change nothing.
    for (op, email, password, why) in [
        (
            "create",
            "cy@example.com",
            "another passphrase",
            "exists already",
        ),
        ("create", "di@example.com", "password123", "most common"),
        (
            "reset",
            "nobody@example.com",
            "a long passphrase",
            "`email`",
        ),
    ] {
        let refused = accounts_form(&mut admin, &token, op, email, password).await;
        assert_eq!(refused.status, 400, "{op} {email}");
        assert!(refused.html.contains(why), "{}", refused.html);
    }
    assert!(!admin
        .get("/admin/accounts")
        .await
        .html
        .contains("di@example.com"));

    // A new password for Bo ends Bo's sessions; the new one signs in.
    let reset = accounts_form(
        &mut admin,
        &token,
        "reset",
        "bo@example.com",
        "a brand new passphrase",
    )
    .await;
    assert_eq!(reset.status, 303, "{}", reset.html);
    assert_eq!(bo.get("/").await.location.as_deref(), Some("/signin"));
    let mut bo_again = Browser::new(&app);
    let p = bo_again
        .post(
            "/signin",
            &[
                ("email", "bo@example.com"),
                ("password", "a brand new passphrase"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    // A form without the session's token is refused.
    let forged = admin
        .post(
            "/admin/accounts",
            &[
                ("csrf", "forged"),
                ("op", "create"),
                ("email", "ed@example.com"),
                ("password", "a long passphrase"),
            ],
        )
        .await;
    assert_eq!(forged.status, 403);
}

#[tokio::test]
async fn failed_sign_ins_count_on_every_node() {
    let app = TestApp::start().await;
    let other = app.another_node().await;
    quire_server::admin::set_password(
        &app.config,
        "cy@example.com",
        Some("Cy"),
        "a fine passphrase",
        false,
    )
    .await
    .unwrap();
    let wrong = [("email", "cy@example.com"), ("password", "guessing wrong")];
    for (i, node) in [&app, &other].into_iter().cycle().take(10).enumerate() {
        let p = Browser::new(node).post("/signin", &wrong).await;
        assert_eq!(p.status, 401, "attempt {i}");
    }
    // Counted where every node reads them, under keys that do not show the address.
    let keys: Vec<(String,)> = app
        .state
        .db
        .rows(&quire_server::db::sql::Sql::new(
            "SELECT key FROM sign_in_failures",
        ))
        .await
        .unwrap();
    assert!(!keys.is_empty());
    assert!(keys
        .iter()
        .all(|(k,)| !k.contains("cy@") && !k.contains("127.0.0.1")));
    // Ten failures, five on each node: the account is held on both.
    for node in [&app, &other] {
        let p = Browser::new(node)
            .post(
                "/signin",
                &[
                    ("email", "cy@example.com"),
                    ("password", "a fine passphrase"),
                ],
            )
            .await;
        assert_eq!(p.status, 429, "{}", p.html);
    }
}

#[tokio::test]
async fn sign_in_attempts_are_limited_per_account() {
    let app = TestApp::start().await;
    quire_server::admin::set_password(
        &app.config,
        "bo@example.com",
        Some("Bo"),
        "a fine passphrase",
        false,
    )
    .await
    .unwrap();
    let mut b = Browser::new(&app);
    for _ in 0..10 {
        let p = b
            .post(
                "/signin",
                &[("email", "bo@example.com"), ("password", "guessing wrong")],
            )
            .await;
        assert_eq!(p.status, 401);
    }
    let p = b
        .post(
            "/signin",
            &[
                ("email", "bo@example.com"),
                ("password", "a fine passphrase"),
            ],
        )
        .await;
    assert_eq!(p.status, 429, "{}", p.html);
    assert!(p.html.contains("Too many failed attempts"));
}

#[tokio::test]
async fn sign_in_attempts_sent_at_once_are_counted_before_any_is_checked() {
    let app = TestApp::start().await;
    quire_server::admin::set_password(
        &app.config,
        "di@example.com",
        Some("Di"),
        "a fine passphrase",
        false,
    )
    .await
    .unwrap();
    let attempts = (0..60).map(|i| {
        let mut b = Browser::new(&app);
        async move {
            let wrong = format!("guessing wrong {i}");
            let p = b
                .post(
                    "/signin",
                    &[("email", "di@example.com"), ("password", &wrong)],
                )
                .await;
            p.status
        }
    });
    let statuses = futures_util::future::join_all(attempts).await;
    let checked = statuses.iter().filter(|s| **s == 401).count();
    let held = statuses.iter().filter(|s| **s == 429).count();
    // The limit is ten failures an account: no more than ten passwords were checked.
    assert_eq!((checked, held), (10, 50), "{statuses:?}");
    let p = Browser::new(&app)
        .post(
            "/signin",
            &[
                ("email", "di@example.com"),
                ("password", "a fine passphrase"),
            ],
        )
        .await;
    assert_eq!(p.status, 429);
}

/// While the node hashes as many passwords as it may, a sign-in is answered 503 with
/// `Retry-After`, at once and without being counted; once hashing frees, it goes through.
#[tokio::test]
async fn sign_in_waits_its_turn_at_hashing_and_is_told_to_retry_past_the_queue() {
    let app = TestApp::start().await;
    quire_server::admin::set_password(
        &app.config,
        "fay@example.com",
        Some("Fay"),
        "a fine passphrase",
        false,
    )
    .await
    .unwrap();
    // Every slot and every place in the queue taken by work held at a gate (more than any
    // node's bound: those past it are refused at once).
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = std::sync::Arc::new(std::sync::Mutex::new(gate));
    let refused = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut held = Vec::new();
    for _ in 0..200 {
        let (state, gate, refused) = (app.state.clone(), gate.clone(), refused.clone());
        held.push(tokio::spawn(async move {
            let ran = state
                .hashing
                .run(move || {
                    let _ = gate.lock().unwrap().recv();
                })
                .await;
            if ran.is_err() {
                refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }));
    }
    // One refused: every place is taken, by work that waits at the gate.
    while refused.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    let form = [
        ("email", "fay@example.com"),
        ("password", "a fine passphrase"),
    ];
    let p = Browser::new(&app).post("/signin", &form).await;
    assert_eq!(p.status, 503, "{}", p.html);
    assert_eq!(
        p.headers.get("retry-after").and_then(|v| v.to_str().ok()),
        Some("5")
    );
    assert!(p.html.contains("try again in a few seconds"), "{}", p.html);
    drop(release);
    for h in held {
        h.await.unwrap();
    }
    // Not counted as a failure: ten wrong passwords still pass the limit before it holds.
    for _ in 0..10 {
        let wrong = [("email", "fay@example.com"), ("password", "guessing wrong")];
        assert_eq!(Browser::new(&app).post("/signin", &wrong).await.status, 401);
    }
    let p = Browser::new(&app).post("/signin", &form).await;
    assert_eq!(p.status, 429);
}

#[tokio::test]
async fn sign_in_sends_the_browser_back_only_to_a_path_of_this_server() {
    let app = TestApp::start().await;
    let mut b = signed_in(&app, &["ed"]).await.remove(0);
    for (next, to) in [
        ("/o/abc", "/o/abc"),
        ("%2F%09%2Fevil.example", "/"),
        ("%2F%0A%2Fevil.example", "/"),
        ("%2F%0D%2Fevil.example", "/"),
        ("%2F%5Cevil.example", "/"),
        ("%2F%2Fevil.example", "/"),
        ("https%3A%2F%2Fevil.example", "/"),
    ] {
        let p = b.get(&format!("/signin?next={next}")).await;
        assert_eq!(p.status, 303, "{next}");
        assert_eq!(p.location.as_deref(), Some(to), "{next}");
    }
    // The form carries it through a sign-in too.
    let mut fresh = Browser::new(&app);
    let p = fresh
        .post(
            "/signin",
            &[
                ("email", "ed@example.com"),
                ("password", "a fine passphrase"),
                ("next", "/\t/evil.example"),
            ],
        )
        .await;
    assert_eq!(p.location.as_deref(), Some("/"));
}

#[tokio::test]
async fn every_app_url_opens_its_screen_for_those_who_may_see_it() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    for (email, name) in [("alice@example.com", "alice"), ("bob@example.com", "bob")] {
        quire_server::admin::set_password(
            &app.config,
            email,
            Some(name),
            "a fine passphrase",
            false,
        )
        .await
        .unwrap();
    }
    let org = app.org(&alice, "Docs team").await;
    let collection = app.collection(&alice, &org, "Handbooks", None).await;
    let space = app.space(&alice, &org, "Guide", Some(&collection)).await;
    let cr = app.open_change_request(&alice, &space, "First pages").await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
        json!({ "changes": [
            { "operation": "insert_page", "title": "Getting started", "ref": "start",
              "document": { "markdown": "## Install\n\nRun <b>it</b> and **smile**.\n\n## Use\n\nDone.\n" } },
            { "operation": "insert_page", "title": "Details", "into": "start",
              "document": { "markdown": "More.\n" } },
            { "operation": "insert_page", "title": "Appendix", "ref": "appendix",
              "document": { "markdown": "Extra.\n" } },
            { "operation": "insert_page", "title": "Deep corner", "into": "appendix",
              "document": { "markdown": "Far.\n" } },
        ]}),
    )
    .await
    .expect(200);
    app.merge_change_request(&alice, &space, &cr).await;
    let open = app.open_change_request(&alice, &space, "Later").await;
    let pages = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{open}/content/pages"),
        )
        .await
        .expect(200);
    let page_id = pages["pages"][0]["id"].as_str().unwrap().to_string();
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{open}/content"),
        json!({ "changes": [
            { "operation": "update_page", "page": page_id,
              "document": { "markdown": "## Install\n\nRun <b>it</b> and **grin**.\n\n## Use\n\nDone.\n" } },
            { "operation": "insert_page", "title": "Troubleshooting",
              "document": { "markdown": "Ask <script>alert(1)</script> for help.\n" } },
        ]}),
    )
    .await
    .expect(200);

    let site = app
        .post(
            &alice,
            &format!("/v1/orgs/{org}/sites"),
            json!({ "title": "Public docs", "spaces": [space] }),
        )
        .await
        .expect(201);
    let spec = app
        .post(
            &alice,
            &format!("/v1/orgs/{org}/openapi"),
            json!({ "slug": "pets", "source": { "text": "openapi: 3.0.3\ninfo: {title: Pets, version: '1'}\npaths: {}\n" } }),
        )
        .await
        .expect(201);

    let main_pages = app
        .get(&alice, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    let revision = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);

    // The API's app URLs.
    let urls: Vec<String> = [
        site,
        spec,
        main_pages["pages"][0].clone(),
        revision,
        app.get(&alice, &format!("/v1/orgs/{org}"))
            .await
            .expect(200),
        app.get(&alice, &format!("/v1/collections/{collection}"))
            .await
            .expect(200),
        app.get(&alice, &format!("/v1/spaces/{space}"))
            .await
            .expect(200),
        app.get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{open}"),
        )
        .await
        .expect(200),
    ]
    .iter()
    .map(|v| v["urls"]["app"].as_str().expect("urls.app").to_string())
    .collect();

    let mut anon = Browser::new(&app);
    let mut a = Browser::new(&app);
    a.post(
        "/signin",
        &[
            ("email", "alice@example.com"),
            ("password", "a fine passphrase"),
        ],
    )
    .await;
    let mut b = Browser::new(&app);
    b.post(
        "/signin",
        &[
            ("email", "bob@example.com"),
            ("password", "a fine passphrase"),
        ],
    )
    .await;
    for url in &urls {
        let path = url
            .strip_prefix(&app.base)
            .expect("an app URL on this server");
        let away = anon.get(path).await;
        assert_eq!(away.status, 303, "{path}");
        assert!(
            away.location.unwrap().starts_with("/signin?next=%2F"),
            "{path}"
        );
        let seen = a.get(path).await;
        assert_eq!(seen.status, 200, "{path}: {}", seen.html);
        // Bob is no member: every screen answers as missing.
        assert_eq!(b.get(path).await.status, 404, "{path}");
    }

    // The space opens on its first page, rendered by the sanitising renderer.
    let page = a.get(&format!("/s/{space}")).await;
    assert!(page.html.contains("Getting started"));
    assert!(
        page.html.contains("<strong>smile</strong>"),
        "{}",
        page.html
    );
    assert!(
        !page.html.contains("<b>it</b>"),
        "raw HTML is never passed through"
    );
    assert!(page.html.contains("On this page"));
    assert!(page
        .html
        .contains(&format!("href=\"/s/{space}/getting-started\"")));
    let by_path = a.get(&format!("/s/{space}/getting-started")).await;
    assert_eq!(by_path.status, 200);
    // The sidebar opens the current page's branch only: other branches show their size.
    assert!(by_path.html.contains(">Details</a>"), "{}", by_path.html);
    assert!(!by_path.html.contains("Deep corner"), "{}", by_path.html);
    assert!(by_path.html.contains("1 page inside"), "{}", by_path.html);
    let deep = a.get(&format!("/s/{space}/appendix")).await;
    assert!(deep.html.contains(">Deep corner</a>"), "{}", deep.html);
    assert_eq!(a.get(&format!("/s/{space}/no-such-page")).await.status, 404);
    let changes = a.get(&format!("/s/{space}/~/changes")).await;
    assert!(changes.html.contains("Later") && changes.html.contains("First pages"));
    // The discussion: comments rendered by the sanitising renderer, on the space and on a
    // change request.
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/comments"),
        json!({ "body": { "markdown": "Looks **good**.\n\n<script>alert(1)</script>\n" } }),
    )
    .await
    .expect(200);
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{open}/comments"),
        json!({ "body": { "markdown": "About this change." } }),
    )
    .await
    .expect(200);
    let talk = a.get(&format!("/s/{space}/~/comments")).await;
    assert!(talk.html.contains("<strong>good</strong>"), "{}", talk.html);
    assert!(!talk.html.contains("<script>"), "{}", talk.html);
    assert!(
        !talk.html.contains("About this change."),
        "a change request's comments stay on it"
    );

    // Search, in the space and across the organization: the matching page, words marked.
    let found = a.get(&format!("/s/{space}/~/search?q=smile")).await;
    assert_eq!(found.status, 200);
    assert!(found.html.contains("Getting started"), "{}", found.html);
    assert!(found.html.contains("<mark>smile</mark>"), "{}", found.html);
    let none = a.get(&format!("/s/{space}/~/search?q=zebra")).await;
    assert!(none.html.contains("0 pages match"), "{}", none.html);
    let across = a.get(&format!("/o/{org}/search?q=smile")).await;
    assert!(across.html.contains("Getting started"), "{}", across.html);
    assert_eq!(b.get(&format!("/o/{org}/search?q=smile")).await.status, 404);

    // A change request's screen shows its changes, the edited words marked.
    let number = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{open}"),
        )
        .await
        .expect(200)["number"]
        .as_i64()
        .unwrap();
    let cr_screen = a.get(&format!("/s/{space}/~/changes/{number}")).await;
    assert_eq!(cr_screen.status, 200);
    assert!(
        cr_screen.html.contains("data-change=\"edited\""),
        "{}",
        cr_screen.html
    );
    assert!(
        cr_screen.html.contains("data-change=\"added\""),
        "{}",
        cr_screen.html
    );
    assert!(
        cr_screen.html.contains("<mark>**grin**.</mark>"),
        "{}",
        cr_screen.html
    );
    assert!(!cr_screen.html.contains("<script>"), "{}", cr_screen.html);
    assert!(
        cr_screen.html.contains("About this change."),
        "{}",
        cr_screen.html
    );
    let org_screen = a.get(&format!("/o/{org}")).await;
    assert!(org_screen.html.contains("Guide") && org_screen.html.contains("Handbooks"));

    // Bob, once given read access to the space, reads it.
    app.add_member(&alice, &org, &bob, json!("read")).await;
    assert_eq!(b.get(&format!("/s/{space}")).await.status, 200);
}

#[tokio::test]
async fn a_change_request_is_reviewed_and_merged_in_the_app_and_a_conflict_names_its_pages() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let carol = app.persona("carol").await;
    for (email, name) in [
        ("alice@example.com", "alice"),
        ("bob@example.com", "bob"),
        ("carol@example.com", "carol"),
    ] {
        quire_server::admin::set_password(
            &app.config,
            email,
            Some(name),
            "a fine passphrase",
            false,
        )
        .await
        .unwrap();
    }
    let org = app.org(&alice, "Reviewers").await;
    app.add_member(&alice, &org, &bob, json!("review")).await;
    app.add_member(&alice, &org, &carol, json!("read")).await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let first = app.open_change_request(&alice, &space, "Base").await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{first}/content"),
        json!({ "changes": [{ "operation": "insert_page", "title": "Intro",
            "document": { "markdown": "One line.\n" } }] }),
    )
    .await
    .expect(200);
    app.merge_change_request(&alice, &space, &first).await;
    let page_id = app
        .get(&alice, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200)["pages"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let edit = |text: &'static str| {
        json!({ "changes": [{ "operation": "update_page",
        "page": page_id, "document": { "markdown": text } }] })
    };
    let ours = app.open_change_request(&alice, &space, "Ours").await;
    let theirs = app.open_change_request(&alice, &space, "Theirs").await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{ours}/content"),
        edit("Our line.\n"),
    )
    .await
    .expect(200);
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{theirs}/content"),
        edit("Their line.\n"),
    )
    .await
    .expect(200);
    let number = |cr: &str| {
        let (app, alice, space, cr) = (&app, &alice, &space, cr.to_string());
        async move {
            app.get(alice, &format!("/v1/spaces/{space}/change-requests/{cr}"))
                .await
                .expect(200)["number"]
                .as_i64()
                .unwrap()
        }
    };
    let other = app.open_change_request(&alice, &space, "Other").await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{other}/content"),
        json!({ "changes": [{ "operation": "insert_page", "title": "Elsewhere",
            "document": { "markdown": "Unrelated.\n" } }] }),
    )
    .await
    .expect(200);
    let other_n = number(&other).await;
    let ours_n = number(&ours).await;
    let theirs_n = number(&theirs).await;
    let ours_path = format!("/s/{space}/~/changes/{ours_n}");

    let mut a = Browser::new(&app);
    let mut b = Browser::new(&app);
    let mut c = Browser::new(&app);
    for (br, email) in [(&mut a, "alice"), (&mut b, "bob"), (&mut c, "carol")] {
        let p = br
            .post(
                "/signin",
                &[
                    ("email", &format!("{email}@example.com")),
                    ("password", "a fine passphrase"),
                ],
            )
            .await;
        assert_eq!(p.status, 303);
    }

    // A reader sees why the merge is disabled and cannot review.
    let seen = c.get(&ours_path).await;
    assert!(
        seen.html.contains("merging needs the edit role"),
        "{}",
        seen.html
    );
    assert!(!seen.html.contains("value=\"approved\""));
    let token = csrf(&seen.html);
    let refused = c
        .post(
            &format!("{ours_path}/review"),
            &[("csrf", &token), ("status", "approved")],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.html);

    // The reviewer approves; the review is shown.
    let seen = b.get(&ours_path).await;
    assert!(seen.html.contains("value=\"approved\""), "{}", seen.html);
    let token = csrf(&seen.html);
    let done = b
        .post(
            &format!("{ours_path}/review"),
            &[("csrf", &token), ("status", "approved")],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.html);
    assert!(a
        .get(&ours_path)
        .await
        .html
        .contains("data-review=\"approved\""));
    let api_reviews = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{ours}/reviews"),
        )
        .await
        .expect(200);
    assert_eq!(api_reviews["items"][0]["reviewer"]["id"], bob.id.as_str());

    // A forged form is refused; the admin merges; the other change request then conflicts,
    // and the page names what conflicts.
    assert_eq!(
        a.post(&format!("{ours_path}/merge"), &[("csrf", "forged")])
            .await
            .status,
        403
    );
    let token = csrf(&a.get(&ours_path).await.html);
    let merged = a
        .post(&format!("{ours_path}/merge"), &[("csrf", &token)])
        .await;
    assert_eq!(merged.status, 303, "{}", merged.html);
    let after = a.get(&ours_path).await;
    assert!(
        after.html.contains("This change request is merged."),
        "{}",
        after.html
    );
    let conflict = a
        .post(
            &format!("/s/{space}/~/changes/{theirs_n}/merge"),
            &[("csrf", &token)],
        )
        .await;
    assert_eq!(conflict.status, 409, "{}", conflict.html);
    assert!(conflict.html.contains("Intro"), "{}", conflict.html);
    // Behind main: "Update from main" pulls it in, or names the conflict.
    let other_path = format!("/s/{space}/~/changes/{other_n}");
    let behind = a.get(&other_path).await;
    assert!(behind.html.contains("Update from main"), "{}", behind.html);
    assert!(
        !c.get(&other_path).await.html.contains("Update from main"),
        "a reader may not update"
    );
    let updated = a
        .post(&format!("{other_path}/update"), &[("csrf", &token)])
        .await;
    assert_eq!(updated.status, 303, "{}", updated.html);
    assert!(!a.get(&other_path).await.html.contains("Update from main"));
    // Updated, not merged: still open, and main does not hold its page.
    let after_update = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{other}"),
        )
        .await
        .expect(200);
    assert_eq!(after_update["status"], "open", "{after_update}");
    let main_pages = app
        .get(&alice, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    assert!(
        !main_pages.to_string().contains("Elsewhere"),
        "{main_pages}"
    );
    let clash = a
        .post(
            &format!("/s/{space}/~/changes/{theirs_n}/update"),
            &[("csrf", &token)],
        )
        .await;
    assert_eq!(clash.status, 409, "{}", clash.html);
    assert!(clash.html.contains("Intro"), "{}", clash.html);
    let still = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{theirs}"),
        )
        .await
        .expect(200);
    assert_eq!(still["status"], "open", "a refused update changes nothing");
    // Subject and status are edited from the screen.
    let edited = a
        .post(
            &format!("{other_path}/edit"),
            &[
                ("csrf", &token),
                ("subject", "Renamed here"),
                ("status", "draft"),
            ],
        )
        .await;
    assert_eq!(edited.status, 303, "{}", edited.html);
    let renamed = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{other}"),
        )
        .await
        .expect(200);
    assert_eq!(renamed["subject"], "Renamed here");
    assert_eq!(renamed["status"], "draft");
    assert!(a.get(&other_path).await.html.contains("Renamed here"));
    let main = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/content/page/{page_id}?format=markdown"),
        )
        .await
        .expect(200);
    assert!(
        main["markdown"].as_str().unwrap().contains("Our line."),
        "{main}"
    );
}

#[tokio::test]
async fn sessions_end_when_idle_or_on_a_new_password_and_sso_members_need_their_sso() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    quire_server::admin::set_password(
        &app.config,
        "alice@example.com",
        Some("alice"),
        "a fine passphrase",
        false,
    )
    .await
    .unwrap();
    let mut a = Browser::new(&app);
    let form = [
        ("email", "alice@example.com"),
        ("password", "a fine passphrase"),
    ];
    assert_eq!(a.post("/signin", &form).await.status, 303);
    assert_eq!(a.get("/").await.status, 200);

    // Unused for longer than the idle limit, the session is over.
    app.clock.advance_ms(7 * 24 * 3600 * 1000 + 1000);
    assert_eq!(a.get("/").await.location.as_deref(), Some("/signin"));

    // A new password ends the sessions opened with the old one.
    assert_eq!(a.post("/signin", &form).await.status, 303);
    assert_eq!(a.get("/").await.status, 200);
    quire_server::admin::set_password(
        &app.config,
        "alice@example.com",
        None,
        "another fine passphrase",
        false,
    )
    .await
    .unwrap();
    assert_eq!(a.get("/").await.location.as_deref(), Some("/signin"));

    // A member of an organization that enforces its single sign-on cannot use a password.
    let org = app.org(&alice, "Strict").await;
    app.patch(&alice, &format!("/v1/orgs/{org}"), json!({ "sso": true }))
        .await
        .expect(200);
    let refused = a
        .post(
            "/signin",
            &[
                ("email", "alice@example.com"),
                ("password", "another fine passphrase"),
            ],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.html);
    assert!(refused.html.contains("single sign-on"), "{}", refused.html);
}

#[tokio::test]
async fn people_discuss_a_page_and_a_change_request_in_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let carol = app.persona("carol").await;
    let org = app.org(&alice, "Talkers").await;
    app.add_member(&alice, &org, &bob, json!("comment")).await;
    app.add_member(&alice, &org, &carol, json!("read")).await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let cr = app.open_change_request(&alice, &space, "Base").await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
        json!({ "changes": [{ "operation": "insert_page", "title": "Intro",
            "document": { "markdown": "One line.\n" } }] }),
    )
    .await
    .expect(200);
    app.merge_change_request(&alice, &space, &cr).await;
    let pages = app
        .get(&alice, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    let page_id = pages["pages"][0]["id"].as_str().unwrap().to_string();
    let page_path = format!("/s/{space}/{}", pages["pages"][0]["path"].as_str().unwrap());
    let mut browsers = signed_in(&app, &["alice", "bob", "carol"]).await;
    let mut c = browsers.pop().unwrap();
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();

    // Bob comments on the page; the words are escaped and shown on the page.
    let seen = b.get(&page_path).await;
    assert!(seen.html.contains("Comment on this page"), "{}", seen.html);
    let token = csrf(&seen.html);
    let posted = b
        .post(
            &format!("/s/{space}/~/comments"),
            &[
                ("csrf", &token),
                ("back", &page_path),
                ("page", &page_id),
                ("body", "Is **this** right?\n\n<script>alert(1)</script>"),
            ],
        )
        .await;
    assert_eq!(posted.status, 303, "{}", posted.html);
    let to = posted.location.unwrap();
    assert!(to.starts_with(&format!("{page_path}#comment-")), "{to}");
    let listed = app
        .get(&alice, &format!("/v1/spaces/{space}/comments"))
        .await
        .expect(200);
    assert_eq!(listed["count"], 1);
    let comment = listed["items"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(listed["items"][0]["target"]["page"]["id"], page_id.as_str());
    let seen = a.get(&page_path).await;
    assert!(
        seen.html.contains("<strong>this</strong> right?"),
        "{}",
        seen.html
    );
    assert!(!seen.html.contains("<script>alert"), "{}", seen.html);

    // A reader sees the comment but no form; a forged post is refused like the API's.
    let seen = c.get(&page_path).await;
    assert!(seen.html.contains(&format!("id=\"comment-{comment}\"")));
    assert!(!seen.html.contains("Comment on this page"));
    assert!(!seen.html.contains("/resolve\""));
    let token = csrf(&seen.html);
    let refused = c
        .post(
            &format!("/s/{space}/~/comments/{comment}/reply"),
            &[("csrf", &token), ("body", "Me too")],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.html);

    // Alice replies, reacts and resolves; the API reports each.
    let token = csrf(&a.get(&page_path).await.html);
    let base = format!("/s/{space}/~/comments/{comment}");
    for (path, form) in [
        (format!("{base}/reply"), vec![("body", "Yes, it is.")]),
        (
            format!("{base}/react"),
            vec![("emoji", "👍"), ("op", "add")],
        ),
        (format!("{base}/resolve"), vec![]),
    ] {
        let mut form = form;
        form.push(("csrf", &token));
        let p = a.post(&path, &form).await;
        assert_eq!(p.status, 303, "{path}: {}", p.html);
    }
    let got = app
        .get(&bob, &format!("/v1/spaces/{space}/comments/{comment}"))
        .await
        .expect(200);
    assert_eq!(got["replies"], 1);
    assert_eq!(got["status"], "resolved");
    assert_eq!(got["reactions"][0]["emoji"], "👍");
    let seen = b.get(&format!("/s/{space}/~/comments")).await;
    assert!(seen.html.contains("Yes, it is."), "{}", seen.html);
    assert!(seen.html.contains("Reopen"));
    assert!(seen.html.contains("👍 1"));

    // Only the author may edit; an empty body is refused with its field named.
    let token = csrf(&seen.html);
    let p = b
        .post(
            &format!("{base}/edit"),
            &[("csrf", &token), ("body", "Is this right?")],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let p = b
        .post(&format!("{base}/edit"), &[("csrf", &token), ("body", "  ")])
        .await;
    assert_eq!(p.status, 400);
    assert!(p.html.contains("`body`"), "{}", p.html);
    let token_a = csrf(&a.get(&page_path).await.html);
    let p = a
        .post(
            &format!("{base}/edit"),
            &[("csrf", &token_a), ("body", "Hijacked")],
        )
        .await;
    assert_eq!(p.status, 403);
    // `back` never leaves the space.
    let p = b
        .post(
            &format!("{base}/reopen"),
            &[("csrf", &token), ("back", "//evil.example/")],
        )
        .await;
    assert_eq!(p.status, 303);
    assert!(p
        .location
        .unwrap()
        .starts_with(&format!("/s/{space}/~/comments#")));

    // A change request's discussion, then the author deletes the comment.
    let open = app.open_change_request(&alice, &space, "Talk").await;
    let n = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{open}"),
        )
        .await
        .expect(200)["number"]
        .as_i64()
        .unwrap();
    let cr_path = format!("/s/{space}/~/changes/{n}");
    let token = csrf(&b.get(&cr_path).await.html);
    let p = b
        .post(
            &format!("{cr_path}/comments"),
            &[
                ("csrf", &token),
                ("back", &cr_path),
                ("body", "Looks good."),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let in_cr = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{open}/comments"),
        )
        .await
        .expect(200);
    assert_eq!(in_cr["count"], 1);
    assert!(a.get(&cr_path).await.html.contains("Looks good."));
    let p = b.post(&format!("{base}/delete"), &[("csrf", &token)]).await;
    assert_eq!(p.status, 303);
    let listed = app
        .get(&alice, &format!("/v1/spaces/{space}/comments"))
        .await
        .expect(200);
    assert_eq!(listed["count"], 0);
}

#[tokio::test]
async fn admins_invite_change_roles_and_remove_and_the_invited_join_in_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Crew").await;
    app.add_member(&alice, &org, &bob, json!("read")).await;
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    let members = format!("/o/{org}/members");

    // A reader sees the members but no admin form, and cannot change roles.
    let seen = b.get(&members).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    assert!(seen.html.contains("alice"));
    assert!(!seen.html.contains("Invite people"));
    let token = csrf(&seen.html);
    let refused = b
        .post(
            &members,
            &[
                ("csrf", &token),
                ("op", "role"),
                ("user", bob.id.as_str()),
                ("role", "admin"),
            ],
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.html);

    // The admin promotes Bob; the API reports it. The last admin cannot be demoted.
    let seen = a.get(&members).await;
    assert!(seen.html.contains("Invite people"), "{}", seen.html);
    let token = csrf(&seen.html);
    let p = a
        .post(
            &members,
            &[
                ("csrf", &token),
                ("op", "role"),
                ("user", bob.id.as_str()),
                ("role", "edit"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let m = app
        .get(&alice, &format!("/v1/orgs/{org}/members/{}", bob.id))
        .await
        .expect(200);
    assert_eq!(m["role"], "edit");
    let p = a
        .post(
            &members,
            &[
                ("csrf", &token),
                ("op", "role"),
                ("user", alice.id.as_str()),
                ("role", "read"),
            ],
        )
        .await;
    assert_eq!(p.status, 400);
    assert!(p.html.contains("last admin"), "{}", p.html);

    // Inviting an address without an account shows its link once; the person opens it,
    // creates their password and lands in the organization.
    let p = a
        .post(
            &members,
            &[
                ("csrf", &token),
                ("op", "invite"),
                ("emails", "dora@example.com"),
                ("role", "comment"),
            ],
        )
        .await;
    assert_eq!(p.status, 200, "{}", p.html);
    let at = p.html.find("/join/").expect("an invitation link");
    let link: String = p.html[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '/' || *c == '_' || *c == '-')
        .collect();
    assert!(a.get(&members).await.html.contains("dora@example.com"));
    let mut d = Browser::new(&app);
    let seen = d.get(&link).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    assert!(seen.html.contains("dora@example.com"));
    let weak = d
        .post(&link, &[("name", "Dora"), ("password", "password")])
        .await;
    assert_eq!(weak.status, 400);
    assert!(weak.html.contains("most common"), "{}", weak.html);
    let joined = d
        .post(&link, &[("name", "Dora"), ("password", "a long walk home")])
        .await;
    assert_eq!(joined.status, 303, "{}", joined.html);
    assert_eq!(
        joined.location.as_deref(),
        Some(format!("/o/{org}").as_str())
    );
    assert_eq!(d.get(&format!("/o/{org}")).await.status, 200);
    let listed = app
        .get(&alice, &format!("/v1/orgs/{org}/members?search=dora"))
        .await
        .expect(200);
    assert_eq!(listed["items"][0]["role"], "comment", "{listed}");
    // The link is spent.
    assert_eq!(Browser::new(&app).get(&link).await.status, 404);

    // An invite link: a new person creates an account through it and joins as read.
    let p = a
        .post(
            &members,
            &[("csrf", &token), ("op", "link"), ("role", "read")],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let seen = a.get(&members).await;
    let at = seen.html.find("/invite/").expect("an invite link");
    let path: String = seen.html[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '/')
        .collect();
    let mut e = Browser::new(&app);
    assert!(e.get(&path).await.html.contains("create one"));
    let p = e
        .post(
            &path,
            &[
                ("op", "create"),
                ("name", "Eve"),
                ("email", "eve@example.com"),
                ("password", "another long phrase"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let listed = app
        .get(&alice, &format!("/v1/orgs/{org}/members?search=eve"))
        .await
        .expect(200);
    assert_eq!(listed["items"][0]["role"], "read", "{listed}");

    // Removing Bob takes the organization away from him.
    let p = a
        .post(
            &members,
            &[
                ("csrf", &token),
                ("op", "remove"),
                ("user", bob.id.as_str()),
            ],
        )
        .await;
    assert_eq!(p.status, 303);
    assert_eq!(b.get(&format!("/o/{org}")).await.status, 404);
}

#[tokio::test]
async fn space_settings_are_changed_and_a_deleted_space_is_restored_in_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Keepers").await;
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    let space = app.space(&alice, &org, "Handbook", None).await;
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    let settings = format!("/s/{space}/~/settings");

    // An editor changes the title and emoji, but is offered neither visibility nor delete,
    // and a forged visibility change is ignored for them.
    let seen = b.get(&settings).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    assert!(!seen.html.contains("name=\"role\""));
    assert!(!seen.html.contains("Delete the space"));
    let token = csrf(&seen.html);
    let p = b
        .post(
            &settings,
            &[
                ("csrf", &token),
                ("op", "save"),
                ("subject", "Team handbook"),
                ("emoji", "📘"),
                ("role", "public"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let got = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    assert_eq!(got["title"], "Team handbook");
    assert_eq!(got["emoji"], "1f4d8");
    assert_eq!(got["visibility"], "private");
    // The emoji emptied is removed.
    let p = b
        .post(
            &settings,
            &[
                ("csrf", &token),
                ("op", "save"),
                ("subject", "Team handbook"),
                ("emoji", ""),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let got = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    assert!(
        got.get("emoji").is_none_or(|e| e.is_null() || e == ""),
        "{got}"
    );
    let p = b
        .post(
            &settings,
            &[("csrf", &token), ("op", "delete"), ("confirm", "yes")],
        )
        .await;
    assert_eq!(p.status, 403, "{}", p.html);

    // The admin locks the space and makes it public; then deletes it, with the confirmation.
    let seen = a.get(&settings).await;
    assert!(seen.html.contains("Delete the space"));
    let token = csrf(&seen.html);
    let p = a
        .post(
            &settings,
            &[
                ("csrf", &token),
                ("op", "save"),
                ("subject", "Team handbook"),
                ("status", "locked"),
                ("role", "public"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let got = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    assert_eq!(got["editMode"], "locked");
    assert_eq!(got["visibility"], "public");
    let p = a
        .post(&settings, &[("csrf", &token), ("op", "delete")])
        .await;
    assert_eq!(p.status, 400, "{}", p.html);
    let p = a
        .post(
            &settings,
            &[("csrf", &token), ("op", "delete"), ("confirm", "yes")],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(p.location.as_deref(), Some(format!("/o/{org}").as_str()));
    assert_eq!(b.get(&format!("/s/{space}")).await.status, 404);
    assert_eq!(b.get(&settings).await.status, 404);

    // The organization lists it as recently deleted for its admin, who restores it.
    let home = a.get(&format!("/o/{org}")).await;
    assert!(home.html.contains("Recently deleted"), "{}", home.html);
    let seen = a.get(&settings).await;
    assert!(seen.html.contains("Restore the space"), "{}", seen.html);
    let p = a
        .post(&settings, &[("csrf", &token), ("op", "restore")])
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(b.get(&format!("/s/{space}")).await.status, 200);
}

#[tokio::test]
async fn the_history_lists_the_main_line_and_a_revision_shows_its_changes() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Historians").await;
    let space = app.space(&alice, &org, "Chronicle", None).await;
    for (subject, text) in [("First", "One.\n"), ("Second", "Two.\n")] {
        let cr = app.open_change_request(&alice, &space, subject).await;
        let change = if subject == "First" {
            json!({ "operation": "insert_page", "title": "Intro", "document": { "markdown": text } })
        } else {
            let pages = app
                .get(&alice, &format!("/v1/spaces/{space}/content/pages"))
                .await
                .expect(200);
            json!({ "operation": "update_page", "page": pages["pages"][0]["id"], "document": { "markdown": text } })
        };
        app.post(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
            json!({ "changes": [change] }),
        )
        .await
        .expect(200);
        app.merge_change_request(&alice, &space, &cr).await;
    }
    let mut a = signed_in(&app, &["alice"]).await.pop().unwrap();
    let seen = a.get(&format!("/s/{space}/~/revisions")).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    assert_eq!(
        seen.html.matches("Merged a change request").count(),
        2,
        "{}",
        seen.html
    );
    assert!(seen.html.contains("by alice"), "{}", seen.html);
    assert!(seen.html.contains(" · current"));
    // The same history is the space's repository.
    assert!(
        seen.html.contains(&format!(
            "<code>git clone {}/git/{space}.git</code>",
            app.base
        )),
        "{}",
        seen.html
    );
    let current = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    let rev = current["revision"].as_str().unwrap();
    let seen = a.get(&format!("/s/{space}/~/revisions/{rev}")).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    assert!(
        seen.html.contains("<strong>Edited</strong> Intro"),
        "{}",
        seen.html
    );
    assert!(
        seen.html.contains("Removed: </span><mark>One.</mark>"),
        "{}",
        seen.html
    );
    assert!(
        seen.html.contains("Added: </span><mark>Two.</mark>"),
        "{}",
        seen.html
    );
    let older = a.get(&format!("/s/{space}/~/revisions/{rev}/older")).await;
    assert_eq!(older.status, 200);
    assert_eq!(
        a.get(&format!("/s/{space}/~/revisions/nope")).await.status,
        404
    );
}

#[tokio::test]
async fn space_admins_give_and_take_access_in_the_app_and_it_takes_effect() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Sharers").await;
    app.add_member(&alice, &org, &bob, json!(null)).await;
    let space = app.space(&alice, &org, "Private notes", None).await;
    let team = app
        .put(
            &alice,
            &format!("/v1/orgs/{org}/teams"),
            json!({ "title": "Writers" }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    let share = format!("/s/{space}/~/share");
    // Bob, a guest, cannot read the space yet.
    assert_eq!(b.get(&format!("/s/{space}")).await.status, 404);

    let seen = a.get(&share).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    assert!(seen.html.contains("No permission given"));
    assert!(seen.html.contains("Writers"));
    let token = csrf(&seen.html);
    let p = a
        .post(
            &share,
            &[
                ("csrf", &token),
                ("op", "grant-user"),
                ("user", bob.id.as_str()),
                ("role", "comment"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let p = a
        .post(
            &share,
            &[
                ("csrf", &token),
                ("op", "grant-team"),
                ("user", &team),
                ("role", "read"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let listed = app
        .get(&alice, &format!("/v1/spaces/{space}/permissions/users"))
        .await
        .expect(200);
    assert_eq!(listed["items"][0]["permission"], "comment", "{listed}");
    let teams = app
        .get(&alice, &format!("/v1/spaces/{space}/permissions/teams"))
        .await
        .expect(200);
    assert_eq!(teams["count"], 1, "{teams}");
    // Bob now reads the space and may comment, as the API says.
    let seen = b.get(&format!("/s/{space}")).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    // A guest sees no one else's access; changing it is refused.
    assert_eq!(b.get(&share).await.status, 403);

    // The admin raises Bob to edit, then takes his access away.
    let p = a
        .post(
            &share,
            &[
                ("csrf", &token),
                ("op", "set-user"),
                ("user", bob.id.as_str()),
                ("role", "edit"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let got = app
        .get(&bob, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    assert_eq!(got["permissions"]["edit"], true, "{got}");
    let p = a
        .post(
            &share,
            &[
                ("csrf", &token),
                ("op", "remove-user"),
                ("user", bob.id.as_str()),
            ],
        )
        .await;
    assert_eq!(p.status, 303);
    assert_eq!(b.get(&format!("/s/{space}")).await.status, 404);
    // A bad role is refused with its field named.
    let p = a
        .post(
            &share,
            &[
                ("csrf", &token),
                ("op", "grant-user"),
                ("user", bob.id.as_str()),
                ("role", "owner"),
            ],
        )
        .await;
    assert_eq!(p.status, 400);
    assert!(p.html.contains("`role`"));
}

#[tokio::test]
async fn teams_are_made_and_staffed_in_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Guilds").await;
    app.add_member(&alice, &org, &bob, json!("read")).await;
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    let teams = format!("/o/{org}/teams");

    let seen = a.get(&teams).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    let token = csrf(&seen.html);
    let p = a
        .post(
            &teams,
            &[("csrf", &token), ("op", "create"), ("title", "Editors")],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let listed = app
        .get(&alice, &format!("/v1/orgs/{org}/teams"))
        .await
        .expect(200);
    let team = listed["items"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(listed["items"][0]["title"], "Editors");

    // Bob, a plain member, sees the team but may not staff it.
    let seen = b.get(&teams).await;
    assert!(seen.html.contains("Editors"));
    assert!(!seen.html.contains("Add a member"));
    let bt = csrf(&seen.html);
    let p = b
        .post(
            &teams,
            &[
                ("csrf", &bt),
                ("op", "join"),
                ("team", &team),
                ("user", bob.id.as_str()),
            ],
        )
        .await;
    assert_eq!(p.status, 403, "{}", p.html);

    // The admin adds Bob as an owner; then Bob, an owner, may remove himself.
    let p = a
        .post(
            &teams,
            &[
                ("csrf", &token),
                ("op", "join"),
                ("team", &team),
                ("user", bob.id.as_str()),
                ("owner", "yes"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let members = app
        .get(&alice, &format!("/v1/orgs/{org}/teams/{team}/members"))
        .await
        .expect(200);
    assert_eq!(members["items"][0]["team"]["role"], "owner", "{members}");
    assert!(b.get(&teams).await.html.contains("Add a member"));
    let p = b
        .post(
            &teams,
            &[
                ("csrf", &bt),
                ("op", "leave"),
                ("team", &team),
                ("user", bob.id.as_str()),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    // Deleting is for admins.
    let p = b
        .post(&teams, &[("csrf", &bt), ("op", "delete"), ("team", &team)])
        .await;
    assert_eq!(p.status, 403);
    let p = a
        .post(
            &teams,
            &[("csrf", &token), ("op", "delete"), ("team", &team)],
        )
        .await;
    assert_eq!(p.status, 303);
    let listed = app
        .get(&alice, &format!("/v1/orgs/{org}/teams"))
        .await
        .expect(200);
    assert_eq!(listed["count"], 0);
}

#[tokio::test]
async fn collection_admins_share_and_move_collections_in_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Shelves").await;
    app.add_member(&alice, &org, &bob, json!("read")).await;
    let outer = app.collection(&alice, &org, "Outer", None).await;
    let inner = app.collection(&alice, &org, "Inner", Some(&outer)).await;
    let moving = app.collection(&alice, &org, "Moving", None).await;
    let space = app.space(&alice, &org, "Handbook", Some(&moving)).await;
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    let role_of_bob = || async {
        app.get(&bob, &format!("/v1/spaces/{space}"))
            .await
            .expect(200)["permissions"]["edit"]
            .clone()
    };
    assert_eq!(role_of_bob().await, json!(false));

    // Sharing: Bob gets `edit` on the collection, which its space inherits.
    let share = format!("/c/{moving}/~/share");
    let screen = a.get(&format!("/c/{moving}")).await;
    assert!(
        screen.html.contains(&format!("href=\"{share}\"")),
        "{}",
        screen.html
    );
    let seen = a.get(&share).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    assert!(seen
        .html
        .contains("No permission given on this collection alone"));
    let token = csrf(&seen.html);
    let p = a
        .post(
            &share,
            &[
                ("csrf", &token),
                ("op", "grant-user"),
                ("user", &bob.id),
                ("role", "edit"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(role_of_bob().await, json!(true));
    assert!(a
        .get(&share)
        .await
        .html
        .contains(&format!("data-grant=\"{}\"", bob.id)));
    // Bob, a reader, sees who has access but gets no form, and a forged one is refused.
    let seen = b.get(&share).await;
    assert_eq!(seen.status, 200);
    assert!(!seen.html.contains("Give access"));
    let bt = csrf(&b.get(&format!("/c/{moving}")).await.html);
    let forged = b
        .post(
            &share,
            &[("csrf", &bt), ("op", "remove-user"), ("user", &bob.id)],
        )
        .await;
    assert_eq!(forged.status, 403, "{}", forged.html);
    let p = a
        .post(
            &share,
            &[("csrf", &token), ("op", "remove-user"), ("user", &bob.id)],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(role_of_bob().await, json!(false));

    // Moving: into Inner; never into itself or below it (not offered, and refused).
    let here = format!("/c/{moving}");
    let seen = a.get(&here).await;
    assert!(seen.html.contains(&format!("<option value=\"{inner}\"")));
    assert!(!seen.html.contains(&format!("<option value=\"{moving}\"")));
    let p = a
        .post(
            &here,
            &[("csrf", &token), ("op", "move"), ("parent", &inner)],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let got = app
        .get(&alice, &format!("/v1/collections/{moving}"))
        .await
        .expect(200);
    assert_eq!(got["parent"], inner.as_str(), "{got}");
    let outer_screen = format!("/c/{outer}");
    let outer_token = csrf(&a.get(&outer_screen).await.html);
    let p = a
        .post(
            &outer_screen,
            &[("csrf", &outer_token), ("op", "move"), ("parent", &moving)],
        )
        .await;
    assert_eq!(p.status, 400, "{}", p.html);
    assert!(p.html.contains("itself or its descendants"), "{}", p.html);
    // And back to the organization's root.
    let p = a
        .post(&here, &[("csrf", &token), ("op", "move"), ("parent", "")])
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let got = app
        .get(&alice, &format!("/v1/collections/{moving}"))
        .await
        .expect(200);
    assert!(got["parent"].is_null(), "{got}");
}

#[tokio::test]
async fn spaces_and_collections_are_made_and_moved_in_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Makers").await;
    app.add_member(&alice, &org, &bob, json!("read")).await;
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    let home = format!("/o/{org}");

    // A reader is offered no form, and a forged one is refused.
    let seen = b.get(&home).await;
    assert!(!seen.html.contains("New space"));
    let bt = csrf(&seen.html);
    let p = b
        .post(
            &home,
            &[("csrf", &bt), ("op", "space"), ("subject", "Mine")],
        )
        .await;
    assert_eq!(p.status, 403, "{}", p.html);

    // The admin makes a collection, then a space in it, then a space at the root.
    let seen = a.get(&home).await;
    assert!(seen.html.contains("New collection"), "{}", seen.html);
    let token = csrf(&seen.html);
    let p = a
        .post(
            &home,
            &[
                ("csrf", &token),
                ("op", "collection"),
                ("subject", "Guides"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let coll_path = p.location.unwrap();
    let coll = coll_path.trim_start_matches("/c/").to_string();
    let seen = a.get(&coll_path).await;
    assert!(seen.html.contains("New space"), "{}", seen.html);
    let p = a
        .post(
            &home,
            &[
                ("csrf", &token),
                ("op", "space"),
                ("subject", "Setup guide"),
                ("parent", &coll),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let space = p.location.unwrap().trim_start_matches("/s/").to_string();
    let got = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    assert_eq!(got["title"], "Setup guide");
    assert_eq!(got["parent"], coll.as_str(), "{got}");
    assert!(a.get(&coll_path).await.html.contains("Setup guide"));

    // Moved out to the organization from its settings.
    let settings = format!("/s/{space}/~/settings");
    assert!(a.get(&settings).await.html.contains("Collection"));
    let p = a
        .post(
            &settings,
            &[("csrf", &token), ("op", "move"), ("parent", "")],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let got = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    assert!(got.get("parent").is_none_or(|p| p.is_null()), "{got}");
    // An empty title is a space still: the API allows it; a too long one is refused.
    let long = "x".repeat(60);
    let p = a
        .post(
            &home,
            &[("csrf", &token), ("op", "space"), ("subject", &long)],
        )
        .await;
    assert_eq!(p.status, 400);
    assert!(p.html.contains("`title`"), "{}", p.html);

    // The collection's settings: renamed and described by its admin, then deleted, its space
    // moved up; a reader is offered neither, and a forged change is refused.
    let p = a
        .post(
            &settings,
            &[("csrf", &token), ("op", "move"), ("parent", &coll)],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert!(a
        .get(&coll_path)
        .await
        .html
        .contains("Delete this collection"));
    assert!(!b
        .get(&coll_path)
        .await
        .html
        .contains("Delete this collection"));
    let p = b
        .post(
            &coll_path,
            &[("csrf", &bt), ("op", "settings"), ("title", "Mine")],
        )
        .await;
    assert_eq!(p.status, 403, "{}", p.html);
    let p = a
        .post(
            &coll_path,
            &[
                ("csrf", &token),
                ("op", "settings"),
                ("title", "Handbooks"),
                ("description", "How we work"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let got = app
        .get(&alice, &format!("/v1/collections/{coll}"))
        .await
        .expect(200);
    assert_eq!(got["title"], "Handbooks", "{got}");
    assert_eq!(got["description"], "How we work", "{got}");
    let p = a
        .post(&coll_path, &[("csrf", &token), ("op", "delete")])
        .await;
    assert_eq!(p.status, 400, "{}", p.html);
    assert!(p.html.contains("`confirm`"), "{}", p.html);
    let p = a
        .post(
            &coll_path,
            &[("csrf", &token), ("op", "delete"), ("confirm", "yes")],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(p.location.as_deref(), Some(home.as_str()));
    app.get(&alice, &format!("/v1/collections/{coll}"))
        .await
        .expect(404);
    let got = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    assert!(got.get("parent").is_none_or(|p| p.is_null()), "{got}");
}

#[tokio::test]
async fn admins_create_fill_and_publish_a_site_in_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Publishers").await;
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    let guide = app.space(&alice, &org, "Guide", None).await;
    let cr = app.open_change_request(&alice, &guide, "Start").await;
    app.edit_change_request(
        &alice,
        &guide,
        &cr,
        json!([{ "operation": "insert_page", "title": "Start", "document": { "markdown": "Hello." } }]),
    )
    .await;
    app.merge_change_request(&alice, &guide, &cr).await;
    let api = app.space(&alice, &org, "Reference", None).await;
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    let home = format!("/o/{org}");

    // An editor sees the sites but no form; a forged creation is refused.
    let seen = b.get(&home).await;
    assert!(seen.html.contains("No docs site yet"), "{}", seen.html);
    assert!(!seen.html.contains("New site"));
    let bt = csrf(&seen.html);
    let p = b
        .post(
            &format!("{home}/sites"),
            &[("csrf", &bt), ("op", "create"), ("subject", "Docs")],
        )
        .await;
    assert_eq!(p.status, 403, "{}", p.html);

    let seen = a.get(&home).await;
    assert!(seen.html.contains("New site"));
    let token = csrf(&seen.html);
    let p = a
        .post(
            &format!("{home}/sites"),
            &[
                ("csrf", &token),
                ("op", "create"),
                ("subject", "Docs"),
                ("spaces", &guide),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let site_path = p.location.unwrap();
    let site = site_path.rsplit('/').next().unwrap().to_string();
    let seen = a.get(&site_path).await;
    assert!(seen.html.contains("Not published"), "{}", seen.html);
    assert!(seen.html.contains("Guide"));
    let p = a
        .post(
            &site_path,
            &[("csrf", &token), ("op", "add"), ("parent", &api)],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let p = a
        .post(&site_path, &[("csrf", &token), ("op", "publish")])
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let got = app
        .get(&alice, &format!("/v1/orgs/{org}/sites/{site}"))
        .await
        .expect(200);
    assert_eq!(got["published"], true, "{got}");
    let spaces = app
        .get(&alice, &format!("/v1/orgs/{org}/sites/{site}/site-spaces"))
        .await
        .expect(200);
    assert_eq!(spaces["items"].as_array().unwrap().len(), 2, "{spaces}");
    // On a site without sections, the space a visitor lands on is chosen in the app.
    let second = spaces["items"][1]["id"].as_str().unwrap().to_string();
    assert_eq!(spaces["items"][1]["default"], false, "{spaces}");
    let p = a
        .post(
            &site_path,
            &[
                ("csrf", &token),
                ("op", "site-space-default"),
                ("item", &second),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let spaces = app
        .get(&alice, &format!("/v1/orgs/{org}/sites/{site}/site-spaces"))
        .await
        .expect(200);
    let default: Vec<&serde_json::Value> = spaces["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["default"] == true)
        .map(|x| &x["id"])
        .collect();
    assert_eq!(default, [&json!(second)], "{spaces}");
    let first = spaces["items"][0]["id"].as_str().unwrap().to_string();
    let p = a
        .post(
            &site_path,
            &[
                ("csrf", &token),
                ("op", "site-space-default"),
                ("item", &first),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let seen = b.get(&site_path).await;
    assert!(
        seen.html.contains("Open the published site"),
        "{}",
        seen.html
    );
    assert!(!seen.html.contains("Unpublish"));
    let p = b
        .post(&site_path, &[("csrf", &bt), ("op", "unpublish")])
        .await;
    assert_eq!(p.status, 403);

    // Who reads it: a share-link site, opened by a link made in the app.
    let p = a
        .post(
            &site_path,
            &[
                ("csrf", &token),
                ("op", "visibility"),
                ("visibility", "share-link"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let p = a
        .post(
            &site_path,
            &[
                ("csrf", &token),
                ("op", "link-create"),
                ("subject", "Partners"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let got = app
        .get(&alice, &format!("/v1/orgs/{org}/sites/{site}"))
        .await
        .expect(200);
    assert_eq!(got["visibility"], "share-link", "{got}");
    let links = app
        .get(&alice, &format!("/v1/orgs/{org}/sites/{site}/share-links"))
        .await
        .expect(200);
    let link = &links["items"][0];
    assert_eq!(link["name"], "Partners", "{links}");
    let shared = link["urls"]["published"].as_str().unwrap().to_string();
    let seen = a.get(&site_path).await;
    assert!(seen.html.contains(&shared), "the link's address is shown");
    let status = |url: String| async move { reqwest::get(url).await.unwrap().status().as_u16() };
    let open = got["urls"]["published"].as_str().unwrap().to_string();
    assert_eq!(status(open.clone()).await, 404, "no key, no site");
    assert_eq!(status(shared.clone()).await, 200);
    // An editor may not touch the links; a bad visibility is named.
    let link_id = link["id"].as_str().unwrap();
    let p = b
        .post(
            &site_path,
            &[("csrf", &bt), ("op", "link-off"), ("link", link_id)],
        )
        .await;
    assert_eq!(p.status, 403, "{}", p.html);
    let p = a
        .post(
            &site_path,
            &[
                ("csrf", &token),
                ("op", "visibility"),
                ("visibility", "secret"),
            ],
        )
        .await;
    assert_eq!(p.status, 400, "{}", p.html);
    assert!(p.html.contains("visibility"), "{}", p.html);
    let p = a
        .post(
            &site_path,
            &[("csrf", &token), ("op", "link-off"), ("link", link_id)],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(
        status(shared.clone()).await,
        404,
        "an inactive link opens nothing"
    );
    let p = a
        .post(
            &site_path,
            &[("csrf", &token), ("op", "link-delete"), ("link", link_id)],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let links = app
        .get(&alice, &format!("/v1/orgs/{org}/sites/{site}/share-links"))
        .await
        .expect(200);
    assert_eq!(links["items"], json!([]));

    // A visitor-auth site shows its admins the key that signs its visitor tokens, and makes a
    // new one.
    let p = a
        .post(
            &site_path,
            &[
                ("csrf", &token),
                ("op", "visibility"),
                ("visibility", "visitor-auth"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let auth = format!("/v1/orgs/{org}/sites/{site}/publishing/auth");
    let key = app.get(&alice, &auth).await.expect(200)["privateKey"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(a.get(&site_path).await.html.contains(&key));
    assert!(
        !b.get(&site_path).await.html.contains(&key),
        "not to editors"
    );
    let p = b
        .post(&site_path, &[("csrf", &bt), ("op", "regenerate-key")])
        .await;
    assert_eq!(p.status, 403, "{}", p.html);
    let p = a
        .post(&site_path, &[("csrf", &token), ("op", "regenerate-key")])
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let new_key = app.get(&alice, &auth).await.expect(200)["privateKey"].clone();
    assert_ne!(new_key, json!(key));

    let p = a
        .post(&site_path, &[("csrf", &token), ("op", "unpublish")])
        .await;
    assert_eq!(p.status, 303);
    assert!(a.get(&site_path).await.html.contains("Not published"));
}

/// A site's structure as the API answers it, in short: each group `G(...)`, each section
/// `Title[space, ...]` (`*` for the default one), in order.
fn outline(structure: &serde_json::Value) -> String {
    fn section(x: &serde_json::Value) -> String {
        let spaces: Vec<&str> = x["siteSpaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|ss| ss["space"]["title"].as_str().unwrap())
            .collect();
        format!(
            "{}{}[{}]",
            x["title"].as_str().unwrap(),
            if x["default"] == true { "*" } else { "" },
            spaces.join(",")
        )
    }
    assert_eq!(structure["type"], "sections", "{structure}");
    structure["structure"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| match item["object"].as_str() {
            Some("site-section-group") => format!(
                "{}({})",
                item["title"].as_str().unwrap(),
                item["sections"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(section)
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            _ => section(item),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[tokio::test]
async fn admins_arrange_a_sites_sections_groups_and_look_in_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Publishers").await;
    app.add_member(&alice, &org, &bob, json!("read")).await;
    let guide = app.space(&alice, &org, "Guide", None).await;
    let reference = app.space(&alice, &org, "Reference", None).await;
    let changes = app.space(&alice, &org, "Changes <b>log</b>", None).await;
    let api = format!("/v1/orgs/{org}/sites");
    let site = app
        .post(&alice, &api, json!({ "title": "Docs", "spaces": [guide] }))
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let api = format!("{api}/{site}");
    let structure = || async {
        app.get(&alice, &format!("{api}/structure"))
            .await
            .expect(200)
    };
    let section_id = |s: &serde_json::Value, title: &str| -> String {
        let mut all: Vec<serde_json::Value> = Vec::new();
        for item in s["structure"].as_array().unwrap() {
            match item["sections"].as_array() {
                Some(inner) => all.extend(inner.iter().cloned()),
                None => all.push(item.clone()),
            }
        }
        all.iter()
            .find(|x| x["title"] == title)
            .unwrap_or_else(|| panic!("no section {title}: {s}"))["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    let here = format!("/o/{org}/sites/{site}");
    let seen = a.get(&here).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    assert!(seen.html.contains("New section"), "{}", seen.html);
    let token = csrf(&seen.html);
    let post = |op: &'static str, extra: Vec<(&'static str, String)>| {
        let mut form: Vec<(&str, String)> = vec![("csrf", token.clone()), ("op", op.into())];
        form.extend(extra);
        form
    };
    async fn send(br: &mut Browser, path: &str, form: Vec<(&str, String)>) -> Page {
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        br.post(path, &form).await
    }

    // A space becomes a section; the spaces already there move into a first one.
    let p = send(
        &mut a,
        &here,
        post(
            "section-add",
            vec![("parent", reference.clone()), ("subject", "API".into())],
        ),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let s = structure().await;
    assert_eq!(outline(&s), "Docs*[Guide] API[Reference]");
    let api_section = section_id(&s, "API");
    let docs_section = section_id(&s, "Docs");
    // A space goes into the section chosen, a title left empty is the space's.
    let p = send(
        &mut a,
        &here,
        post(
            "add",
            vec![
                ("parent", changes.clone()),
                ("section", api_section.clone()),
            ],
        ),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let p = send(
        &mut a,
        &here,
        post(
            "section-add",
            vec![("parent", changes.clone()), ("subject", " ".into())],
        ),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let s = structure().await;
    assert_eq!(
        outline(&s),
        "Docs*[Guide] API[Reference,Changes <b>log</b>] Changes <b>log</b>[Changes <b>log</b>]"
    );
    let log_section = section_id(&s, "Changes <b>log</b>");

    // Rename (the title alone sent: nothing else changes), make default, group, regroup,
    // ungroup, delete the group, remove a section.
    let p = send(
        &mut a,
        &here,
        post(
            "section-edit",
            vec![
                ("section", api_section.clone()),
                ("subject", "Reference".into()),
            ],
        ),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let p = send(
        &mut a,
        &here,
        post("section-default", vec![("section", api_section.clone())]),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let p = send(
        &mut a,
        &here,
        post("group-add", vec![("subject", "More".into())]),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let s = structure().await;
    let group = s["structure"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["object"] == "site-section-group")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    for section in [&docs_section, &log_section] {
        let p = send(
            &mut a,
            &here,
            post(
                "section-group",
                vec![("section", section.to_string()), ("group", group.clone())],
            ),
        )
        .await;
        assert_eq!(p.status, 303, "{}", p.html);
    }
    let p = send(
        &mut a,
        &here,
        post(
            "group-rename",
            vec![("group", group.clone()), ("subject", "Also".into())],
        ),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(
        outline(&structure().await),
        "Reference*[Reference,Changes <b>log</b>] Also(Docs[Guide] Changes <b>log</b>[Changes <b>log</b>])"
    );
    // The screen shows it, every title escaped.
    let seen = a.get(&here).await;
    assert!(seen.html.contains("Changes &lt;b&gt;log&lt;/b&gt;"));
    assert!(!seen.html.contains("<b>log"), "{}", seen.html);
    assert!(seen.html.contains("Also"), "{}", seen.html);
    let p = send(
        &mut a,
        &here,
        post(
            "section-group",
            vec![("section", docs_section.clone()), ("group", String::new())],
        ),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(
        outline(&structure().await),
        "Reference*[Reference,Changes <b>log</b>] Also(Changes <b>log</b>[Changes <b>log</b>]) Docs[Guide]"
    );
    let p = send(
        &mut a,
        &here,
        post("group-delete", vec![("group", group.clone())]),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let p = send(
        &mut a,
        &here,
        post("section-remove", vec![("section", log_section.clone())]),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(
        outline(&structure().await),
        "Reference*[Reference,Changes <b>log</b>] Docs[Guide]"
    );

    let reference_section = structure().await["structure"][0].clone();
    assert_eq!(reference_section["path"], "api", "{reference_section}");
    assert!(
        reference_section.get("icon").is_none(),
        "{reference_section}"
    );

    // A section's settings: path, icon, description, condition and the space a visitor
    // lands on; a field sent blank clears it.
    let seen = a.get(&here).await;
    assert!(seen.html.contains("name=\"defaultspace\""), "{}", seen.html);
    let site_space = |s: &serde_json::Value, section: usize, i: usize| -> String {
        s["structure"][section]["siteSpaces"][i]["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let s = structure().await;
    let log_space = site_space(&s, 0, 1);
    let settings = |icon: &str, description: &str, condition: &str| {
        post(
            "section-edit",
            vec![
                ("section", api_section.clone()),
                ("subject", "Reference".into()),
                ("path", "reference".into()),
                ("icon", icon.into()),
                ("description", description.into()),
                ("condition", condition.into()),
                ("defaultspace", log_space.clone()),
            ],
        )
    };
    let p = send(
        &mut a,
        &here,
        settings("book", "Every <endpoint>", "visitor.claims.pro === true"),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let x = structure().await["structure"][0].clone();
    assert_eq!(x["path"], "reference", "{x}");
    assert_eq!(x["icon"], "book", "{x}");
    assert_eq!(x["description"], "Every <endpoint>", "{x}");
    assert_eq!(x["condition"], "visitor.claims.pro === true", "{x}");
    assert_eq!(x["siteSpaces"][1]["id"], json!(log_space), "{x}");
    assert_eq!(x["siteSpaces"][1]["default"], true, "{x}");
    let seen = a.get(&here).await;
    assert!(
        seen.html.contains("value=\"Every &lt;endpoint&gt;\""),
        "{}",
        seen.html
    );
    let p = send(&mut a, &here, settings("", " ", "")).await;
    assert_eq!(p.status, 303, "{}", p.html);
    let x = structure().await["structure"][0].clone();
    for cleared in ["icon", "description", "condition"] {
        assert!(x.get(cleared).is_none(), "{cleared}: {x}");
    }
    assert_eq!(x["path"], "reference", "{x}");

    // A site space's path and condition, moving it, taking it off the site.
    let p = send(
        &mut a,
        &here,
        post(
            "site-space-edit",
            vec![
                ("item", log_space.clone()),
                ("path", "changelog".into()),
                ("condition", "visitor.claims.beta === true".into()),
            ],
        ),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let x = structure().await["structure"][0]["siteSpaces"][1].clone();
    assert_eq!(x["path"], "changelog", "{x}");
    assert_eq!(x["condition"], "visitor.claims.beta === true", "{x}");
    let moved = |kind: &str, id: &str, up: bool| {
        post(
            if up { "move-up" } else { "move-down" },
            vec![("kind", kind.into()), ("item", id.into())],
        )
    };
    let p = send(&mut a, &here, moved("site-space", &log_space, true)).await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(
        outline(&structure().await),
        "Reference*[Changes <b>log</b>,Reference] Docs[Guide]"
    );
    // At the edge, nothing moves.
    let p = send(&mut a, &here, moved("site-space", &log_space, true)).await;
    assert_eq!(p.status, 303, "{}", p.html);
    let p = send(&mut a, &here, moved("site-section", &docs_section, true)).await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(
        outline(&structure().await),
        "Docs[Guide] Reference*[Changes <b>log</b>,Reference]"
    );
    let p = send(&mut a, &here, moved("site-section", &docs_section, false)).await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(
        outline(&structure().await),
        "Reference*[Changes <b>log</b>,Reference] Docs[Guide]"
    );
    // The screen offers a step only where there is one.
    let seen = a.get(&here).await;
    assert_eq!(
        seen.html.matches("name=\"op\" value=\"move-up\"").count(),
        2,
        "{}",
        seen.html
    );
    assert_eq!(
        seen.html.matches("name=\"op\" value=\"move-down\"").count(),
        2,
        "{}",
        seen.html
    );
    let p = send(
        &mut a,
        &here,
        post(
            "site-space-remove",
            vec![("kind", "site-space".into()), ("item", log_space.clone())],
        ),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(
        outline(&structure().await),
        "Reference*[Reference] Docs[Guide]"
    );

    // The API's rules and messages: a short title, a blank path, a path taken, a condition
    // that does not parse, an unknown type of item, an unknown section.
    let p = send(
        &mut a,
        &here,
        post(
            "section-edit",
            vec![("section", docs_section.clone()), ("subject", "D".into())],
        ),
    )
    .await;
    assert_eq!(p.status, 400, "{}", p.html);
    assert!(p.html.contains("`title`"), "{}", p.html);
    for (path, status) in [(" ", 400), ("reference", 409)] {
        let p = send(
            &mut a,
            &here,
            post(
                "section-edit",
                vec![("section", docs_section.clone()), ("path", path.into())],
            ),
        )
        .await;
        assert_eq!(p.status, status, "{}", p.html);
        assert!(p.html.contains("`path`"), "{}", p.html);
    }
    let p = send(
        &mut a,
        &here,
        post(
            "section-edit",
            vec![
                ("section", docs_section.clone()),
                ("condition", "visitor.(".into()),
            ],
        ),
    )
    .await;
    assert_eq!(p.status, 400, "{}", p.html);
    assert!(p.html.contains("`condition`"), "{}", p.html);
    let p = send(&mut a, &here, moved("page", &docs_section, true)).await;
    assert_eq!(p.status, 400, "{}", p.html);
    assert!(p.html.contains("`kind`"), "{}", p.html);
    let p = send(
        &mut a,
        &here,
        post("section-default", vec![("section", "nope".into())]),
    )
    .await;
    assert_eq!(p.status, 400, "{}", p.html);
    assert!(p.html.contains("no section `nope`"), "{}", p.html);

    // The look: title, primary colour, theme and font, the rest kept.
    app.put(
        &alice,
        &format!("{api}/customization"),
        json!({ "footer": { "groups": [], "copyright": "Kept" } }),
    )
    .await
    .expect(200);
    let p = send(
        &mut a,
        &here,
        post(
            "customize",
            vec![
                ("subject", "Docs & more".into()),
                ("light", "#112233".into()),
                ("dark", "#445566".into()),
                ("theme", "dark".into()),
                ("font", "Lato".into()),
            ],
        ),
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let c = app
        .get(&alice, &format!("{api}/customization"))
        .await
        .expect(200);
    assert_eq!(c["title"], "Docs & more", "{c}");
    assert_eq!(c["styling"]["primaryColor"]["light"], "#112233", "{c}");
    assert_eq!(c["styling"]["primaryColor"]["dark"], "#445566", "{c}");
    assert_eq!(c["themes"]["default"], "dark", "{c}");
    assert_eq!(c["themes"]["toggeable"], true, "{c}");
    assert_eq!(c["styling"]["font"], "Lato", "{c}");
    assert_eq!(c["footer"]["copyright"], "Kept", "{c}");
    let seen = a.get(&here).await;
    assert!(
        seen.html.contains("value=\"Docs &amp; more\""),
        "{}",
        seen.html
    );
    assert!(seen.html.contains("<option value=\"Lato\" selected>"));
    let p = send(
        &mut a,
        &here,
        post(
            "customize",
            vec![
                ("subject", "Docs".into()),
                ("light", "blue".into()),
                ("dark", "#445566".into()),
            ],
        ),
    )
    .await;
    assert_eq!(p.status, 400, "{}", p.html);
    assert!(
        p.html
            .contains("`styling.primaryColor.light` must be a colour"),
        "{}",
        p.html
    );
    let p = send(
        &mut a,
        &here,
        post(
            "customize",
            vec![("subject", "Docs".into()), ("theme", "sepia".into())],
        ),
    )
    .await;
    assert_eq!(p.status, 400, "{}", p.html);
    assert!(p.html.contains("`themes.default`"), "{}", p.html);
    let c = app
        .get(&alice, &format!("{api}/customization"))
        .await
        .expect(200);
    assert_eq!(
        c["title"], "Docs & more",
        "a refused change changes nothing: {c}"
    );

    let guide_space = site_space(&structure().await, 1, 0);
    // A reader sees the structure without a form, and a forged change is refused.
    let seen = b.get(&here).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    assert!(seen.html.contains("Sections"), "{}", seen.html);
    assert!(seen.html.contains("Reference"), "{}", seen.html);
    for form in [
        "section-edit",
        "section-default",
        "site-space-edit",
        "move-up",
        "move-down",
        "group-add",
        "customize",
    ] {
        assert!(!seen.html.contains(form), "{form}: {}", seen.html);
    }
    let bt = csrf(&seen.html);
    for (op, extra) in [
        ("section-add", vec![("parent", guide.clone())]),
        ("section-remove", vec![("section", docs_section.clone())]),
        ("group-add", vec![("subject", "Mine".to_string())]),
        ("customize", vec![("subject", "Mine".to_string())]),
        ("site-space-remove", vec![("item", guide_space.clone())]),
        (
            "move-up",
            vec![
                ("kind", "site-section".to_string()),
                ("item", docs_section.clone()),
            ],
        ),
    ] {
        let mut form = vec![("csrf", bt.clone()), ("op", op.to_string())];
        form.extend(extra);
        let p = send(&mut b, &here, form).await;
        assert_eq!(p.status, 403, "{op}: {}", p.html);
        assert!(p.html.contains("Only organization admins"), "{}", p.html);
    }
    assert_eq!(
        outline(&structure().await),
        "Reference*[Reference] Docs[Guide]"
    );
    let c = app
        .get(&alice, &format!("{api}/customization"))
        .await
        .expect(200);
    assert_eq!(c["title"], "Docs & more", "{c}");
}

#[tokio::test]
async fn a_space_and_a_change_request_are_exported_as_pdf_from_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Printers").await;
    let space = app.space(&alice, &org, "Manual", None).await;
    let cr = app.open_change_request(&alice, &space, "Chapter").await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
        json!({ "changes": [{ "operation": "insert_page", "title": "Intro",
            "document": { "markdown": "Printed words.\n" } }] }),
    )
    .await
    .expect(200);
    let n = app
        .get(&alice, &format!("/v1/spaces/{space}/change-requests/{cr}"))
        .await
        .expect(200)["number"]
        .as_i64()
        .unwrap();
    let mut a = signed_in(&app, &["alice"]).await.pop().unwrap();
    for path in [
        format!("/s/{space}/~/pdf"),
        format!("/s/{space}/~/changes/{n}/pdf"),
    ] {
        let p = a.get(&path).await;
        assert_eq!(p.status, 303, "{path}: {}", p.html);
        let to = p.location.unwrap();
        assert!(to.contains(&format!("/pdf/{space}/")), "{to}");
        let url = if to.starts_with("http") {
            to
        } else {
            format!("{}{to}", app.base)
        };
        let res = reqwest::get(&url).await.unwrap();
        assert_eq!(res.status(), 200);
        let bytes = res.bytes().await.unwrap();
        assert!(bytes.starts_with(b"%PDF-"));
    }
    // Without a session, the way is to sign in first.
    let p = Browser::new(&app).get(&format!("/s/{space}/~/pdf")).await;
    assert!(p.location.unwrap().starts_with("/signin?next="));
}

#[tokio::test]
async fn reviewers_are_requested_and_change_requests_filtered_by_author_in_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let carol = app.persona("carol").await;
    let org = app.org(&alice, "Askers").await;
    app.add_member(&alice, &org, &bob, json!("review")).await;
    app.add_member(&alice, &org, &carol, json!("read")).await;
    let space = app.space(&alice, &org, "Notes", None).await;
    let mine = app
        .open_change_request(&alice, &space, "Alice's words")
        .await;
    app.open_change_request(&bob, &space, "Bob's words").await;
    // Contributors are who wrote in a change request (as the API's `contributor` filter).
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{mine}/content"),
        json!({ "changes": [{ "operation": "insert_page", "title": "Page",
            "document": { "markdown": "Words.\n" } }] }),
    )
    .await
    .expect(200);
    let n = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{mine}"),
        )
        .await
        .expect(200)["number"]
        .as_i64()
        .unwrap();
    let mut a = signed_in(&app, &["alice"]).await.pop().unwrap();
    let cr_path = format!("/s/{space}/~/changes/{n}");
    let seen = a.get(&cr_path).await;
    assert!(seen.html.contains("Ask for a review"), "{}", seen.html);
    let token = csrf(&seen.html);
    let p = a
        .post(
            &format!("{cr_path}/request"),
            &[("csrf", &token), ("user", bob.id.as_str())],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let asked = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{mine}/requested-reviewers"),
        )
        .await
        .expect(200);
    assert_eq!(asked["items"][0]["user"]["id"], bob.id.as_str(), "{asked}");
    assert!(a.get(&cr_path).await.html.contains("Waiting for: bob"));
    let p = a
        .post(
            &format!("{cr_path}/request"),
            &[("csrf", &token), ("user", carol.id.as_str())],
        )
        .await;
    assert_eq!(p.status, 400);
    assert!(p.html.contains("cannot review"), "{}", p.html);

    // A guest who may edit this space alone is not shown the organization's people.
    let dora = app.persona("dora").await;
    app.add_member(&alice, &org, &dora, json!(null)).await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/permissions"),
        json!({ "role": "edit", "users": [dora.id] }),
    )
    .await
    .expect(204);
    let mut d = signed_in(&app, &["dora"]).await.pop().unwrap();
    let seen = d.get(&cr_path).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    assert!(!seen.html.contains("Ask for a review"), "{}", seen.html);

    // "Mine" keeps the change requests Alice wrote in.
    let all = a.get(&format!("/s/{space}/~/changes")).await;
    assert!(
        all.html.contains("Bob&#39;s words") || all.html.contains("Bob's words"),
        "{}",
        all.html
    );
    let only = a
        .get(&format!("/s/{space}/~/changes?by={}", alice.id))
        .await;
    assert!(only.html.contains("Alice"), "{}", only.html);
    assert!(
        !only.html.contains("Bob&#39;s words") && !only.html.contains("Bob's words"),
        "{}",
        only.html
    );
}

/// A space's action takes its own form: one sent without a field it needs is refused with
/// 400 naming the field, after its token is checked (403 for a forged one), and changes
/// nothing.
#[tokio::test]
async fn a_space_action_without_a_field_it_needs_is_refused_naming_the_field() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Forms").await;
    let space = app.space(&alice, &org, "Notes", None).await;
    let cr = app.open_change_request(&alice, &space, "Words").await;
    let n = app
        .get(&alice, &format!("/v1/spaces/{space}/change-requests/{cr}"))
        .await
        .expect(200)["number"]
        .as_i64()
        .unwrap();
    let mut a = signed_in(&app, &["alice"]).await.pop().unwrap();
    let cr_path = format!("/s/{space}/~/changes/{n}");
    let token = csrf(&a.get(&cr_path).await.html);

    // The review's verdict, and whom a review is asked of.
    for (action, field) in [("review", "status"), ("request", "user")] {
        let p = a
            .post(&format!("{cr_path}/{action}"), &[("csrf", &token)])
            .await;
        assert_eq!(p.status, 400, "{action}: {}", p.html);
        assert!(
            p.html.contains(&format!("missing field `{field}`")),
            "{action}: {}",
            p.html
        );
        let forged = a
            .post(&format!("{cr_path}/{action}"), &[("csrf", "forged")])
            .await;
        assert_eq!(forged.status, 403, "{action}: {}", forged.html);
    }
    // A value outside the form's choices is refused too.
    let p = a
        .post(
            &format!("{cr_path}/review"),
            &[("csrf", &token), ("status", "maybe")],
        )
        .await;
    assert_eq!(p.status, 400, "{}", p.html);
    let reviews = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{cr}/reviews"),
        )
        .await
        .expect(200);
    assert_eq!(reviews["items"], json!([]), "{reviews}");
    let asked = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{cr}/requested-reviewers"),
        )
        .await
        .expect(200);
    assert_eq!(asked["items"], json!([]), "{asked}");
}

#[tokio::test]
async fn content_is_imported_into_a_space_from_the_app() {
    let app = crate::imports::app().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Importers").await;
    app.add_member(&alice, &org, &bob, json!("read")).await;
    let space = app.space(&alice, &org, "Imported", None).await;
    let base = crate::loopback::serve(|_| {
        crate::loopback::Reply::ok("text/markdown", "# Brought in\n\nFrom elsewhere.\n")
    })
    .await;
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    let import = format!("/s/{space}/~/import");
    let seen = b.get(&import).await;
    assert!(seen.html.contains("needs the edit role"), "{}", seen.html);
    let bt = csrf(&seen.html);
    let url = format!("{base}/doc.md");
    let p = b
        .post(
            &import,
            &[("csrf", &bt), ("url", &url), ("source", "markdown")],
        )
        .await;
    assert_eq!(p.status, 403, "{}", p.html);

    let seen = a.get(&import).await;
    let token = csrf(&seen.html);
    let p = a
        .post(
            &import,
            &[("csrf", &token), ("url", &url), ("source", "pdf")],
        )
        .await;
    assert_eq!(p.status, 400);
    assert!(p.html.contains("`source`"), "{}", p.html);
    let p = a
        .post(
            &import,
            &[("csrf", &token), ("url", &url), ("source", "markdown")],
        )
        .await;
    assert_eq!(p.status, 200, "{}", p.html);
    assert!(p.html.contains("were imported"), "{}", p.html);
    let pages = app
        .get(&alice, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    assert_eq!(pages["pages"][0]["title"], "Brought in", "{pages}");
    assert!(b
        .get(&format!("/s/{space}"))
        .await
        .html
        .contains("From elsewhere."));

    // Into an open change request, to review it first: the space does not move.
    let cr = app.open_change_request(&alice, &space, "Bring more").await;
    let number = app
        .get(&alice, &format!("/v1/spaces/{space}/change-requests/{cr}"))
        .await
        .expect(200)["number"]
        .to_string();
    let seen = a.get(&import).await;
    assert!(
        seen.html.contains(&format!(
            "<option value=\"{number}\">Change request #{number}: Bring more</option>"
        )),
        "{}",
        seen.html
    );
    let before = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["revision"]
        .clone();
    let p = a
        .post(
            &import,
            &[
                ("csrf", &token),
                ("url", &url),
                ("source", "markdown"),
                ("into", &number),
            ],
        )
        .await;
    assert_eq!(p.status, 200, "{}", p.html);
    assert!(
        p.html.contains(&format!("change request #{number}")),
        "{}",
        p.html
    );
    let after = app
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["revision"]
        .clone();
    assert_eq!(before, after, "the space did not move");
    let in_cr = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content/pages"),
        )
        .await
        .expect(200);
    assert_eq!(in_cr["pages"].as_array().unwrap().len(), 2, "{in_cr}");
    let p = a
        .post(
            &import,
            &[
                ("csrf", &token),
                ("url", &url),
                ("source", "markdown"),
                ("into", "999"),
            ],
        )
        .await;
    assert_eq!(p.status, 404, "{}", p.html);
}

#[tokio::test]
async fn search_answers_the_script_its_results_alone_with_the_screens_access() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Finders").await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let cr = app.open_change_request(&alice, &space, "Base").await;
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
        json!({ "changes": [
            { "operation": "insert_page", "title": "Getting started",
              "document": { "markdown": "## Install\n\nRun it and **smile**.\n" } },
            { "operation": "insert_page", "title": "Other",
              "document": { "markdown": "Nothing to see.\n" } },
        ]}),
    )
    .await
    .expect(200);
    app.merge_change_request(&alice, &space, &cr).await;
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();

    // The script: its type, never sniffed, cached like the stylesheet, small.
    let mut anyone = Browser::new(&app);
    let signin = anyone.get("/signin").await;
    let js = anyone
        .get(&asset_url(&signin.html, "<script src=\"/-/app."))
        .await;
    assert_eq!(js.status, 200);
    assert_eq!(js.headers["content-type"], "text/javascript; charset=utf-8");
    assert_eq!(js.headers["x-content-type-options"], "nosniff");
    assert_eq!(
        js.headers["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert!(js.html.contains("X-Quire-Fragment"), "{}", js.html);
    // (Reading and review screens load it alone: well under the 100 KB they may load.)
    assert!(js.html.len() < 16 * 1024, "{} bytes", js.html.len());

    // The screen: the form the script enhances, the count (a live region), the results.
    let path = format!("/s/{space}/~/search?q=smile");
    let full = a.get(&path).await;
    assert_eq!(full.status, 200);
    assert_eq!(full.csp.as_deref(), Some(APP_CSP));
    assert!(
        full.html.contains("role=\"search\" data-live>"),
        "{}",
        full.html
    );
    assert!(
        full.html.contains(&format!(
            "<p id=\"search-status\" role=\"status\">1 page matches.</p>\
<div id=\"search-results\"><ol class=\"results\"><li data-result-space=\"{space}\" data-result-page=\""
        )),
        "{}",
        full.html
    );
    // The search screen has its own box; the space's other screens one in the sidebar.
    assert!(!full.html.contains("id=\"side-q\""));
    let home = a.get(&format!("/s/{space}")).await;
    assert!(
        home.html.contains(&format!(
            "<form method=\"get\" action=\"/s/{space}/~/search\" role=\"search\">"
        )),
        "{}",
        home.html
    );
    assert!(home
        .html
        .contains("id=\"side-q\" name=\"q\" type=\"search\""));

    // Asked by the script: that region alone, exactly as on the page, with a page's headers.
    let part = a.fragment(&path).await;
    assert_eq!(part.status, 200);
    assert_eq!(part.headers["x-quire-fragment"], "results");
    assert_eq!(part.csp.as_deref(), Some(APP_CSP));
    assert_eq!(part.headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(part.headers["x-content-type-options"], "nosniff");
    assert_eq!(part.headers["cache-control"], "no-store");
    assert!(part
        .headers
        .get_all("vary")
        .iter()
        .any(|v| v == "x-quire-fragment"));
    assert!(part.html.starts_with(
        "<p id=\"search-status\" role=\"status\">1 page matches.</p><div id=\"search-results\">"
    ));
    assert!(part.html.contains(">Getting started</a>"), "{}", part.html);
    assert!(part.html.contains("<mark>smile</mark>"), "{}", part.html);
    for shell in [
        "<html", "<head", "<main", "<form", "<nav", "<script", "Sign out",
    ] {
        assert!(!part.html.contains(shell), "{shell} in {}", part.html);
    }
    assert!(full.html.contains(&part.html), "one renderer");
    let empty = a.fragment(&format!("/s/{space}/~/search?q=+")).await;
    assert_eq!(
        empty.html,
        "<p id=\"search-status\" role=\"status\"></p><div id=\"search-results\"></div>"
    );
    let long = a
        .fragment(&format!("/s/{space}/~/search?q={}", "a".repeat(600)))
        .await;
    assert!(
        long.html.contains("The query is too long."),
        "{}",
        long.html
    );
    let across = a.fragment(&format!("/o/{org}/search?q=smile")).await;
    assert_eq!(across.status, 200);
    assert_eq!(across.headers["x-quire-fragment"], "results");
    assert!(
        across.html.contains("<mark>smile</mark>"),
        "{}",
        across.html
    );
    assert!(!across.html.contains("<main"), "{}", across.html);

    // Anyone else is answered as by the screen: sent to sign in, or told it is missing;
    // never with results, never as a region the script would swap in.
    let mut anon = Browser::new(&app);
    for path in [path.clone(), format!("/o/{org}/search?q=smile")] {
        let (screen, asked) = (anon.get(&path).await, anon.fragment(&path).await);
        assert_eq!((screen.status, asked.status), (303, 303), "{path}");
        assert_eq!(asked.location, screen.location);
        assert!(asked.headers.get("x-quire-fragment").is_none());
        let (screen, asked) = (b.get(&path).await, b.fragment(&path).await);
        assert_eq!((screen.status, asked.status), (404, 404), "{path}");
        assert!(asked.headers.get("x-quire-fragment").is_none());
        assert!(!asked.html.contains("Getting started"), "{}", asked.html);
    }
    // Once a reader of the organization, Bob gets the results too.
    app.add_member(&alice, &org, &bob, json!("read")).await;
    let seen = b.fragment(&path).await;
    assert_eq!(seen.status, 200);
    assert!(seen.html.contains("<mark>smile</mark>"), "{}", seen.html);
}

#[tokio::test]
async fn an_openapi_specification_is_added_from_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Specifiers").await;
    app.add_member(&alice, &org, &bob, json!("read")).await;
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    let home = format!("/o/{org}");
    let spec = "openapi: 3.0.0\ninfo:\n  title: Pets\n  version: '1'\npaths: {}\n";

    let seen = b.get(&home).await;
    assert!(seen.html.contains("No specification yet"), "{}", seen.html);
    assert!(!seen.html.contains("Add a specification"));
    let bt = csrf(&seen.html);
    let p = b
        .post(
            &format!("{home}/openapi"),
            &[("csrf", &bt), ("slug", "pets"), ("text", spec)],
        )
        .await;
    assert_eq!(p.status, 403, "{}", p.html);

    let seen = a.get(&home).await;
    assert!(seen.html.contains("Add a specification"));
    let token = csrf(&seen.html);
    let p = a
        .post(
            &format!("{home}/openapi"),
            &[("csrf", &token), ("slug", "Pets!"), ("text", spec)],
        )
        .await;
    assert_eq!(p.status, 400);
    assert!(p.html.contains("`slug`"), "{}", p.html);
    let p = a
        .post(
            &format!("{home}/openapi"),
            &[("csrf", &token), ("slug", "pets")],
        )
        .await;
    assert_eq!(p.status, 400);
    assert!(p.html.contains("`source`"), "{}", p.html);
    let p = a
        .post(
            &format!("{home}/openapi"),
            &[("csrf", &token), ("slug", "pets"), ("text", spec)],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(
        p.location.as_deref(),
        Some(format!("/o/{org}/openapi/pets").as_str())
    );
    let got = app
        .get(&alice, &format!("/v1/orgs/{org}/openapi/pets"))
        .await
        .expect(200);
    assert_eq!(got["slug"], "pets", "{got}");
    assert!(a.get(&home).await.html.contains("/openapi/pets\">pets</a>"));
    assert_eq!(a.get(&format!("/o/{org}/openapi/pets")).await.status, 200);
    // The same slug again is a conflict, named.
    let p = a
        .post(
            &format!("{home}/openapi"),
            &[("csrf", &token), ("slug", "pets"), ("text", spec)],
        )
        .await;
    assert_eq!(p.status, 409, "{}", p.html);

    // Updated from its screen: a new source, processed into a second version.
    let run_jobs = || async {
        for _ in 0..50 {
            quire_server::domain::jobs::run_due(&app.state)
                .await
                .unwrap();
            let got = app
                .get(&alice, &format!("/v1/orgs/{org}/openapi/pets"))
                .await
                .expect(200);
            if got["processingState"] == "complete" {
                return got;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        panic!("never processed");
    };
    let first = run_jobs().await["lastVersion"].clone();
    let screen = format!("/o/{org}/openapi/pets");
    let seen = a.get(&screen).await;
    assert!(seen.html.contains("Update it"), "{}", seen.html);
    assert!(!b.get(&screen).await.html.contains("Update it"));
    let p = b.post(&screen, &[("csrf", &bt), ("text", spec)]).await;
    assert_eq!(p.status, 403, "{}", p.html);
    let p = a.post(&screen, &[("csrf", &token)]).await;
    assert_eq!(p.status, 400, "{}", p.html);
    let newer = spec.replace("version: '1'", "version: '2'");
    let p = a.post(&screen, &[("csrf", &token), ("text", &newer)]).await;
    assert_eq!(p.status, 303, "{}", p.html);
    let second = run_jobs().await["lastVersion"].clone();
    assert_ne!(first, second, "a new version");
    // Only existing specifications are updated there.
    let p = a
        .post(
            &format!("/o/{org}/openapi/ghost"),
            &[("csrf", &token), ("text", spec)],
        )
        .await;
    assert_eq!(p.status, 404, "{}", p.html);
}

#[tokio::test]
async fn a_translation_is_started_and_run_again_from_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Linguists").await;
    app.add_member(&alice, &org, &bob, json!("read")).await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    let screen = format!("/o/{org}/translations");

    let seen = b.get(&screen).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    assert!(!seen.html.contains("New translation"));
    let bt = csrf(&seen.html);
    let p = b
        .post(
            &screen,
            &[
                ("csrf", &bt),
                ("op", "create"),
                ("space", &space),
                ("from", "en"),
                ("into", "fr"),
            ],
        )
        .await;
    assert_eq!(p.status, 403, "{}", p.html);

    let seen = a.get(&screen).await;
    assert!(seen.html.contains("New translation"), "{}", seen.html);
    let token = csrf(&seen.html);
    let p = a
        .post(
            &screen,
            &[
                ("csrf", &token),
                ("op", "create"),
                ("space", &space),
                ("from", "en"),
                ("into", "en"),
            ],
        )
        .await;
    assert_eq!(p.status, 400);
    assert!(p.html.contains("`language`"), "{}", p.html);
    let p = a
        .post(
            &screen,
            &[
                ("csrf", &token),
                ("op", "create"),
                ("space", &space),
                ("from", "en"),
                ("into", "fr"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let listed = app
        .get(&alice, &format!("/v1/orgs/{org}/translations"))
        .await
        .expect(200);
    assert_eq!(listed["items"][0]["language"], "fr", "{listed}");
    assert_eq!(listed["items"][0]["source"]["space"], space.as_str());
    let id = listed["items"][0]["id"].as_str().unwrap().to_string();
    let seen = a.get(&screen).await;
    assert!(seen.html.contains("en → fr"), "{}", seen.html);
    let p = a
        .post(
            &screen,
            &[("csrf", &token), ("op", "run"), ("translation", &id)],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let p = a
        .post(
            &screen,
            &[("csrf", &token), ("op", "run"), ("translation", "nope")],
        )
        .await;
    assert_eq!(p.status, 404);
    // A form without what its `op` needs is refused, naming the field.
    let p = a
        .post(
            &screen,
            &[("csrf", &token), ("op", "create"), ("space", &space)],
        )
        .await;
    assert_eq!(p.status, 400, "{}", p.html);
    assert!(p.html.contains("`from`"), "{}", p.html);
}

#[tokio::test]
async fn a_template_is_applied_to_a_space_from_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Starters").await;
    let space = app.space(&alice, &org, "Fresh", None).await;
    let mut a = signed_in(&app, &["alice"]).await.pop().unwrap();
    let import = format!("/s/{space}/~/import");
    let seen = a.get(&import).await;
    assert!(
        seen.html.contains("Or start from a template"),
        "{}",
        seen.html
    );
    let token = csrf(&seen.html);
    let p = a
        .post(
            &import,
            &[("csrf", &token), ("op", "template"), ("template", "nope")],
        )
        .await;
    assert_eq!(p.status, 400);
    assert!(p.html.contains("unknown template"), "{}", p.html);
    let first = quire_content::templates::TEMPLATES[0].id;
    let p = a
        .post(
            &import,
            &[("csrf", &token), ("op", "template"), ("template", first)],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let pages = app
        .get(&alice, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    assert!(!pages["pages"].as_array().unwrap().is_empty(), "{pages}");

    // With an image of the space in its slot: the template's first page shows it.
    let other = app.space(&alice, &org, "Branded", None).await;
    let cr = app.open_change_request(&alice, &other, "Logo").await;
    let made = app
        .edit_change_request(
            &alice,
            &other,
            &cr,
            json!([{ "operation": "insert_files", "files": [{ "base64": crate::harness::PNG, "name": "logo.png" }] }]),
        )
        .await;
    app.merge_change_request(&alice, &other, &cr).await;
    let logo = made["insertedFiles"][0]["id"].as_str().unwrap().to_string();
    let import = format!("/s/{other}/~/import");
    let seen = a.get(&import).await;
    assert!(
        seen.html
            .contains(&format!("<option value=\"{logo}\">logo.png</option>")),
        "{}",
        seen.html
    );
    let p = a
        .post(
            &import,
            &[
                ("csrf", &token),
                ("op", "template"),
                ("template", first),
                ("image", &logo),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let pages = app
        .get(&alice, &format!("/v1/spaces/{other}/content/pages"))
        .await
        .expect(200);
    let home = pages["pages"][0]["id"].as_str().unwrap();
    let md = app
        .get(
            &alice,
            &format!("/v1/spaces/{other}/content/page/{home}?format=markdown"),
        )
        .await
        .expect(200);
    assert!(
        md["markdown"]
            .as_str()
            .unwrap()
            .contains(&format!("/files/{logo}")),
        "{md}"
    );
}

/// Whether an API read answered (2xx) for `who`.
async fn api_allows(app: &TestApp, who: &crate::harness::Persona, path: &str) -> bool {
    let res = app.get(who, path).await;
    (200..300).contains(&res.status)
}

#[tokio::test]
async fn each_role_sees_and_may_do_in_the_app_exactly_what_the_api_allows() {
    let app = TestApp::start().await;
    let names = ["admin", "editor", "reader", "guest", "outsider"];
    let mut people = Vec::new();
    for n in names {
        people.push(app.persona(n).await);
    }
    let (admin, editor, reader, guest, outsider) =
        (&people[0], &people[1], &people[2], &people[3], &people[4]);
    let org = app.org(admin, "Matrix").await;
    app.add_member(admin, &org, editor, json!("edit")).await;
    app.add_member(admin, &org, reader, json!("read")).await;
    app.add_member(admin, &org, guest, json!(null)).await;
    app.org(outsider, "Elsewhere").await;
    let shared = app.space(admin, &org, "Shared", None).await;
    let hidden = app.space(admin, &org, "Hidden", None).await;
    app.post(
        admin,
        &format!("/v1/spaces/{shared}/permissions"),
        json!({ "role": "comment", "users": [guest.id] }),
    )
    .await
    .expect(204);
    let site = app
        .post(
            admin,
            &format!("/v1/orgs/{org}/sites"),
            json!({ "title": "Docs" }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut browsers = signed_in(&app, &names).await;

    // Screens and the API reads they stand for.
    let screens = [
        (format!("/o/{org}"), format!("/v1/orgs/{org}")),
        (format!("/s/{shared}"), format!("/v1/spaces/{shared}")),
        (format!("/s/{hidden}"), format!("/v1/spaces/{hidden}")),
        (
            format!("/s/{shared}/~/changes"),
            format!("/v1/spaces/{shared}/change-requests"),
        ),
        (
            format!("/s/{shared}/~/comments"),
            format!("/v1/spaces/{shared}/comments"),
        ),
        (
            format!("/s/{shared}/~/share"),
            format!("/v1/spaces/{shared}/permissions/users"),
        ),
        (
            format!("/o/{org}/members"),
            format!("/v1/orgs/{org}/members"),
        ),
        (format!("/o/{org}/teams"), format!("/v1/orgs/{org}/teams")),
        (
            format!("/o/{org}/translations"),
            format!("/v1/orgs/{org}/translations"),
        ),
        (
            format!("/o/{org}/sites/{site}"),
            format!("/v1/orgs/{org}/sites/{site}"),
        ),
    ];
    for (i, who) in people.iter().enumerate() {
        let b = &mut browsers[i];
        for (screen, api) in &screens {
            let allowed = api_allows(&app, who, api).await;
            let seen = b.get(screen).await;
            assert_eq!(
                seen.status == 200,
                allowed,
                "{}: {screen} answered {} while the API {} {api}",
                who.email,
                seen.status,
                if allowed { "allows" } else { "refuses" }
            );
        }
        // Forms follow the space's permissions as the API reports them.
        let space = app.get(who, &format!("/v1/spaces/{shared}")).await;
        if space.status != 200 {
            continue;
        }
        let may = &space.body["permissions"];
        let discussion = b.get(&format!("/s/{shared}/~/comments")).await.html;
        assert_eq!(
            discussion.contains("New comment"),
            may["comment"] == true,
            "{}: comment form vs {may}",
            who.email
        );
        let settings = b.get(&format!("/s/{shared}/~/settings")).await.html;
        assert_eq!(
            settings.contains("name=\"subject\""),
            may["edit"] == true,
            "{}: settings form vs {may}",
            who.email
        );
        assert_eq!(
            settings.contains("Delete the space"),
            may["admin"] == true,
            "{}: delete vs {may}",
            who.email
        );
        let import = b.get(&format!("/s/{shared}/~/import")).await.html;
        assert_eq!(
            import.contains("name=\"url\""),
            may["edit"] == true,
            "{}: import form vs {may}",
            who.email
        );
    }
}

#[tokio::test]
async fn admins_add_and_remove_saml_providers_in_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Federated").await;
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    let sso = format!("/o/{org}/sso");
    // The admins' screen: a member of another role is told so.
    assert_eq!(b.get(&sso).await.status, 403);
    assert!(!b
        .get(&format!("/o/{org}"))
        .await
        .html
        .contains("Single sign-on"));
    let bt = csrf(&b.get(&format!("/o/{org}")).await.html);
    let p = b
        .post(
            &sso,
            &[
                ("csrf", &bt),
                ("op", "create"),
                ("label", "Okta"),
                ("ssoURL", "https://idp.example/sso"),
            ],
        )
        .await;
    assert_eq!(p.status, 403, "{}", p.html);

    let seen = a.get(&sso).await;
    assert_eq!(seen.status, 200, "{}", seen.html);
    let token = csrf(&seen.html);
    let p = a
        .post(
            &sso,
            &[
                ("csrf", &token),
                ("op", "create"),
                ("label", "Okta"),
                ("ssoURL", "not a url"),
            ],
        )
        .await;
    assert_eq!(p.status, 400);
    assert!(p.html.contains("`ssoURL`"), "{}", p.html);
    let p = a
        .post(
            &sso,
            &[
                ("csrf", &token),
                ("op", "create"),
                ("label", "Okta"),
                ("ssoURL", "https://idp.example/sso"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let listed = app
        .get(&alice, &format!("/v1/orgs/{org}/saml"))
        .await
        .expect(200);
    assert_eq!(listed["items"][0]["label"], "Okta", "{listed}");
    let id = listed["items"][0]["id"].as_str().unwrap().to_string();
    let seen = a.get(&sso).await;
    assert!(seen.html.contains("pending"), "{}", seen.html);
    assert!(
        seen.html.contains(&format!("/saml/{id}/acs")),
        "{}",
        seen.html
    );
    let p = a
        .post(
            &sso,
            &[("csrf", &token), ("op", "delete"), ("provider", &id)],
        )
        .await;
    assert_eq!(p.status, 303);
    let listed = app
        .get(&alice, &format!("/v1/orgs/{org}/saml"))
        .await
        .expect(200);
    assert_eq!(listed["items"].as_array().unwrap().len(), 0, "{listed}");
}

#[tokio::test]
async fn an_address_invited_through_the_api_joins_at_its_first_app_sign_in() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Welcomers").await;
    app.post(
        &alice,
        &format!("/v1/orgs/{org}/invites"),
        json!({ "emails": ["erin@example.com"], "role": "review" }),
    )
    .await
    .expect(200);
    // Quire sends no e-mail: an operator gives the address its password.
    quire_server::admin::set_password(
        &app.config,
        "erin@example.com",
        Some("Erin"),
        "a fine passphrase",
        false,
    )
    .await
    .unwrap();
    let mut e = Browser::new(&app);
    let p = e
        .post(
            "/signin",
            &[
                ("email", "erin@example.com"),
                ("password", "a fine passphrase"),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(e.get(&format!("/o/{org}")).await.status, 200);
    let listed = app
        .get(&alice, &format!("/v1/orgs/{org}/members?search=erin"))
        .await
        .expect(200);
    assert_eq!(listed["items"][0]["role"], "review", "{listed}");
}

/// Saves the editor's form at `path` as the page "Intro" with `text`, from revision `seen`.
async fn save_page(br: &mut Browser, path: &str, token: &str, seen: &str, text: &str) -> Page {
    br.post(
        path,
        &[
            ("csrf", token),
            ("parent", seen),
            ("subject", "Intro"),
            ("body", text),
        ],
    )
    .await
}

/// Writing in the app: "Edit" on a page opens a change request and its editor; a save is one
/// revision of it (its diff shows the edit); two people saving the same page from the same
/// revision are merged line by line, and the same line changed by both is refused naming the
/// page, with nothing changed; the preview renders as the page will; a locked space refuses.
#[tokio::test]
async fn pages_are_edited_in_a_change_request_from_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let carol = app.persona("carol").await;
    let org = app.org(&alice, "Writers").await;
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    app.add_member(&alice, &org, &carol, json!("read")).await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let first = app.open_change_request(&alice, &space, "Base").await;
    app.edit_change_request(
        &alice,
        &space,
        &first,
        json!([{ "operation": "insert_page", "title": "Intro",
            "document": { "markdown": "First line.\n\nMiddle.\n\nLast line.\n" } }]),
    )
    .await;
    app.merge_change_request(&alice, &space, &first).await;
    let page_id = app
        .get(&alice, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200)["pages"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut browsers = signed_in(&app, &["alice", "bob", "carol"]).await;
    let mut c = browsers.pop().unwrap();
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();

    // A reader sees no Edit button; an editor does.
    let seen = c.get(&format!("/s/{space}/intro")).await;
    assert_eq!(seen.status, 200);
    assert!(!seen.html.contains("/~/edit\""), "{}", seen.html);
    let seen = a.get(&format!("/s/{space}/intro")).await;
    assert!(seen.html.contains(&format!("action=\"/s/{space}/~/edit\"")));
    let token = csrf(&seen.html);

    // Edit opens a change request and its editor.
    let p = a
        .post(
            &format!("/s/{space}/~/edit"),
            &[("csrf", &token), ("page", &page_id)],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let editor_path = p.location.unwrap();
    assert!(
        editor_path.ends_with(&format!("/edit/{page_id}")),
        "{editor_path}"
    );
    let number: i64 = editor_path.split('/').nth(5).unwrap().parse().unwrap();
    let editor = a.get(&editor_path).await;
    assert_eq!(editor.status, 200);
    assert!(
        editor.html.contains("First line.\n\nMiddle."),
        "{}",
        editor.html
    );
    // Its script, at a name carrying a hash of its content, kept a year.
    let script = a
        .get(&asset_url(&editor.html, "<script src=\"/-/editor."))
        .await;
    assert_eq!(script.status, 200);
    assert_eq!(
        script.headers["content-type"],
        "text/javascript; charset=utf-8"
    );
    assert_eq!(
        script.headers["cache-control"],
        "public, max-age=31536000, immutable"
    );
    assert!(script.html.starts_with("// Quire's editor"));
    let seen_revision = {
        let at = editor.html.find("name=\"parent\" value=\"").unwrap() + 21;
        editor.html[at..at + editor.html[at..].find('"').unwrap()].to_string()
    };

    // The preview renders the dialect as the page will show it, escaped.
    let p = a
        .post(
            &format!("/s/{space}/~/changes/{number}/preview"),
            &[
                ("csrf", &token),
                (
                    "body",
                    "{% hint style=\"info\" %}\nNote <b>x</b>\n{% endhint %}\n",
                ),
            ],
        )
        .await;
    assert_eq!(p.status, 200);
    assert_eq!(p.headers["x-quire-fragment"], "preview");
    assert!(p.html.contains("hint"), "{}", p.html);
    assert!(!p.html.contains("<b>x</b>"), "escaped: {}", p.html);
    // Markdown larger than a page may be is refused, by the preview and by a save.
    let huge = "x".repeat(2 * 1024 * 1024 + 1);
    let p = a
        .post(
            &format!("/s/{space}/~/changes/{number}/preview"),
            &[("csrf", &token), ("body", &huge)],
        )
        .await;
    assert_eq!(p.status, 413);
    let p = save_page(&mut a, &editor_path, &token, &seen_revision, &huge).await;
    assert_eq!(p.status, 413, "{}", p.html);
    assert!(p.html.contains("2 MiB"), "{}", p.html);

    // Alice and Bob both opened the editor on the same revision. Alice saves the first line
    // (the browser sends CR LF), Bob the last: both edits are kept.
    let p = save_page(
        &mut a,
        &editor_path,
        &token,
        &seen_revision,
        "First line, by Alice.\r\n\r\nMiddle.\r\n\r\nLast line.\r\n",
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(
        p.location.as_deref(),
        Some(format!("/s/{space}/~/changes/{number}#saved:{page_id}").as_str())
    );
    let b_token = csrf(&b.get(&editor_path).await.html);
    let p = save_page(
        &mut b,
        &editor_path,
        &b_token,
        &seen_revision,
        "First line.\n\nMiddle.\n\nLast line, by Bob.\n",
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let cr_md = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{number}/content/page/{page_id}?format=markdown"),
        )
        .await
        .expect(200);
    assert_eq!(
        cr_md["markdown"], "First line, by Alice.\n\nMiddle.\n\nLast line, by Bob.\n",
        "both saves kept: {cr_md}"
    );
    // The change request's screen shows the edit in its diff.
    let screen = a.get(&format!("/s/{space}/~/changes/{number}")).await;
    assert!(screen.html.contains("by Alice"), "{}", screen.html);
    assert!(screen
        .html
        .contains(&format!("/~/changes/{number}/edit/{page_id}")));
    // Rendered as readers will see it, before and after, with the source diff a click away.
    assert!(
        screen.html.contains("<section class=\"after\"")
            && screen.html.contains("<p>First line, by Alice.</p>")
            && screen
                .html
                .contains("<details class=\"source\"><summary>Source diff</summary>"),
        "{}",
        screen.html
    );
    let changes = screen.html.find("<h2>Changes</h2>").expect("the changes");
    let reviews = screen.html.find("<h2>Reviews</h2>").expect("the reviews");
    assert!(changes < reviews, "what changed comes first");

    // Bob saves the first line again from the revision he first saw: the same line changed
    // on both sides is refused, naming the page, and nothing changes.
    let p = save_page(
        &mut b,
        &editor_path,
        &b_token,
        &seen_revision,
        "First line, by Bob.\n\nMiddle.\n\nLast line, by Bob.\n",
    )
    .await;
    assert_eq!(p.status, 409, "{}", p.html);
    assert!(p.html.contains("Intro"), "{}", p.html);
    // Shown side by side, with a form to save the text that should stand.
    assert!(
        p.html.contains("Saved meanwhile") && p.html.contains("Yours"),
        "{}",
        p.html
    );
    assert!(p.html.contains("First line, by Alice."), "{}", p.html);
    assert_eq!(
        textarea_text(&p.html),
        "First line, by Bob.\n\nMiddle.\n\nLast line, by Bob.\n"
    );
    let resolve_from = {
        let at = p.html.find("name=\"parent\" value=\"").unwrap() + 21;
        p.html[at..at + p.html[at..].find('"').unwrap()].to_string()
    };
    let again = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{number}/content/page/{page_id}?format=markdown"),
        )
        .await
        .expect(200);
    assert_eq!(again["markdown"], cr_md["markdown"]);
    // The resolution, saved from the conflict's form, stands.
    let p = save_page(
        &mut b,
        &editor_path,
        &csrf(&p.html),
        &resolve_from,
        "First line, by Alice and Bob.\n\nMiddle.\n\nLast line, by Bob.\n",
    )
    .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let resolved = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{number}/content/page/{page_id}?format=markdown"),
        )
        .await
        .expect(200);
    assert_eq!(
        resolved["markdown"],
        "First line, by Alice and Bob.\n\nMiddle.\n\nLast line, by Bob.\n"
    );

    // Line by line: Bob saves from the first revision again, changing the first line and
    // adding one in the middle; only the first line conflicts, and he keeps both versions.
    let bobs = "First line, by Bob.\n\nMiddle.\n\nMore in the middle.\n\nLast line.\n";
    let p = save_page(&mut b, &editor_path, &b_token, &seen_revision, bobs).await;
    assert_eq!(p.status, 409, "{}", p.html);
    assert!(p.html.contains("Place 1 of 1"), "{}", p.html);
    assert_eq!(p.html.matches("name=\"choice\"").count(), 1, "{}", p.html);
    let field = |html: &str, form_id: &str, name: &str| {
        let form = &html[html.find(&format!("id=\"{form_id}\"")).unwrap()..];
        let at = form.find(&format!("name=\"{name}\" value=\"")).unwrap() + name.len() + 15;
        form[at..at + form[at..].find('"').unwrap()].to_string()
    };
    let (parent, base) = (
        field(&p.html, "merge", "parent"),
        field(&p.html, "merge", "base"),
    );
    assert_eq!(base, seen_revision);
    let token = csrf(&p.html);
    let resolve = |choices: &[&'static str]| {
        let mut form = vec![
            ("csrf", token.clone()),
            ("op", "resolve".to_string()),
            ("parent", parent.clone()),
            ("base", base.clone()),
            ("subject", "Intro".to_string()),
            ("body", bobs.replace('\n', "\r\n")),
        ];
        form.extend(choices.iter().map(|c| ("choice", c.to_string())));
        form
    };
    for wrong in [&[][..], &["mine", "mine"], &["neither"]] {
        let form = resolve(wrong);
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let p = b.post(&editor_path, &form).await;
        assert_eq!(p.status, 400, "{wrong:?}: {}", p.html);
        assert!(p.html.contains("`choice`"), "{}", p.html);
    }
    let form = resolve(&["both"]);
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let p = b.post(&editor_path, &form).await;
    assert_eq!(p.status, 303, "{}", p.html);
    let merged = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{number}/content/page/{page_id}?format=markdown"),
        )
        .await
        .expect(200);
    // (Both first lines make one paragraph, which keeps its two lines.)
    assert_eq!(
        merged["markdown"],
        "First line, by Alice and Bob.\nFirst line, by Bob.\n\nMiddle.\n\nMore in the middle.\n\nLast line, by Bob.\n"
    );

    // A locked space: no Edit button, and the editor refuses with the reason.
    app.patch(
        &alice,
        &format!("/v1/spaces/{space}"),
        json!({ "editMode": "locked" }),
    )
    .await
    .expect(200);
    let seen = a.get(&format!("/s/{space}/intro")).await;
    assert!(!seen.html.contains(&format!("action=\"/s/{space}/~/edit\"")));
    assert!(seen.html.contains("locked"), "{}", seen.html);
    let refused = a.get(&editor_path).await;
    assert_eq!(refused.status, 403, "{}", refused.html);
    assert!(refused.html.contains("locked"));
}

/// The text of the editor's text area as a browser reads it: the one line break after the
/// opening tag dropped, entities decoded.
fn textarea_text(html: &str) -> String {
    let open = html.find("<textarea").unwrap();
    let start = open + html[open..].find('>').unwrap() + 1;
    let end = start + html[start..].find("</textarea>").unwrap();
    let raw = &html[start..end];
    let raw = raw.strip_prefix('\n').unwrap_or(raw);
    raw.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Every page of the dialect's corpus opened in the editor and saved as it is changes
/// nothing: the change request gets no revision and shows no change.
#[tokio::test]
async fn corpus_pages_saved_unchanged_from_the_editor_change_nothing() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Corpus").await;
    let space = app.space(&alice, &org, "Corpus", None).await;
    let corpus = crate::harness::corpus();
    let first = app.open_change_request(&alice, &space, "Corpus").await;
    let inserts: Vec<serde_json::Value> = corpus
        .iter()
        .map(|(n, markdown)| {
            json!({ "operation": "insert_page", "title": n.trim_end_matches(".md"),
                "document": { "markdown": markdown } })
        })
        .collect();
    app.edit_change_request(&alice, &space, &first, json!(inserts))
        .await;
    app.merge_change_request(&alice, &space, &first).await;
    let pages = app
        .get(&alice, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    let ids: Vec<String> = pages["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), corpus.len());

    let mut a = signed_in(&app, &["alice"]).await.pop().unwrap();
    let cr = app
        .open_change_request(&alice, &space, "Opened and saved")
        .await;
    let cr_json = app
        .get(&alice, &format!("/v1/spaces/{space}/change-requests/{cr}"))
        .await
        .expect(200);
    let number = cr_json["number"].as_i64().unwrap();
    let revision = cr_json["revision"].clone();
    for id in &ids {
        let path = format!("/s/{space}/~/changes/{number}/edit/{id}");
        let editor = a.get(&path).await;
        assert_eq!(editor.status, 200, "{}", editor.html);
        let text = textarea_text(&editor.html);
        let title = {
            let at = editor.html.find("id=\"page-title\"").unwrap();
            let v = at + editor.html[at..].find("value=\"").unwrap() + 7;
            editor.html[v..v + editor.html[v..].find('"').unwrap()].replace("&amp;", "&")
        };
        let seen = {
            let at = editor.html.find("name=\"parent\" value=\"").unwrap() + 21;
            editor.html[at..at + editor.html[at..].find('"').unwrap()].to_string()
        };
        let token = csrf(&editor.html);
        // As a browser sends a text area: lines ended by CR LF.
        let sent = text.replace('\n', "\r\n");
        let p = a
            .post(
                &path,
                &[
                    ("csrf", &token),
                    ("parent", &seen),
                    ("subject", &title),
                    ("body", &sent),
                ],
            )
            .await;
        assert_eq!(p.status, 303, "{}", p.html);
    }
    let after = app
        .get(&alice, &format!("/v1/spaces/{space}/change-requests/{cr}"))
        .await
        .expect(200);
    assert_eq!(after["revision"], revision, "no revision was made");
    let changes = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{cr}/changes"),
        )
        .await
        .expect(200);
    assert_eq!(changes["changes"], json!([]), "{changes}");
}

/// The page tree of a change request in the app: a page added (then its editor), moved
/// down, up, into the page above and out again, and deleted after a confirmation; each one
/// change of the change request, seen through the API.
#[tokio::test]
async fn the_page_tree_is_edited_in_a_change_request_from_the_app() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Tree").await;
    let space = app.space(&alice, &org, "Tree", None).await;
    let cr = app.open_change_request(&alice, &space, "Pages").await;
    app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([
            { "operation": "insert_page", "title": "One", "document": { "markdown": "1\n" } },
            { "operation": "insert_page", "title": "Two", "document": { "markdown": "2\n" } }
        ]),
    )
    .await;
    let number = app
        .get(&alice, &format!("/v1/spaces/{space}/change-requests/{cr}"))
        .await
        .expect(200)["number"]
        .as_i64()
        .unwrap();
    // The tree as titles, children in brackets.
    let tree = || async {
        let pages = app
            .get(
                &alice,
                &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
            )
            .await
            .expect(200);
        fn walk(p: &serde_json::Value) -> String {
            let kids: Vec<String> = p["pages"]
                .as_array()
                .map(|a| a.iter().map(walk).collect())
                .unwrap_or_default();
            let title = p["title"].as_str().unwrap_or("").to_string();
            if kids.is_empty() {
                title
            } else {
                format!("{title}[{}]", kids.join(","))
            }
        }
        pages["pages"]
            .as_array()
            .unwrap()
            .iter()
            .map(walk)
            .collect::<Vec<_>>()
            .join(",")
    };
    let id_of = |title: &'static str| {
        let (app, alice, space, cr) = (&app, &alice, &space, &cr);
        async move {
            let pages = app
                .get(
                    alice,
                    &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
                )
                .await
                .expect(200);
            let mut stack: Vec<serde_json::Value> = pages["pages"].as_array().unwrap().clone();
            while let Some(p) = stack.pop() {
                if p["title"] == title {
                    return p["id"].as_str().unwrap().to_string();
                }
                stack.extend(p["pages"].as_array().cloned().unwrap_or_default());
            }
            panic!("no page {title}")
        }
    };
    let mut a = signed_in(&app, &["alice"]).await.pop().unwrap();
    // The change request's screen opens on its changes and leads to its page tree, a
    // screen of its own.
    let tree_path = format!("/s/{space}/~/changes/{number}/tree");
    let cr_screen = a.get(&format!("/s/{space}/~/changes/{number}")).await;
    assert!(
        !cr_screen.html.contains("id=\"tree-h\""),
        "{}",
        cr_screen.html
    );
    assert!(
        cr_screen
            .html
            .contains(&format!("<a href=\"{tree_path}\">Arrange pages</a>")),
        "{}",
        cr_screen.html
    );
    let screen = a.get(&tree_path).await;
    assert_eq!(screen.status, 200, "{}", screen.html);
    assert!(
        screen.html.contains("<h2 id=\"tree-h\">Pages</h2>"),
        "{}",
        screen.html
    );
    let token = csrf(&screen.html);

    // Added at the top: then its editor.
    let p = a
        .post(
            &tree_path,
            &[
                ("csrf", &token),
                ("op", "add"),
                ("subject", "Three"),
                ("parent", ""),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let three = id_of("Three").await;
    assert_eq!(
        p.location.as_deref(),
        Some(format!("/s/{space}/~/changes/{number}/edit/{three}").as_str())
    );
    assert_eq!(tree().await, "One,Two,Three");
    let one = id_of("One").await;
    let two = id_of("Two").await;
    /// The tree form's fields moving or deleting `page`.
    fn form<'a>(token: &'a str, op: &'a str, page: &'a str) -> [(&'a str, &'a str); 3] {
        [("csrf", token), ("op", op), ("page", page)]
    }
    let form = |op, page| form(&token, op, page);
    let (one, two, three) = (one.as_str(), two.as_str(), three.as_str());
    for (op, page, expected) in [
        ("down", one, "Two,One,Three"),
        ("up", one, "One,Two,Three"),
        ("in", two, "One[Two],Three"),
        ("in", three, "One[Two,Three]"),
        ("out", two, "One[Three],Two"),
    ] {
        let p = a.post(&tree_path, &form(op, page)).await;
        assert_eq!(p.status, 303, "{op}: {}", p.html);
        assert_eq!(tree().await, expected, "after {op}");
    }
    // Dragged (the app's script sends the drop): before, after or into another page.
    let drop = |page, target, place| {
        [
            ("csrf", token.as_str()),
            ("op", "drop"),
            ("page", page),
            ("item", target),
            ("place", place),
        ]
    };
    for (page, target, place, expected) in [
        (two, one, "before", "Two,One[Three]"),
        (two, one, "after", "One[Three],Two"),
        (one, two, "after", "Two,One[Three]"),
        (two, three, "after", "One[Three,Two]"),
        (two, three, "before", "One[Two,Three]"),
        (three, two, "into", "One[Two[Three]]"),
        (three, one, "after", "One[Two],Three"),
        (two, one, "after", "One,Two,Three"),
        (two, three, "after", "One,Three,Two"),
        (two, three, "before", "One,Two,Three"),
        (three, one, "into", "One[Three],Two"),
    ] {
        let p = a.post(&tree_path, &drop(page, target, place)).await;
        assert_eq!(p.status, 303, "{place}: {}", p.html);
        assert_eq!(tree().await, expected, "after a drop {place}");
    }
    // Not onto itself, not into its own subpage, not to a place that is none.
    for (page, target, place) in [
        (one, one, "into"),
        (one, three, "into"),
        (one, two, "beside"),
    ] {
        let p = a.post(&tree_path, &drop(page, target, place)).await;
        assert_eq!(p.status, 400, "{target} {place}: {}", p.html);
    }
    assert_eq!(tree().await, "One[Three],Two");

    // The top page cannot move out; a deletion needs its confirmation.
    assert_eq!(a.post(&tree_path, &form("out", two)).await.status, 400);
    let refused = a.post(&tree_path, &form("delete", one)).await;
    assert_eq!(refused.status, 400);
    assert!(refused.html.contains("confirm"), "{}", refused.html);
    assert_eq!(tree().await, "One[Three],Two");
    let [csrf_field, op, page] = form("delete", one);
    let confirmed = [csrf_field, op, page, ("confirm", "yes")];
    assert_eq!(a.post(&tree_path, &confirmed).await.status, 303);
    assert_eq!(tree().await, "Two", "deleted with its subpage");

    // The editor's page settings: description, emoji, hidden, left out of search.
    let editor_path = format!("/s/{space}/~/changes/{number}/edit/{two}");
    let page_of_two = || async {
        app.get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content/page/{two}"),
        )
        .await
        .expect(200)
    };
    let editor = a.get(&editor_path).await;
    assert!(editor.html.contains("<summary>Page settings</summary>"));
    // Every icon of editor/icons.txt is offered, drawn, in the list and in the grid.
    let offered = include_str!("../../../../editor/icons.txt");
    for name in offered.lines() {
        assert!(
            editor.html.contains(&format!("<option value=\"{name}\">"))
                && editor.html.contains(&format!(
                    "data-icon=\"{name}\" title=\"{name}\" aria-label=\"{name}\" aria-pressed=\"false\"><svg aria-hidden=\"true\" focusable=\"false\" viewBox="
                )),
            "{name}"
        );
    }
    assert_eq!(
        editor
            .html
            .matches("<button type=\"button\" data-icon=")
            .count(),
        offered.lines().count()
    );
    let seen = {
        let at = editor.html.find("name=\"parent\" value=\"").unwrap() + 21;
        editor.html[at..at + editor.html[at..].find('"').unwrap()].to_string()
    };
    let form = [
        ("csrf", token.as_str()),
        ("parent", seen.as_str()),
        ("subject", "Two"),
        ("body", "2\n"),
        ("settings", "1"),
        ("description", "The second page"),
        ("emoji", "🚀"),
        ("icon", ""),
        ("slug", "second"),
        ("hidden", "yes"),
        ("noindex", "yes"),
    ];
    assert_eq!(a.post(&editor_path, &form).await.status, 303);
    let page = page_of_two().await;
    assert_eq!(page["description"], "The second page", "{page}");
    assert_eq!(page["emoji"], "🚀", "{page}");
    assert_eq!(page["hidden"], true, "{page}");
    assert_eq!(page["noIndex"], true, "{page}");
    assert_eq!(page["slug"], "second", "{page}");
    // Unticked and emptied: the settings are removed.
    let form = [
        ("csrf", token.as_str()),
        ("parent", ""),
        ("subject", "Two"),
        ("body", "2\n"),
        ("settings", "1"),
        ("description", ""),
        ("emoji", ""),
        ("icon", ""),
        ("slug", "second"),
    ];
    assert_eq!(a.post(&editor_path, &form).await.status, 303);
    let page = page_of_two().await;
    assert!(
        page.get("description").is_none_or(|d| d.is_null()),
        "{page}"
    );
    assert!(page.get("emoji").is_none_or(|d| d.is_null()), "{page}");
    assert_eq!(page["hidden"], false, "{page}");

    // Its layout, cover and variables.
    let editor = a.get(&editor_path).await;
    let kept = {
        let at = editor.html.find("name=\"layout\" value=\"").unwrap() + 21;
        editor.html[at..at + editor.html[at..].find('"').unwrap()].replace("&quot;", "\"")
    };
    let mut form = vec![
        ("csrf", token.as_str()),
        ("parent", ""),
        ("subject", "Two"),
        ("body", "2\n"),
        ("settings", "1"),
        ("slug", "second"),
        ("layout", kept.as_str()),
        ("width", "wide"),
        ("show", "cover"),
        ("show", "description"),
        ("show", "tableOfContents"),
        ("show", "pagination"),
        ("cover", "https://example.com/cover.png"),
        ("vars", "product: Quire\nbeta: true\n"),
    ];
    assert_eq!(a.post(&editor_path, &form).await.status, 303);
    let page = page_of_two().await;
    let layout = &page["layout"];
    assert_eq!(layout["width"], "wide", "{page}");
    assert_eq!(
        (layout["title"].clone(), layout["outline"].clone()),
        (json!(false), json!(false))
    );
    assert_eq!(layout["description"], true, "{page}");
    assert_eq!(layout["anchors"], true, "kept as it was: {page}");
    assert_eq!(
        page["cover"]["ref"]["url"], "https://example.com/cover.png",
        "{page}"
    );
    let editor = a.get(&editor_path).await;
    assert!(editor.html.contains("product: Quire"), "{}", editor.html);
    // Saved again as shown: what was not edited stays (a variable keeps its type).
    let mut again: Vec<(&str, &str)> = form
        .iter()
        .filter(|(k, _)| *k != "width")
        .copied()
        .collect();
    again.extend([
        ("coverwas", "https://example.com/cover.png"),
        ("varswas", "beta: true\nproduct: Quire\n"),
        ("vars", "beta: true\nproduct: Quire\n"),
    ]);
    again.retain(|(k, v)| *k != "vars" || v.starts_with("beta"));
    assert_eq!(a.post(&editor_path, &again).await.status, 303);
    let page = page_of_two().await;
    assert_eq!(page["layout"]["width"], "default", "{page}");
    assert_eq!(
        page["cover"]["ref"]["url"], "https://example.com/cover.png",
        "{page}"
    );
    // The cover emptied is removed (a field sent empty is not a field left out).
    let mut emptied: Vec<(&str, &str)> = again
        .iter()
        .filter(|(k, _)| *k != "cover")
        .copied()
        .collect();
    emptied.push(("cover", ""));
    assert_eq!(a.post(&editor_path, &emptied).await.status, 303);
    let page = page_of_two().await;
    assert!(page.get("cover").is_none_or(|c| c.is_null()), "{page}");
    // A line that is not `name: value` is refused, naming the field; nothing changes.
    form.retain(|(k, _)| *k != "vars");
    form.push(("vars", "just words"));
    let refused = a.post(&editor_path, &form).await;
    assert_eq!(refused.status, 400, "{}", refused.html);
    assert!(refused.html.contains("`variables`"), "{}", refused.html);

    // A group and a link are added from the tree too.
    let p = a
        .post(
            &tree_path,
            &[
                ("csrf", &token),
                ("op", "add"),
                ("kind", "group"),
                ("subject", "Reference"),
                ("parent", ""),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    assert_eq!(
        p.location.as_deref(),
        Some(format!("/s/{space}/~/changes/{number}/tree#tree-h").as_str())
    );
    let p = a
        .post(
            &tree_path,
            &[
                ("csrf", &token),
                ("op", "add"),
                ("kind", "link"),
                ("subject", "Website"),
                ("href", "https://example.com/docs"),
                ("parent", ""),
            ],
        )
        .await;
    assert_eq!(p.status, 303, "{}", p.html);
    let refused = a
        .post(
            &tree_path,
            &[
                ("csrf", &token),
                ("op", "add"),
                ("kind", "link"),
                ("subject", "Nowhere"),
                ("href", "javascript:alert(1)"),
            ],
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.html);
    assert!(refused.html.contains("href"), "{}", refused.html);
    assert_eq!(tree().await, "Two,Reference,Website");
    let pages = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
        )
        .await
        .expect(200);
    let kinds: Vec<&str> = pages["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["document", "group", "link"]);
    assert_eq!(
        pages["pages"][2]["target"]["url"], "https://example.com/docs",
        "{pages}"
    );
}

/// A file pasted or dropped into the editor becomes a file of the change request, and the
/// answer is the block that shows it; without the page's CSRF token nothing is stored.
#[tokio::test]
async fn large_uploads_take_an_import_turn_and_small_ones_do_not_wait() {
    let app = TestApp::start_with(|c| {
        c.max_imports = 1;
        c.busy_wait_ms = 200;
    })
    .await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Files").await;
    let space = app.space(&alice, &org, "Files", None).await;
    let cr = app.open_change_request(&alice, &space, "Big files").await;
    let number = app
        .get(&alice, &format!("/v1/spaces/{space}/change-requests/{cr}"))
        .await
        .expect(200)["number"]
        .as_i64()
        .unwrap();
    let mut a = signed_in(&app, &["alice"]).await.pop().unwrap();
    let token = csrf(&a.get(&format!("/s/{space}/~/changes/{number}")).await.html);
    let path = format!("/s/{space}/~/upload/{number}?name=big.txt");
    let big = vec![b'x'; 300 * 1024];
    // Every import turn taken (an import running): a large file waits, then is told to
    // come back; a small one is stored at once.
    let held = app.state.imports.clone().acquire_owned().await.unwrap();
    let busy = a.upload(&path, &token, big.clone()).await;
    assert_eq!(busy.status, 503, "{}", busy.html);
    assert!(busy.headers.contains_key("retry-after"));
    assert!(busy.html.contains("busy"), "{}", busy.html);
    let small = a.upload(&path, &token, b"small words".to_vec()).await;
    assert_eq!(small.status, 200, "{}", small.html);
    drop(held);
    let stored = a.upload(&path, &token, big).await;
    assert_eq!(stored.status, 200, "{}", stored.html);
}

#[tokio::test]
async fn files_are_uploaded_into_a_change_request_from_the_editor() {
    use base64::Engine;
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Files").await;
    let space = app.space(&alice, &org, "Files", None).await;
    let cr = app.open_change_request(&alice, &space, "Pictures").await;
    let number = app
        .get(&alice, &format!("/v1/spaces/{space}/change-requests/{cr}"))
        .await
        .expect(200)["number"]
        .as_i64()
        .unwrap();
    let mut a = signed_in(&app, &["alice"]).await.pop().unwrap();
    let token = csrf(&a.get(&format!("/s/{space}/~/changes/{number}")).await.html);
    let png = base64::engine::general_purpose::STANDARD
        .decode(crate::harness::PNG)
        .unwrap();
    let path = format!("/s/{space}/~/upload/{number}?name=pixel.png");

    let refused = a.upload(&path, "not-the-token", png.clone()).await;
    assert_eq!(refused.status, 403);
    let files_path = format!("/v1/spaces/{space}/change-requests/{cr}/content/files");
    assert_eq!(
        app.get(&alice, &files_path).await.expect(200)["items"]
            .as_array()
            .unwrap()
            .len(),
        0
    );

    let made = a.upload(&path, &token, png).await;
    assert_eq!(made.status, 200, "{}", made.html);
    let made: serde_json::Value = serde_json::from_str(&made.html).unwrap();
    let id = made["id"].as_str().unwrap();
    assert_eq!(
        made["markdown"],
        format!("<figure><img src=\"/files/{id}\" alt=\"pixel.png\"><figcaption></figcaption></figure>\n")
    );
    assert_eq!(
        app.get(&alice, &files_path).await.expect(200)["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // The preview shows it from the change request's files.
    let shown = a
        .post(
            &format!("/s/{space}/~/changes/{number}/preview"),
            &[
                ("csrf", &token),
                ("body", made["markdown"].as_str().unwrap()),
            ],
        )
        .await;
    assert!(
        shown
            .html
            .contains(&format!("/~/changes/{number}/files/{id}/pixel.png")),
        "{}",
        shown.html
    );
    let served = a
        .get(&format!(
            "/s/{space}/~/changes/{number}/files/{id}/pixel.png"
        ))
        .await;
    assert_eq!(served.status, 200);
    assert_eq!(served.headers["content-type"], "image/png");
    let made = a
        .upload(
            &format!("/s/{space}/~/upload/{number}?name=notes.txt"),
            &token,
            b"plain words".to_vec(),
        )
        .await;
    let made: serde_json::Value = serde_json::from_str(&made.html).unwrap();
    assert!(
        made["markdown"]
            .as_str()
            .unwrap()
            .starts_with("{% file src=\"/files/"),
        "{made}"
    );
    assert_eq!(
        app.get(&alice, &files_path).await.expect(200)["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// Renaming a page's slug in the editor offers (to organization admins, when a site shows
/// the space) a redirect from the old address: once merged, the old address leads to the page.
#[tokio::test]
async fn a_new_slug_keeps_the_old_address_with_a_redirect_from_the_editor() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Writers").await;
    app.add_member(&alice, &org, &bob, json!("edit")).await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let first = app.open_change_request(&alice, &space, "Base").await;
    app.edit_change_request(
        &alice,
        &space,
        &first,
        json!([{ "operation": "insert_page", "title": "Intro", "document": { "markdown": "Hi.\n" } }]),
    )
    .await;
    app.merge_change_request(&alice, &space, &first).await;
    let page_id = app
        .get(&alice, &format!("/v1/spaces/{space}/content/path/intro"))
        .await
        .expect(200)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let sites = format!("/v1/orgs/{org}/sites");
    let site = app
        .post(
            &alice,
            &sites,
            json!({ "title": "Docs", "spaces": [space] }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.post(&alice, &format!("{sites}/{site}/publish"), json!({}))
        .await
        .expect(200);
    let cr = app.open_change_request(&alice, &space, "Rename").await;
    let number = app
        .get(&alice, &format!("/v1/spaces/{space}/change-requests/{cr}"))
        .await
        .expect(200)["number"]
        .as_i64()
        .unwrap();
    let editor_path = format!("/s/{space}/~/changes/{number}/edit/{page_id}");
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    // Redirects are the organization admins': an editor is not offered one.
    assert!(!b.get(&editor_path).await.html.contains("name=\"redirect\""));
    let editor = a.get(&editor_path).await;
    assert!(editor.html.contains("name=\"redirect\""), "{}", editor.html);
    let token = csrf(&editor.html);
    let form = [
        ("csrf", token.as_str()),
        ("parent", ""),
        ("subject", "Intro"),
        ("body", "Hi.\n"),
        ("settings", "1"),
        ("slug", "start"),
        ("redirect", "yes"),
    ];
    assert_eq!(a.post(&editor_path, &form).await.status, 303);
    let redirects = app
        .get(&alice, &format!("{sites}/{site}/redirects"))
        .await
        .expect(200);
    assert_eq!(redirects["count"], json!(1), "{redirects}");
    assert_eq!(redirects["items"][0]["source"], json!("/intro"));
    assert_eq!(
        redirects["items"][0]["destination"]["pageId"],
        json!(page_id)
    );
    app.merge_change_request(&alice, &space, &cr).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let res = client
        .get(format!("{}/sites/{site}/intro", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 301);
    let to = res.headers()["location"].to_str().unwrap();
    assert!(to.ends_with(&format!("/sites/{site}/start")), "{to}");
}

/// From a comment on a page of an open change request to the editor, at the line of the
/// block the comment is about, found again after the page changed; a comment on the page
/// alone opens it; those who may not edit get no link.
#[tokio::test]
async fn a_comment_on_a_block_leads_to_its_line_in_the_editor() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let org = app.org(&alice, "Writers").await;
    app.add_member(&alice, &org, &bob, json!("read")).await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let cr = app.open_change_request(&alice, &space, "Words").await;
    let text = "First paragraph.\n\n{% hint style=\"info\" %}\nInside the hint.\n{% endhint %}\n\nLast paragraph.\n";
    app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([{ "operation": "insert_page", "title": "Intro", "document": { "markdown": text } }]),
    )
    .await;
    let content = format!("/v1/spaces/{space}/change-requests/{cr}/content");
    let pages = app.get(&alice, &content).await.expect(200);
    let page = pages["pages"][0]["id"].as_str().unwrap().to_string();
    let document = app
        .get(&alice, &format!("{content}/page/{page}?format=document"))
        .await
        .expect(200);
    let hint_key = document["document"]["nodes"][1]["key"]
        .as_str()
        .unwrap()
        .to_string();
    let comments = format!("/v1/spaces/{space}/change-requests/{cr}/comments");
    for body in [
        json!({ "body": { "markdown": "About the hint" }, "page": page, "node": hint_key }),
        json!({ "body": { "markdown": "About the page" }, "page": page }),
    ] {
        app.post(&alice, &comments, body).await.expect(200);
    }
    let number = app
        .get(&alice, &format!("/v1/spaces/{space}/change-requests/{cr}"))
        .await
        .expect(200)["number"]
        .as_i64()
        .unwrap();
    let screen = format!("/s/{space}/~/changes/{number}");
    let editor = format!("/s/{space}/~/changes/{number}/edit/{page}");
    let mut browsers = signed_in(&app, &["alice", "bob"]).await;
    let mut b = browsers.pop().unwrap();
    let mut a = browsers.pop().unwrap();
    let seen = a.get(&screen).await;
    assert!(
        seen.html.contains(&format!(
            "<a href=\"{editor}?line=3\">Open in the editor at line 3</a>"
        )),
        "{}",
        seen.html
    );
    assert!(
        seen.html.contains(&format!(
            "<a href=\"{editor}\">Open the page in the editor</a>"
        )),
        "{}",
        seen.html
    );
    // Two paragraphs written above it: the hint's line is found where it went.
    app.edit_change_request(
        &alice,
        &space,
        &cr,
        json!([{ "operation": "update_page", "page": page,
                 "document": { "markdown": format!("New start.\n\nMore.\n\n{text}") } }]),
    )
    .await;
    let seen = a.get(&screen).await;
    assert!(
        seen.html.contains(&format!(
            "<a href=\"{editor}?line=7\">Open in the editor at line 7</a>"
        )),
        "{}",
        seen.html
    );
    // The editor opens there (its script selects the line).
    assert_eq!(a.get(&format!("{editor}?line=7")).await.status, 200);
    // A reader sees the comments, and no way into the editor.
    let seen = b.get(&screen).await;
    assert!(seen.html.contains("About the hint"), "{}", seen.html);
    assert!(!seen.html.contains("Open in the editor"), "{}", seen.html);
}

/// Updating a change request from main when both changed the same lines of a page: the
/// screen shows each place with a choice of the lines that stand; the update made of the
/// choices keeps what each side changed elsewhere; stale or mismatched choices are refused.
#[tokio::test]
async fn an_update_from_main_that_conflicts_is_resolved_line_by_line() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Writers").await;
    let space = app.space(&alice, &org, "Guide", None).await;
    let start = app.open_change_request(&alice, &space, "Start").await;
    app.edit_change_request(
        &alice,
        &space,
        &start,
        json!([{ "operation": "insert_page", "title": "Intro",
                 "document": { "markdown": "Start.\n\nMiddle.\n\nEnd.\n" } }]),
    )
    .await;
    app.merge_change_request(&alice, &space, &start).await;
    let pages = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    let page = pages["pages"][0]["id"].as_str().unwrap().to_string();
    let main_cr = app.open_change_request(&alice, &space, "Main's").await;
    let mine = app.open_change_request(&alice, &space, "Mine").await;
    app.edit_change_request(
        &alice,
        &space,
        &main_cr,
        json!([{ "operation": "update_page", "page": page,
                 "document": { "markdown": "Main start.\n\nMiddle.\n\nEnd.\n\nMain end.\n" } }]),
    )
    .await;
    app.merge_change_request(&alice, &space, &main_cr).await;
    app.edit_change_request(
        &alice,
        &space,
        &mine,
        json!([{ "operation": "update_page", "page": page,
                 "document": { "markdown": "My start.\n\nMy middle.\n\nEnd.\n" } }]),
    )
    .await;
    let number = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{mine}"),
        )
        .await
        .expect(200)["number"]
        .as_i64()
        .unwrap();
    let mut a = signed_in(&app, &["alice"]).await.pop().unwrap();
    let screen = format!("/s/{space}/~/changes/{number}");
    let token = csrf(&a.get(&screen).await.html);
    let update = format!("{screen}/update");
    let p = a.post(&update, &[("csrf", &token)]).await;
    assert_eq!(p.status, 409, "{}", p.html);
    assert!(
        p.html.contains("Updating from main conflicts"),
        "{}",
        p.html
    );
    assert!(p.html.contains("<h2>Intro</h2>"), "{}", p.html);
    assert!(p.html.contains("Place 1 of 1"), "{}", p.html);
    assert!(
        p.html
            .contains(&format!("<option value=\"{page}:theirs\">On main</option>")),
        "{}",
        p.html
    );
    let field = |html: &str, name: &str| {
        let at = html.find(&format!("name=\"{name}\" value=\"")).unwrap() + name.len() + 15;
        html[at..at + html[at..].find('"').unwrap()].to_string()
    };
    let (parent, base) = (field(&p.html, "parent"), field(&p.html, "base"));
    let token = csrf(&p.html);
    let resolve = |choices: &[String]| {
        let mut form = vec![
            ("csrf", token.clone()),
            ("op", "resolve".to_string()),
            ("parent", parent.clone()),
            ("base", base.clone()),
        ];
        form.extend(choices.iter().map(|c| ("choice", c.clone())));
        form
    };
    for wrong in [
        vec![],
        vec![format!("{page}:theirs"), format!("{page}:mine")],
    ] {
        let form = resolve(&wrong);
        let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let p = a.post(&update, &form).await;
        assert_eq!(p.status, 400, "{wrong:?}: {}", p.html);
        assert!(p.html.contains("`choice`"), "{}", p.html);
    }
    let text = |cr: String| {
        let app = &app;
        let (alice, space, page) = (&alice, &space, &page);
        async move {
            app.get(
                alice,
                &format!(
                    "/v1/spaces/{space}/change-requests/{cr}/content/page/{page}?format=markdown"
                ),
            )
            .await
            .expect(200)["markdown"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    assert_eq!(
        text(mine.clone()).await,
        "My start.\n\nMy middle.\n\nEnd.\n"
    );
    let form = resolve(&[format!("{page}:theirs")]);
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let p = a.post(&update, &form).await;
    assert_eq!(p.status, 303, "{}", p.html);
    // Main's start chosen; my middle and main's end merged.
    assert_eq!(
        text(mine.clone()).await,
        "Main start.\n\nMy middle.\n\nEnd.\n\nMain end.\n"
    );
    let cr = app
        .get(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{mine}"),
        )
        .await
        .expect(200);
    assert_eq!(cr["outdated"], false, "{cr}");
    // The same choices again: made against revisions that are gone.
    let p = a.post(&update, &form).await;
    assert_eq!(p.status, 409, "{}", p.html);
    assert!(p.html.contains("compare again"), "{}", p.html);
}

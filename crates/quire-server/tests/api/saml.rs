//! SAML single sign-on: providers through the API (`ORG/saml`, `ORG/sso`), and logins
//! through the browser endpoints. Responses for the refusals are built and signed here with
//! the test identity provider's key (`tests/saml_idp/idp.key`), so that each test changes one
//! thing; the round trip runs against a real identity provider (pysaml2, signing with
//! xmlsec1) started on loopback.

use std::io::Read;
use std::path::PathBuf;

use base64::Engine;
use reqwest::header::{HeaderMap, CONTENT_TYPE, LOCATION, SET_COOKIE};
use reqwest::Method;
use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};

fn idp_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/saml_idp")
}

fn read(name: &str) -> String {
    std::fs::read_to_string(idp_dir().join(name)).expect("test IdP file")
}

const IDP_ENTITY: &str = "https://idp.example.test/metadata";
const IDP_SSO: &str = "https://idp.example.test/sso";

/// A browser: no redirects followed, cookies handled by the test.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

struct Setup {
    app: TestApp,
    admin: Persona,
    org: String,
    team: String,
    provider: Value,
}

impl Setup {
    fn id(&self) -> &str {
        self.provider["id"].as_str().unwrap()
    }
    fn acs(&self) -> String {
        self.provider["service"]["acsURL"]
            .as_str()
            .unwrap()
            .to_string()
    }
    fn audience(&self) -> String {
        self.provider["service"]["entityID"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

async fn setup() -> Setup {
    setup_with(IDP_ENTITY, IDP_SSO).await
}

async fn setup_with(entity: &str, sso: &str) -> Setup {
    setup_on(TestApp::start().await, entity, sso).await
}

/// Nodes of one deployment share its public URL (here https, behind a proxy).
async fn setup_behind_https() -> Setup {
    let app =
        TestApp::start_with(|c| c.public_url = Some("https://quire.example.test".into())).await;
    setup_on(app, IDP_ENTITY, IDP_SSO).await
}

async fn setup_on(app: TestApp, entity: &str, sso: &str) -> Setup {
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "SSO Org").await;
    let team = app
        .put(
            &admin,
            &format!("/v1/orgs/{org}/teams"),
            json!({ "title": "Newcomers" }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let provider = app
        .post(
            &admin,
            &format!("/v1/orgs/{org}/saml"),
            json!({
                "label": "Test IdP",
                "entityID": entity,
                "ssoURL": sso,
                "certificate": read("idp.crt"),
                "defaultTeam": team,
                "defaultRole": "edit",
            }),
        )
        .await
        .expect(201);
    Setup {
        app,
        admin,
        org,
        team,
        provider,
    }
}

/// Starts a login; returns the AuthnRequest's id and the identity provider's URL.
async fn start(app: &TestApp, provider: &str) -> (String, url::Url) {
    let res = browser()
        .get(format!("{}/saml/{provider}/start", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 302, "{}", res.text().await.unwrap());
    request_in(res.headers()[LOCATION].to_str().unwrap())
}

/// The AuthnRequest's id in an identity provider's URL, and the URL.
fn request_in(url: &str) -> (String, url::Url) {
    let location = url::Url::parse(url).unwrap();
    let request = location
        .query_pairs()
        .find(|(k, _)| k == "SAMLRequest")
        .expect("SAMLRequest")
        .1
        .into_owned();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(request)
        .unwrap();
    let mut xml = String::new();
    flate2::read::DeflateDecoder::new(&raw[..])
        .read_to_string(&mut xml)
        .expect("deflated request");
    let id = xml
        .split(" ID=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("request ID")
        .to_string();
    (id, location)
}

/// What a test response says; each refusal test changes one field.
#[derive(Clone)]
struct Assertion {
    issuer: String,
    destination: String,
    recipient: String,
    audience: String,
    in_response_to: String,
    email: String,
    /// Seconds from now until the assertion expires.
    lifetime: i64,
    key: &'static str,
    signed: bool,
    assertion_id: String,
}

impl Assertion {
    fn for_setup(s: &Setup, in_response_to: &str, email: &str) -> Self {
        Assertion {
            issuer: IDP_ENTITY.into(),
            destination: s.acs(),
            recipient: s.acs(),
            audience: s.audience(),
            in_response_to: in_response_to.into(),
            email: email.into(),
            lifetime: 300,
            key: "idp.key",
            signed: true,
            assertion_id: format!("_a{}", quire_server::ids::random_string(16)),
        }
    }

    fn assertion_xml(&self, signature: &str) -> String {
        let now = chrono::Utc::now();
        let fmt = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let until = fmt(now + chrono::Duration::seconds(self.lifetime));
        let issued = fmt(now + chrono::Duration::seconds(self.lifetime.min(0) - 1));
        format!(
            "<saml:Assertion xmlns:saml=\"urn:oasis:names:tc:SAML:2.0:assertion\" ID=\"{id}\" Version=\"2.0\" IssueInstant=\"{issued}\">\
<saml:Issuer>{issuer}</saml:Issuer>{signature}\
<saml:Subject><saml:NameID Format=\"urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress\">{email}</saml:NameID>\
<saml:SubjectConfirmation Method=\"urn:oasis:names:tc:SAML:2.0:cm:bearer\">\
<saml:SubjectConfirmationData NotOnOrAfter=\"{until}\" Recipient=\"{recipient}\" InResponseTo=\"{irt}\"/>\
</saml:SubjectConfirmation></saml:Subject>\
<saml:Conditions NotBefore=\"{issued}\" NotOnOrAfter=\"{until}\"><saml:AudienceRestriction>\
<saml:Audience>{audience}</saml:Audience></saml:AudienceRestriction></saml:Conditions>\
<saml:AuthnStatement AuthnInstant=\"{issued}\"><saml:AuthnContext><saml:AuthnContextClassRef>\
urn:oasis:names:tc:SAML:2.0:ac:classes:Password</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>\
<saml:AttributeStatement><saml:Attribute Name=\"displayName\"><saml:AttributeValue>Ada Lovelace</saml:AttributeValue></saml:Attribute></saml:AttributeStatement>\
</saml:Assertion>",
            id = self.assertion_id,
            issuer = self.issuer,
            email = self.email,
            recipient = self.recipient,
            irt = self.in_response_to,
            audience = self.audience,
        )
    }

    /// The response around `assertion`.
    fn response_xml(&self, assertion: &str) -> String {
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ");
        format!(
            "<samlp:Response xmlns:samlp=\"urn:oasis:names:tc:SAML:2.0:protocol\" \
xmlns:saml=\"urn:oasis:names:tc:SAML:2.0:assertion\" ID=\"_r{rid}\" Version=\"2.0\" \
IssueInstant=\"{now}\" Destination=\"{dest}\" InResponseTo=\"{irt}\">\
<saml:Issuer>{issuer}</saml:Issuer><samlp:Status><samlp:StatusCode \
Value=\"urn:oasis:names:tc:SAML:2.0:status:Success\"/></samlp:Status>{assertion}</samlp:Response>",
            rid = quire_server::ids::random_string(16),
            dest = self.destination,
            irt = self.in_response_to,
            issuer = self.issuer,
        )
    }

    /// The signed assertion alone (signed with `self.key` when `self.signed`).
    fn signed_assertion(&self) -> String {
        if !self.signed {
            return self.assertion_xml("");
        }
        let template = self.assertion_xml(&signature_template(&self.assertion_id));
        sign(&template, self.key)
    }

    /// The base64 SAMLResponse.
    fn encoded(&self) -> String {
        b64(&self.response_xml(&self.signed_assertion()))
    }
}

fn b64(xml: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(xml)
}

fn signature_template(reference: &str) -> String {
    format!(
        "<ds:Signature xmlns:ds=\"http://www.w3.org/2000/09/xmldsig#\"><ds:SignedInfo>\
<ds:CanonicalizationMethod Algorithm=\"http://www.w3.org/2001/10/xml-exc-c14n#\"/>\
<ds:SignatureMethod Algorithm=\"http://www.w3.org/2001/04/xmldsig-more#rsa-sha256\"/>\
<ds:Reference URI=\"#{reference}\"><ds:Transforms>\
<ds:Transform Algorithm=\"http://www.w3.org/2000/09/xmldsig#enveloped-signature\"/>\
<ds:Transform Algorithm=\"http://www.w3.org/2001/10/xml-exc-c14n#\"/></ds:Transforms>\
<ds:DigestMethod Algorithm=\"http://www.w3.org/2001/04/xmlenc#sha256\"/><ds:DigestValue></ds:DigestValue>\
</ds:Reference></ds:SignedInfo><ds:SignatureValue></ds:SignatureValue></ds:Signature>"
    )
}

/// Signs a template with one of the test keys.
fn sign(template: &str, key: &str) -> String {
    let pem = read(key);
    let key = bergshamra_keys::loader::load_pem_auto(pem.as_bytes(), None).expect("test key");
    let mut keys = bergshamra_keys::KeysManager::new();
    keys.add_key(key);
    let ctx = bergshamra_dsig::DsigContext::new(keys);
    bergshamra_dsig::sign::sign(&ctx, template).expect("signed")
}

/// What the ACS answered.
struct Answer {
    status: u16,
    headers: HeaderMap,
    text: String,
}

impl Answer {
    fn cookie(&self) -> Option<String> {
        let v = self.headers.get(SET_COOKIE)?.to_str().ok()?;
        Some(v.split(';').next()?.to_string())
    }
}

async fn post_acs(app: &TestApp, provider: &str, encoded: &str) -> Answer {
    let res = browser()
        .post(format!("{}/saml/{provider}/acs", app.base))
        .form(&[("SAMLResponse", encoded), ("RelayState", "/account")])
        .send()
        .await
        .unwrap();
    Answer {
        status: res.status().as_u16(),
        headers: res.headers().clone(),
        text: res.text().await.unwrap(),
    }
}

/// Asserts a refusal page: 4xx HTML naming `why`, no cookie, and no user `email` created.
async fn assert_refused(s: &Setup, answer: &Answer, status: u16, why: &str, email: &str) {
    assert_eq!(answer.status, status, "{}", answer.text);
    assert!(
        answer.headers[CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html"),
        "an HTML page"
    );
    assert!(
        answer.text.contains(why),
        "page should say `{why}`: {}",
        answer.text
    );
    assert!(answer.headers.get(SET_COOKIE).is_none(), "no session");
    let members = s
        .app
        .get(&s.admin, &format!("/v1/orgs/{}/members?limit=100", s.org))
        .await
        .expect(200);
    let emails: Vec<&str> = members["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["user"]["email"].as_str().unwrap_or(""))
        .collect();
    assert!(
        !emails.contains(&email),
        "nothing is created for a refused assertion"
    );
    let users: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users WHERE email = $1")
        .bind(email)
        .fetch_one(s.app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(users, 0, "no user for a refused assertion");
}

async fn account(app: &TestApp, cookie: &str) -> (u16, String) {
    let res = browser()
        .get(format!("{}/account", app.base))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

fn csrf_of(page: &str) -> String {
    page.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("csrf field")
        .to_string()
}

/// Creates a token on the account page; returns the status and the page.
async fn create_token(app: &TestApp, cookie: &str, csrf: &str) -> (u16, String) {
    let res = browser()
        .post(format!("{}/account/tokens", app.base))
        .header("cookie", cookie)
        .header("origin", app.state.public_url.to_string())
        .form(&[("csrf", csrf), ("label", "laptop <b>")])
        .send()
        .await
        .unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

fn token_of(page: &str) -> String {
    page.split("<code id=\"new-token\">")
        .nth(1)
        .and_then(|s| s.split('<').next())
        .expect("new token on the page")
        .to_string()
}

/// A successful login through a response signed here; returns the session cookie.
async fn login(s: &Setup, email: &str) -> String {
    let (request, _) = start(&s.app, s.id()).await;
    let answer = post_acs(
        &s.app,
        s.id(),
        &Assertion::for_setup(s, &request, email).encoded(),
    )
    .await;
    assert_eq!(answer.status, 303, "{}", answer.text);
    answer.cookie().expect("session cookie")
}

#[tokio::test]
async fn providers_are_created_checked_listed_updated_and_deleted() {
    let s = setup().await;
    let (app, admin, org) = (&s.app, &s.admin, &s.org);
    let p = &s.provider;
    assert_eq!(p["object"], "saml-provider");
    assert_eq!(p["status"], "active");
    assert_eq!(p["label"], "Test IdP");
    assert_eq!(p["entityID"], IDP_ENTITY);
    assert_eq!(p["ssoURL"], IDP_SSO);
    assert_eq!(p["defaultRole"], "edit");
    assert_eq!(p["defaultTeam"]["id"], s.team.as_str());
    let id = s.id();
    assert_eq!(
        p["service"]["acsURL"],
        format!("{}/saml/{id}/acs", app.base)
    );
    assert_eq!(
        p["service"]["startURL"],
        format!("{}/saml/{id}/start", app.base)
    );
    assert_eq!(
        p["service"]["entityID"],
        format!("{}/saml/{id}/metadata", app.base)
    );
    assert_eq!(
        p["urls"]["location"],
        format!("{}/v1/orgs/{org}/saml/{id}", app.base)
    );

    // The certificate without its armour is accepted too; a label and the sign-in URL are
    // required, and a provider without the rest is pending.
    let bare: String = read("other.crt")
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let second = app
        .post(
            admin,
            &format!("/v1/orgs/{org}/saml"),
            json!({ "label": "Bare", "ssoURL": IDP_SSO, "certificate": bare, "defaultRole": null }),
        )
        .await
        .expect(201);
    assert_eq!(second["status"], "pending");
    assert_eq!(second["defaultRole"], Value::Null);
    assert!(second.get("defaultTeam").is_none());

    // Refused settings, each naming its field.
    let bad = [
        (json!({ "label": "" }), "label"),
        (json!({ "label": "x".repeat(31) }), "label"),
        (
            json!({ "label": "L", "certificate": "not a certificate" }),
            "certificate",
        ),
        (
            json!({ "label": "L", "certificate": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----" }),
            "certificate",
        ),
        (json!({ "label": "L" }), "ssoURL"),
        (json!({ "label": "L", "ssoURL": "/relative/sso" }), "ssoURL"),
        (
            json!({ "label": "L", "ssoURL": "ftp://idp.example/sso" }),
            "ssoURL",
        ),
        (
            json!({ "label": "L", "entityID": "not absolute" }),
            "entityID",
        ),
        (
            json!({ "label": "L", "defaultTeam": "nosuchteam" }),
            "defaultTeam",
        ),
        (
            json!({ "label": "L", "defaultRole": "owner" }),
            "defaultRole",
        ),
    ];
    for (mut body, field) in bad {
        if field != "ssoURL" {
            body["ssoURL"] = json!(IDP_SSO);
        }
        let message = app
            .post(admin, &format!("/v1/orgs/{org}/saml"), body.clone())
            .await
            .expect_error(400);
        assert!(message.contains(field), "{body}: {message}");
    }
    // Another organization's team is not this one's.
    let other_org = app.org(admin, "Other").await;
    let other_team = app
        .put(
            admin,
            &format!("/v1/orgs/{other_org}/teams"),
            json!({ "title": "Theirs" }),
        )
        .await
        .expect(201)["id"]
        .clone();
    app.post(
        admin,
        &format!("/v1/orgs/{org}/saml"),
        json!({ "label": "L", "defaultTeam": other_team }),
    )
    .await
    .expect_error(400);

    // List, paged.
    let page = app
        .get(admin, &format!("/v1/orgs/{org}/saml?limit=1"))
        .await
        .expect(200);
    assert_eq!(page["count"], 2);
    assert_eq!(page["items"][0]["id"], id);
    let cursor = page["next"]["page"].as_str().unwrap();
    let rest = app
        .get(admin, &format!("/v1/orgs/{org}/saml?limit=1&page={cursor}"))
        .await
        .expect(200);
    assert_eq!(rest["items"][0]["id"], second["id"]);

    // Only the active provider offers a login, to anyone.
    let logins = app
        .call(Method::GET, &format!("/v1/orgs/{org}/sso"), None, None)
        .await
        .expect(200);
    assert_eq!(
        logins,
        json!({ "items": [{ "id": id, "label": "Test IdP", "startURL": p["service"]["startURL"] }] })
    );
    app.call(Method::GET, "/v1/orgs/nosuchorg/sso", None, None)
        .await
        .expect_error(404);

    // A patch changes only what it names.
    let second_id = second["id"].as_str().unwrap();
    let patched = app
        .patch(
            admin,
            &format!("/v1/orgs/{org}/saml/{second_id}"),
            json!({ "entityID": "urn:example:idp", "ssoURL": "https://other.example/sso", "defaultTeam": s.team }),
        )
        .await
        .expect(200);
    assert_eq!(patched["status"], "active");
    assert_eq!(patched["label"], "Bare");
    assert_eq!(patched["certificate"], bare.as_str());
    assert_eq!(patched["defaultRole"], Value::Null);
    assert_eq!(patched["defaultTeam"]["id"], s.team.as_str());
    let cleared = app
        .patch(
            admin,
            &format!("/v1/orgs/{org}/saml/{second_id}"),
            json!({ "label": "Renamed", "defaultTeam": null, "defaultRole": "read" }),
        )
        .await
        .expect(200);
    assert_eq!(cleared["label"], "Renamed");
    assert_eq!(cleared["entityID"], "urn:example:idp");
    assert!(cleared.get("defaultTeam").is_none());
    assert_eq!(cleared["defaultRole"], "read");
    app.patch(
        admin,
        &format!("/v1/orgs/{org}/saml/{second_id}"),
        json!({ "ssoURL": "relative" }),
    )
    .await
    .expect_error(400);
    app.patch(
        admin,
        &format!("/v1/orgs/{org}/saml/nosuch"),
        json!({ "label": "x" }),
    )
    .await
    .expect_error(404);

    // Only admins manage providers.
    let member = app.persona("member").await;
    app.add_member(admin, org, &member, json!("create")).await;
    app.get(&member, &format!("/v1/orgs/{org}/saml"))
        .await
        .expect_error(403);
    app.post(
        &member,
        &format!("/v1/orgs/{org}/saml"),
        json!({ "label": "Mine" }),
    )
    .await
    .expect_error(403);
    app.delete(&member, &format!("/v1/orgs/{org}/saml/{id}"))
        .await
        .expect_error(403);

    // Delete: 204, also when absent; then 404.
    app.delete(admin, &format!("/v1/orgs/{org}/saml/{second_id}"))
        .await
        .expect(204);
    app.delete(admin, &format!("/v1/orgs/{org}/saml/{second_id}"))
        .await
        .expect(204);
    app.get(admin, &format!("/v1/orgs/{org}/saml/{second_id}"))
        .await
        .expect_error(404);
}

#[tokio::test]
async fn metadata_and_start_follow_the_bindings() {
    let s = setup().await;
    let res = browser()
        .get(format!("{}/saml/{}/metadata", s.app.base, s.id()))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()[CONTENT_TYPE], "application/samlmetadata+xml");
    let xml = res.text().await.unwrap();
    assert!(xml.contains(&format!("entityID=\"{}\"", s.audience())));
    assert!(xml.contains(&format!("Location=\"{}\"", s.acs())));
    assert!(xml.contains("urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"));

    let (id, location) = start(&s.app, s.id()).await;
    assert!(location.as_str().starts_with(IDP_SSO));
    assert!(location
        .query_pairs()
        .any(|(k, v)| k == "RelayState" && v == "/account"));
    assert!(id.starts_with("quire-"));
    // Remembered in the database, with an expiry.
    let expires: i64 = sqlx::query_scalar("SELECT expires_at FROM saml_requests WHERE id = $1")
        .bind(&id)
        .fetch_one(s.app.state.db.pool())
        .await
        .unwrap();
    assert!(expires > s.app.state.now());

    // A pending provider, or none, starts nothing.
    let pending = s
        .app
        .post(
            &s.admin,
            &format!("/v1/orgs/{}/saml", s.org),
            json!({ "label": "Pending", "ssoURL": IDP_SSO }),
        )
        .await
        .expect(201);
    let res = browser()
        .get(format!(
            "{}/saml/{}/start",
            s.app.base,
            pending["id"].as_str().unwrap()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 409);
    let res = browser()
        .get(format!("{}/saml/nosuch/start", s.app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    assert!(res.text().await.unwrap().contains("no such SAML provider"));
}

#[tokio::test]
async fn a_login_opens_a_session_that_makes_tokens() {
    let s = setup_behind_https().await;
    let (request, _) = start(&s.app, s.id()).await;
    // Another node finishes the login the first one started.
    let other = s.app.another_node().await;
    let answer = post_acs(
        &other,
        s.id(),
        &Assertion::for_setup(&s, &request, "Ada@Example.com").encoded(),
    )
    .await;
    assert_eq!(answer.status, 303, "{}", answer.text);
    // The login lands in the app, at the organization.
    assert_eq!(answer.headers[LOCATION], format!("/o/{}", s.org).as_str());
    let set_cookie = answer.headers[SET_COOKIE].to_str().unwrap().to_string();
    assert!(set_cookie.contains("HttpOnly"));
    assert!(set_cookie.contains("SameSite=Lax"));
    assert!(set_cookie.contains("; Secure"), "https public URL");
    let cookie = answer.cookie().unwrap();
    let screen = |path: String| {
        let cookie = cookie.clone();
        async move {
            let res = browser()
                .get(path)
                .header("cookie", &cookie)
                .send()
                .await
                .unwrap();
            (res.status().as_u16(), res.text().await.unwrap())
        }
    };
    let (status, page) = screen(format!("{}/o/{}", s.app.base, s.org)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("SSO Org"), "{page}");
    assert!(
        page.contains("href=\"/account\""),
        "the account page holds its tokens: {page}"
    );
    let (status, page) = screen(format!("{}/", s.app.base)).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(&format!("/o/{}", s.org)), "{page}");
    // The account's own sessions are not the organization's to see or end.
    let res = browser()
        .get(format!("{}/account/sessions", s.app.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()[LOCATION], "/account");

    // The user joined with the provider's role and team, as an SSO member.
    let members = s
        .app
        .get(&s.admin, &format!("/v1/orgs/{}/members?limit=100", s.org))
        .await
        .expect(200);
    let ada = members["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["user"]["email"] == "ada@example.com")
        .expect("ada joined");
    assert_eq!(ada["role"], "edit");
    assert_eq!(ada["sso"], true);
    assert_eq!(ada["teams"], 1);
    assert_eq!(ada["user"]["displayName"], "Ada Lovelace");

    // The session is confined to the organization whose login made it: another
    // organization Ada belongs to stays out of the app's reach.
    let other = s.app.org(&s.admin, "Elsewhere").await;
    s.app
        .post(
            &s.admin,
            &format!("/v1/orgs/{other}/invites"),
            json!({ "emails": ["ada@example.com"], "role": "read" }),
        )
        .await
        .expect(200);
    let (status, _) = screen(format!("{}/o/{other}", s.app.base)).await;
    assert_eq!(status, 404);
    let (_, home) = screen(format!("{}/", s.app.base)).await;
    assert!(!home.contains(&format!("/o/{other}")), "{home}");

    // The account page lists the organization; tokens are made and revoked there.
    let res = browser()
        .get(format!("{}/account", s.app.base))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    let csp = res.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("form-action 'self'"));
    assert_eq!(res.headers()["cache-control"], "no-store");
    let (status, page) = account(&s.app, &cookie).await;
    assert_eq!(status, 200, "{page}");
    assert!(!page.contains("<script>"), "no inline script");
    assert!(page.contains("SSO Org"));
    assert!(page.contains("SSO member"));
    let csrf = csrf_of(&page);
    // Without the CSRF token, or from another origin, nothing is created.
    let (status, _) = create_token(&s.app, &cookie, "wrong").await;
    assert_eq!(status, 403);
    let res = browser()
        .post(format!("{}/account/tokens", s.app.base))
        .header("cookie", &cookie)
        .header("origin", "https://evil.example")
        .form(&[("csrf", csrf.as_str()), ("label", "x")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    let (status, page) = create_token(&s.app, &cookie, &csrf).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("laptop &lt;b&gt;"), "labels are escaped");
    let token = token_of(&page);
    let me = s
        .app
        .call(Method::GET, "/v1/user", Some(&token), None)
        .await
        .expect(200);
    assert_eq!(me["email"], "ada@example.com");
    s.app
        .call(
            Method::GET,
            &format!("/v1/orgs/{}/spaces", s.org),
            Some(&token),
            None,
        )
        .await
        .expect(200);

    // Revoked from the page, the token stops working.
    let token_id = page
        .split("data-token=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .unwrap()
        .to_string();
    let res = browser()
        .post(format!("{}/account/tokens/{token_id}/revoke", s.app.base))
        .header("cookie", &cookie)
        .header("origin", s.app.state.public_url.to_string())
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    s.app
        .call(Method::GET, "/v1/user", Some(&token), None)
        .await
        .expect_error(401);

    // Signing out ends the session.
    let res = browser()
        .post(format!("{}/signout", s.app.base))
        .header("cookie", &cookie)
        .header("origin", s.app.state.public_url.to_string())
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    // Signed out, the account screen sends the browser to sign in.
    let (status, _) = account(&s.app, &cookie).await;
    assert_eq!(status, 303);
    let (status, _) = account(&s.app, "quire_app=made-up").await;
    assert_eq!(status, 303);
}

#[tokio::test]
async fn refused_wrong_certificate() {
    let s = setup().await;
    let (request, _) = start(&s.app, s.id()).await;
    let mut a = Assertion::for_setup(&s, &request, "eve@example.com");
    a.key = "other.key";
    let answer = post_acs(&s.app, s.id(), &a.encoded()).await;
    assert_refused(&s, &answer, 403, "does not verify", "eve@example.com").await;
}

#[tokio::test]
async fn refused_unsigned_response() {
    let s = setup().await;
    let (request, _) = start(&s.app, s.id()).await;
    let mut a = Assertion::for_setup(&s, &request, "eve@example.com");
    a.signed = false;
    let answer = post_acs(&s.app, s.id(), &a.encoded()).await;
    assert_refused(&s, &answer, 403, "not signed", "eve@example.com").await;
}

#[tokio::test]
async fn refused_signature_wrapping() {
    let s = setup().await;
    let (request, _) = start(&s.app, s.id()).await;
    // The identity provider signed an assertion for ada; the attacker keeps that signed
    // assertion in the message (so the signature still verifies) and adds their own.
    let genuine = Assertion::for_setup(&s, &request, "ada@example.com");
    let signed = genuine.signed_assertion();
    let mut forged = genuine.clone();
    forged.email = "eve@example.com".into();
    forged.assertion_id = format!("_f{}", quire_server::ids::random_string(8));
    let evil = forged.assertion_xml("");

    // 1. The signed assertion tucked into the response's Extensions, the forged one read.
    let xml = genuine.response_xml(&format!(
        "<samlp:Extensions>{signed}</samlp:Extensions>{evil}"
    ));
    let answer = post_acs(&s.app, s.id(), &b64(&xml)).await;
    assert_refused(&s, &answer, 403, "exactly one assertion", "eve@example.com").await;

    // 2. The forged assertion first, the signed one after it.
    let xml = genuine.response_xml(&format!("{evil}{signed}"));
    let answer = post_acs(&s.app, s.id(), &b64(&xml)).await;
    assert_refused(&s, &answer, 403, "exactly one assertion", "eve@example.com").await;

    // 3. The forged assertion with the signed one's ID, the signed one hidden in its
    //    signature's Object: the signature must not vouch for what is read.
    let mut same_id = forged.clone();
    same_id.assertion_id = genuine.assertion_id.clone();
    let hidden = same_id.assertion_xml(&format!(
        "<ds:Signature xmlns:ds=\"http://www.w3.org/2000/09/xmldsig#\"><ds:Object>{signed}</ds:Object></ds:Signature>"
    ));
    let xml = genuine.response_xml(&hidden);
    let answer = post_acs(&s.app, s.id(), &b64(&xml)).await;
    assert_eq!(answer.status, 403, "{}", answer.text);
    assert_refused(&s, &answer, 403, "Sign-in refused", "eve@example.com").await;

    // 4. A signed assertion whose content was altered after signing.
    let tampered = signed.replace("ada@example.com", "eve@example.com");
    let answer = post_acs(&s.app, s.id(), &b64(&genuine.response_xml(&tampered))).await;
    assert_refused(&s, &answer, 403, "does not verify", "eve@example.com").await;

    // The genuine message still signs ada in: the refusals consumed nothing. Over plain
    // http the cookie is not `Secure`.
    let answer = post_acs(&s.app, s.id(), &b64(&genuine.response_xml(&signed))).await;
    assert_eq!(answer.status, 303, "{}", answer.text);
    let set_cookie = answer.headers[SET_COOKIE].to_str().unwrap();
    assert!(set_cookie.contains("HttpOnly") && !set_cookie.contains("Secure"));
}

#[tokio::test]
async fn refused_expired_assertion() {
    let s = setup().await;
    let (request, _) = start(&s.app, s.id()).await;
    let mut a = Assertion::for_setup(&s, &request, "eve@example.com");
    a.lifetime = -600;
    let answer = post_acs(&s.app, s.id(), &a.encoded()).await;
    assert_refused(&s, &answer, 403, "expired", "eve@example.com").await;
}

#[tokio::test]
async fn refused_wrong_audience() {
    let s = setup().await;
    let (request, _) = start(&s.app, s.id()).await;
    let mut a = Assertion::for_setup(&s, &request, "eve@example.com");
    a.audience = "https://another-sp.example/metadata".into();
    let answer = post_acs(&s.app, s.id(), &a.encoded()).await;
    assert_refused(&s, &answer, 403, "another audience", "eve@example.com").await;
}

#[tokio::test]
async fn refused_wrong_destination() {
    let s = setup().await;
    let (request, _) = start(&s.app, s.id()).await;
    let mut a = Assertion::for_setup(&s, &request, "eve@example.com");
    a.destination = "https://another-sp.example/acs".into();
    let answer = post_acs(&s.app, s.id(), &a.encoded()).await;
    assert_refused(&s, &answer, 403, "Destination", "eve@example.com").await;
    let mut a = Assertion::for_setup(&s, &request, "eve@example.com");
    a.recipient = "https://another-sp.example/acs".into();
    let answer = post_acs(&s.app, s.id(), &a.encoded()).await;
    assert_refused(&s, &answer, 403, "Recipient", "eve@example.com").await;
}

#[tokio::test]
async fn refused_wrong_issuer() {
    let s = setup().await;
    let (request, _) = start(&s.app, s.id()).await;
    let mut a = Assertion::for_setup(&s, &request, "eve@example.com");
    a.issuer = "https://impostor.example/metadata".into();
    let answer = post_acs(&s.app, s.id(), &a.encoded()).await;
    assert_refused(&s, &answer, 403, "Issuer", "eve@example.com").await;
}

#[tokio::test]
async fn refused_replayed_assertion() {
    let s = setup_behind_https().await;
    let (request, _) = start(&s.app, s.id()).await;
    let encoded = Assertion::for_setup(&s, &request, "ada@example.com").encoded();
    let first = post_acs(&s.app, s.id(), &encoded).await;
    assert_eq!(first.status, 303, "{}", first.text);
    // Replayed on another node: the record of used assertions is shared.
    let other = s.app.another_node().await;
    let again = post_acs(&other, s.id(), &encoded).await;
    assert_eq!(again.status, 403, "{}", again.text);
    assert!(again.text.contains("already used"), "{}", again.text);
    assert!(again.headers.get(SET_COOKIE).is_none());
    let sessions: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM app_sessions")
        .fetch_one(s.app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(sessions, 1, "the replay opened no session");
}

#[tokio::test]
async fn refused_unknown_in_response_to() {
    let s = setup().await;
    let a = Assertion::for_setup(&s, "quire-neverasked", "eve@example.com");
    let answer = post_acs(&s.app, s.id(), &a.encoded()).await;
    assert_refused(
        &s,
        &answer,
        403,
        "no pending login request",
        "eve@example.com",
    )
    .await;
    // A request of another provider does not count either.
    let other = s
        .app
        .post(
            &s.admin,
            &format!("/v1/orgs/{}/saml", s.org),
            json!({ "label": "Second", "entityID": IDP_ENTITY, "ssoURL": IDP_SSO, "certificate": read("idp.crt") }),
        )
        .await
        .expect(201);
    let (foreign, _) = start(&s.app, other["id"].as_str().unwrap()).await;
    let a = Assertion::for_setup(&s, &foreign, "eve@example.com");
    let answer = post_acs(&s.app, s.id(), &a.encoded()).await;
    assert_refused(
        &s,
        &answer,
        403,
        "no pending login request",
        "eve@example.com",
    )
    .await;
}

#[tokio::test]
async fn refused_after_the_provider_is_deleted() {
    let s = setup().await;
    let (request, _) = start(&s.app, s.id()).await;
    let encoded = Assertion::for_setup(&s, &request, "eve@example.com").encoded();
    s.app
        .delete(&s.admin, &format!("/v1/orgs/{}/saml/{}", s.org, s.id()))
        .await
        .expect(204);
    let answer = post_acs(&s.app, s.id(), &encoded).await;
    assert_refused(&s, &answer, 404, "no such SAML provider", "eve@example.com").await;
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM saml_requests WHERE provider_id = $1")
        .bind(s.id())
        .fetch_one(s.app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(left, 0, "its pending requests went with it");
}

#[tokio::test]
async fn refused_malformed_posts() {
    let s = setup().await;
    let cases = [
        ("", 400, "no SAMLResponse"),
        ("%%%", 400, "not base64"),
        (
            &b64("<!DOCTYPE x [<!ENTITY a \"b\">]><x>&a;</x>"),
            400,
            "not well-formed",
        ),
        (&b64(&"<a>".repeat(100)), 400, "not well-formed"),
        (
            &b64("<samlp:AuthnRequest xmlns:samlp=\"urn:oasis:names:tc:SAML:2.0:protocol\"/>"),
            400,
            "not a SAML Response",
        ),
    ];
    for (encoded, status, why) in cases {
        let answer = post_acs(&s.app, s.id(), encoded).await;
        assert_eq!(answer.status, status, "{why}: {}", answer.text);
        assert!(answer.text.contains(why), "{why}: {}", answer.text);
    }
}

/// A second provider on another node of `s.app` (which must have a public URL, shared by its
/// nodes), in a new organization of a new admin `admin_name`.
async fn another_setup(s: &Setup, admin_name: &str, org_title: &str) -> Setup {
    let admin = s.app.persona(admin_name).await;
    let org = s.app.org(&admin, org_title).await;
    let provider = s
        .app
        .post(
            &admin,
            &format!("/v1/orgs/{org}/saml"),
            json!({ "label": "Elsewhere", "entityID": IDP_ENTITY, "ssoURL": IDP_SSO, "certificate": read("idp.crt") }),
        )
        .await
        .expect(201);
    Setup {
        app: s.app.another_node().await,
        admin,
        org,
        team: String::new(),
        provider,
    }
}

/// The ACS's answer to an assertion of `email` for a fresh login request.
async fn sign_in(s: &Setup, email: &str) -> Answer {
    let (request, _) = start(&s.app, s.id()).await;
    post_acs(
        &s.app,
        s.id(),
        &Assertion::for_setup(s, &request, email).encoded(),
    )
    .await
}

async fn count(app: &TestApp, sql: &str, bind: &str) -> i64 {
    sqlx::query_scalar(sql)
        .bind(bind)
        .fetch_one(app.state.db.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn an_outsiders_provider_cannot_sign_in_as_an_account_of_its_own() {
    let s = setup().await;
    // The victim: an account made by `quire admin`, with a private space in its own
    // organization.
    let victim = s.app.persona("victim").await;
    let home = s.app.org(&victim, "Victim Org").await;
    let space = s.app.space(&victim, &home, "Private plans", None).await;
    // The outsider administers `s.org` and holds its provider's key: they sign an assertion
    // naming the victim's address.
    let answer = sign_in(&s, &victim.email).await;
    assert_eq!(answer.status, 403, "{}", answer.text);
    assert!(
        answer.text.contains("already exists and has not linked"),
        "{}",
        answer.text
    );
    assert!(answer.headers.get(SET_COOKIE).is_none(), "no session");
    let sessions = count(
        &s.app,
        "SELECT COUNT(*) FROM app_sessions WHERE user_id = $1",
        &victim.id,
    )
    .await;
    assert_eq!(sessions, 0);
    let memberships = count(
        &s.app,
        "SELECT COUNT(*) FROM members WHERE user_id = $1",
        &victim.id,
    )
    .await;
    assert_eq!(memberships, 1, "the victim joined nothing");
    // The address in another case is the same account.
    let answer = sign_in(&s, &victim.email.to_uppercase()).await;
    assert_eq!(answer.status, 403, "{}", answer.text);
    s.app
        .get(&victim, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
}

#[tokio::test]
async fn an_account_made_by_one_organizations_sso_is_not_opened_by_another() {
    let s = setup_behind_https().await;
    // Ada's account is made by the first organization's single sign-on.
    login(&s, "ada@example.com").await;
    let s2 = another_setup(&s, "mallory", "Elsewhere").await;
    let answer = sign_in(&s2, "ada@example.com").await;
    assert_eq!(answer.status, 403, "{}", answer.text);
    assert!(answer.text.contains("has not linked"), "{}", answer.text);
    // Her own organization's provider still signs her in, to the same account.
    let again = sign_in(&s, "ADA@example.com").await;
    assert_eq!(again.status, 303, "{}", again.text);
    let users = count(
        &s.app,
        "SELECT COUNT(*) FROM users WHERE email = $1",
        "ada@example.com",
    )
    .await;
    assert_eq!(users, 1);
}

/// Starts a link of provider `provider` to the account of `token`: the identity provider's
/// URL and the request id in it.
async fn start_link(app: &TestApp, provider: &str, token: &str) -> (u16, Value) {
    let res = browser()
        .post(format!("{}/saml/{provider}/link", app.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (
        res.status().as_u16(),
        res.json().await.unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn a_linked_account_signs_in_and_its_session_reaches_only_that_organization() {
    let s = setup().await;
    // The account owner: made by `quire admin`, admin of their own organization with
    // content of every kind, and a colleague there.
    let owner = s.app.persona("owner").await;
    let colleague = s.app.persona("colleague").await;
    let home = s.app.org(&owner, "Home").await;
    s.app
        .add_member(&owner, &home, &colleague, json!("edit"))
        .await;
    s.app.get(&colleague, "/v1/user").await.expect(200);
    let space = s.app.space(&owner, &home, "Home space", None).await;
    let collection = s
        .app
        .collection(&owner, &home, "Home collection", None)
        .await;
    let cr = s.app.open_change_request(&owner, &space, "Draft").await;
    let team = s
        .app
        .put(
            &owner,
            &format!("/v1/orgs/{home}/teams"),
            json!({ "title": "Core" }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let site = s
        .app
        .post(
            &owner,
            &format!("/v1/orgs/{home}/sites"),
            json!({ "title": "Home docs", "spaces": [space] }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let comment = s
        .app
        .post(
            &owner,
            &format!("/v1/spaces/{space}/comments"),
            json!({ "body": { "markdown": "hello" } }),
        )
        .await
        .expect(200)["id"]
        .as_str()
        .unwrap_or("someid")
        .to_string();

    // A link is started with a token of the account's own; without one, nothing.
    let (status, _) = start_link(&s.app, s.id(), "quire_made-up").await;
    assert_eq!(status, 401);
    let (status, body) = start_link(&s.app, "nosuchprovider", &owner.token).await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], 404);
    // The provider must assert the account's own address.
    let (status, body) = start_link(&s.app, s.id(), &owner.token).await;
    assert_eq!(status, 200, "{body}");
    let (request, _) = request_in(body["url"].as_str().unwrap());
    let wrong = post_acs(
        &s.app,
        s.id(),
        &Assertion::for_setup(&s, &request, "someone-else@example.com").encoded(),
    )
    .await;
    assert_eq!(wrong.status, 403, "{}", wrong.text);
    assert!(wrong
        .text
        .contains("not the address of the account to link"));
    let linked = post_acs(
        &s.app,
        s.id(),
        &Assertion::for_setup(&s, &request, &owner.email).encoded(),
    )
    .await;
    assert_eq!(linked.status, 303, "{}", linked.text);

    // From now on the provider signs the owner in, without a link.
    let answer = sign_in(&s, &owner.email).await;
    assert_eq!(answer.status, 303, "{}", answer.text);
    let cookie = answer.cookie().unwrap();
    let (status, page) = account(&s.app, &cookie).await;
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("SSO Org"), "{page}");
    assert!(
        !page.contains("Home"),
        "the session shows nothing beyond its organization"
    );
    let (status, page) = create_token(&s.app, &cookie, &csrf_of(&page)).await;
    assert_eq!(status, 200, "{page}");
    let token = token_of(&page);
    let me = s
        .app
        .call(Method::GET, "/v1/user", Some(&token), None)
        .await
        .expect(200);
    assert_eq!(me["id"], json!(owner.id));
    // The session's organization is reachable…
    s.app
        .call(
            Method::GET,
            &format!("/v1/orgs/{}/spaces", s.org),
            Some(&token),
            None,
        )
        .await
        .expect(200);
    let orgs = s
        .app
        .call(Method::GET, "/v1/orgs", Some(&token), None)
        .await
        .expect(200);
    let listed: Vec<&str> = orgs["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, vec![s.org.as_str()], "{orgs}");
    assert_eq!(orgs["count"], json!(1));

    // …and no operation of the API reaches the owner's own organization.
    let ids = [
        ("organizationId", home.as_str()),
        ("spaceId", space.as_str()),
        ("collectionId", collection.as_str()),
        ("changeRequestId", cr.as_str()),
        ("teamId", team.as_str()),
        ("siteId", site.as_str()),
        ("commentId", comment.as_str()),
        ("userId", colleague.id.as_str()),
        ("emailDomain", "example.com"),
    ];
    // Operations that answer about the caller alone.
    let about_self = [
        "getApiInformation",
        "getAuthenticatedUser",
        "listOrganizationsForAuthenticatedUser",
        "getOrganizationsForEmailDomain",
    ];
    for r in quire_server::api::operations() {
        let path = r
            .path
            .split('/')
            .map(|seg| {
                let name = seg
                    .trim_start_matches("{*")
                    .trim_start_matches('{')
                    .trim_end_matches('}');
                if seg.starts_with('{') {
                    ids.iter()
                        .find(|(k, _)| *k == name)
                        .map_or("someid", |(_, v)| v)
                } else {
                    seg
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        let method = Method::from_bytes(r.method.as_str().as_bytes()).unwrap();
        let res = s
            .app
            .call(method.clone(), &path, Some(&token), Some(json!({})))
            .await;
        let text = res.body.to_string();
        // An error names the ids of its path; any other answer names nothing of the home
        // organization.
        assert!(
            res.status >= 400
                || !(text.contains(&home)
                    || text.contains("Home space")
                    || text.contains(&colleague.email)),
            "{method} {path} ({}) showed the other organization: {text}",
            r.operation
        );
        if about_self.contains(&r.operation)
            || r.access == quire_server::http::operation::Access::Public
        {
            continue;
        }
        let ok = res.status < 300;
        assert!(
            !ok || (method == Method::DELETE && res.status == 204),
            "{method} {path} ({}) answered {}: {text}",
            r.operation,
            res.status
        );
    }
    // Deletes answered 204 as for absent targets, and changed nothing.
    s.app
        .get(&owner, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    s.app
        .get(&owner, &format!("/v1/collections/{collection}"))
        .await
        .expect(200);
    s.app
        .get(&owner, &format!("/v1/orgs/{home}/sites/{site}"))
        .await
        .expect(200);
    s.app
        .get(&owner, &format!("/v1/orgs/{home}/teams/{team}"))
        .await
        .expect(200);
    s.app
        .get(&owner, &format!("/v1/spaces/{space}/change-requests/{cr}"))
        .await
        .expect(200);
    let members = s
        .app
        .get(&owner, &format!("/v1/orgs/{home}/members?limit=100"))
        .await
        .expect(200);
    assert_eq!(members["count"], json!(2), "{members}");
    // The token cannot make a new organization of its own either (checked above), nor
    // change the account's profile.
    s.app
        .call(
            Method::PATCH,
            &format!("/v1/users/{}", owner.id),
            Some(&token),
            Some(json!({ "displayName": "Renamed" })),
        )
        .await
        .expect_error(403);
}

#[tokio::test]
async fn the_account_page_links_another_provider_within_its_session() {
    let s = setup_behind_https().await;
    let cookie = login(&s, "ada@example.com").await;
    let s2 = another_setup(&s, "bea", "Second").await;
    // Refused before linking.
    assert_eq!(sign_in(&s2, "ada@example.com").await.status, 403);
    let (_, page) = account(&s.app, &cookie).await;
    let csrf = csrf_of(&page);
    // Without the session's CSRF token, nothing starts.
    let res = browser()
        .post(format!("{}/account/link", s.app.base))
        .header("cookie", &cookie)
        .header("origin", s.app.state.public_url.to_string())
        .form(&[("csrf", "wrong"), ("provider", s2.id())])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    let res = browser()
        .post(format!("{}/account/link", s.app.base))
        .header("cookie", &cookie)
        .header("origin", s.app.state.public_url.to_string())
        .form(&[("csrf", csrf.as_str()), ("provider", s2.id())])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    let (request, idp) = request_in(res.headers()[LOCATION].to_str().unwrap());
    assert!(idp.as_str().starts_with(IDP_SSO));
    let answer = post_acs(
        &s2.app,
        s2.id(),
        &Assertion::for_setup(&s2, &request, "ada@example.com").encoded(),
    )
    .await;
    assert_eq!(answer.status, 303, "{}", answer.text);
    // The second organization's provider now signs Ada in, confined to that organization.
    let answer = sign_in(&s2, "ada@example.com").await;
    assert_eq!(answer.status, 303, "{}", answer.text);
    let (_, page) = account(&s2.app, &answer.cookie().unwrap()).await;
    assert!(
        page.contains("Second") && !page.contains("SSO Org"),
        "{page}"
    );
}

/// The Python interpreter with pysaml2, and whether xmlsec1 is there; `None` (with a
/// notice) when the real identity provider cannot run here.
fn python_idp() -> Option<String> {
    let python = std::env::var("QUIRE_SAML_PYTHON").unwrap_or_else(|_| "python3".into());
    let ok = std::process::Command::new(&python)
        .args([
            "-c",
            "import saml2; from saml2.sigver import get_xmlsec_binary; get_xmlsec_binary()",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some(python)
    } else if std::env::var_os("QUIRE_REQUIRE_SAML_IDP").is_some() {
        panic!("QUIRE_REQUIRE_SAML_IDP is set but `{python}` lacks pysaml2 or xmlsec1");
    } else {
        eprintln!(
            "NOTICE: the SAML round trip against pysaml2 is skipped: `{python}` lacks pysaml2 or \
             xmlsec1 (scripts/test.sh installs them; QUIRE_SAML_PYTHON names the interpreter)"
        );
        None
    }
}

/// A running test identity provider.
struct Idp {
    child: std::process::Child,
    base: String,
}

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_idp(python: &str, email: &str, sign_response: bool) -> Idp {
    use std::io::BufRead;
    let dir = idp_dir();
    let mut cmd = std::process::Command::new(python);
    cmd.arg(dir.join("idp.py"))
        .arg("--key")
        .arg(dir.join("idp.key"))
        .arg("--cert")
        .arg(dir.join("idp.crt"))
        .arg("--email")
        .arg(email)
        .arg("--name")
        .arg("Grace Hopper")
        .stdout(std::process::Stdio::piped());
    if sign_response {
        cmd.arg("--sign-response");
    }
    let mut child = cmd.spawn().expect("IdP starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("IdP prints its port");
    let port = line
        .trim()
        .strip_prefix("port ")
        .expect("port line")
        .to_string();
    Idp {
        child,
        base: format!("http://127.0.0.1:{port}"),
    }
}

/// The whole login against pysaml2: start → IdP → ACS → session → token → API call.
async fn round_trip(sign_response: bool) {
    let Some(python) = python_idp() else { return };
    let email = "grace@example.com";
    let idp = start_idp(&python, email, sign_response);
    let s = setup_with(&format!("{}/idp", idp.base), &format!("{}/sso", idp.base)).await;
    let client = browser();
    let (_, to_idp) = start(&s.app, s.id()).await;
    // The identity provider signs the user in at once and answers its auto-posting form.
    let res = client.get(to_idp).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let form = res.text().await.unwrap();
    let field = |name: &str| {
        form.split(&format!("name=\"{name}\" value=\""))
            .nth(1)
            .and_then(|s| s.split('"').next())
            .map(|s| s.replace("&quot;", "\"").replace("&amp;", "&"))
    };
    let action = form
        .split("action=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("form action")
        .replace("&amp;", "&");
    assert_eq!(action, s.acs());
    let response = field("SAMLResponse").expect("SAMLResponse");
    let relay = field("RelayState").expect("RelayState kept");
    assert_eq!(relay, "/account");
    let res = client
        .post(&action)
        .form(&[
            ("SAMLResponse", response.as_str()),
            ("RelayState", relay.as_str()),
        ])
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    assert_eq!(status, 303, "{}", res.text().await.unwrap());
    let cookie = headers[SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    let (status, page) = account(&s.app, &cookie).await;
    assert_eq!(status, 200);
    assert!(page.contains("Grace Hopper"), "{page}");
    let (status, page) = create_token(&s.app, &cookie, &csrf_of(&page)).await;
    assert_eq!(status, 200, "{page}");
    let token = token_of(&page);
    let me = s
        .app
        .call(Method::GET, "/v1/user", Some(&token), None)
        .await
        .expect(200);
    assert_eq!(me["email"], email);
    let member = s
        .app
        .call(
            Method::GET,
            &format!("/v1/orgs/{}/members/{}", s.org, me["id"].as_str().unwrap()),
            Some(&token),
            None,
        )
        .await
        .expect(200);
    assert_eq!(member["sso"], true);
    assert_eq!(member["role"], "edit");
    // The same response posted again is refused.
    let again = post_acs(&s.app, s.id(), &response).await;
    assert_eq!(again.status, 403, "{}", again.text);
}

#[tokio::test]
async fn round_trip_with_pysaml2_signing_the_assertion() {
    round_trip(false).await;
}

#[tokio::test]
async fn round_trip_with_pysaml2_signing_the_response() {
    round_trip(true).await;
}

#[tokio::test]
async fn refused_sha1_signature() {
    let s = setup().await;
    let (request, _) = start(&s.app, s.id()).await;
    let a = Assertion::for_setup(&s, &request, "eve@example.com");
    let template = a.assertion_xml(
        &signature_template(&a.assertion_id)
            .replace(
                "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256",
                "http://www.w3.org/2000/09/xmldsig#rsa-sha1",
            )
            .replace(
                "http://www.w3.org/2001/04/xmlenc#sha256",
                "http://www.w3.org/2000/09/xmldsig#sha1",
            ),
    );
    let signed = sign(&template, "idp.key");
    let answer = post_acs(&s.app, s.id(), &b64(&a.response_xml(&signed))).await;
    assert_refused(&s, &answer, 403, "SHA-256 or stronger", "eve@example.com").await;
}

#[tokio::test]
async fn a_response_signed_as_a_whole_document_is_accepted() {
    let s = setup().await;
    let (request, _) = start(&s.app, s.id()).await;
    let mut a = Assertion::for_setup(&s, &request, "ada@example.com");
    a.signed = false;
    // The signature sits in the response, after its issuer, and signs the document (`URI=""`).
    let unsigned = a.response_xml(&a.signed_assertion());
    let template = unsigned.replacen(
        "</saml:Issuer>",
        &format!(
            "</saml:Issuer>{}",
            signature_template("").replace("URI=\"#\"", "URI=\"\"")
        ),
        1,
    );
    let signed = sign(&template, "idp.key");
    // Changed after signing, it is refused.
    let tampered = signed.replace("ada@example.com", "eve@example.com");
    let answer = post_acs(&s.app, s.id(), &b64(&tampered)).await;
    assert_refused(&s, &answer, 403, "does not verify", "eve@example.com").await;
    let answer = post_acs(&s.app, s.id(), &b64(&signed)).await;
    assert_eq!(answer.status, 303, "{}", answer.text);
}

#[tokio::test]
async fn first_logins_of_one_new_address_at_once_make_one_user() {
    let s = setup().await;
    let email = "twin@idp.example";
    // Eight logins of one address the server has never seen, posted at once.
    let mut encoded = Vec::new();
    for _ in 0..8 {
        let (request, _) = start(&s.app, s.id()).await;
        encoded.push(Assertion::for_setup(&s, &request, email).encoded());
    }
    let answers =
        futures_util::future::join_all(encoded.iter().map(|e| post_acs(&s.app, s.id(), e))).await;
    for answer in &answers {
        assert_eq!(answer.status, 303, "{}", answer.text);
        assert!(answer.cookie().is_some());
    }
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM users WHERE email = $1")
        .bind(email)
        .fetch_one(s.app.state.db.pool())
        .await
        .unwrap();
    assert_eq!(n, 1);
}

/// A token made by one organization's sign-in does not accept another organization's
/// invitations for the account's address on its first use: they stay pending.
#[tokio::test]
async fn a_confined_tokens_first_use_accepts_no_other_organizations_invitation() {
    let s = setup_behind_https().await;
    let s2 = another_setup(&s, "bea", "Second").await;
    s.app
        .post(
            &s2.admin,
            &format!("/v1/orgs/{}/invites", s2.org),
            json!({ "emails": ["ada@example.com"], "role": "admin" }),
        )
        .await
        .expect(200);
    let cookie = login(&s, "ada@example.com").await;
    let (_, page) = account(&s.app, &cookie).await;
    let (status, page) = create_token(&s.app, &cookie, &csrf_of(&page)).await;
    assert_eq!(status, 200, "{page}");
    let token = token_of(&page);
    s.app
        .call(Method::GET, "/v1/user", Some(&token), None)
        .await
        .expect(200);
    let members = s
        .app
        .get(&s2.admin, &format!("/v1/orgs/{}/members?limit=100", s2.org))
        .await
        .expect(200);
    assert!(
        !members.to_string().contains("ada@example.com"),
        "{members}"
    );
    assert_eq!(
        count(
            &s.app,
            "SELECT COUNT(*) FROM pending_invites WHERE org_id = $1",
            &s2.org
        )
        .await,
        1,
        "the invitation is still pending"
    );
}

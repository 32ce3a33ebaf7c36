//! Every route the app declares (`quire_server::app::routes::ROUTES`), requested as every
//! persona: the answer must be what the route's declared access says. A route added to the
//! table is in this matrix without a line here, unless it names a parameter the matrix has
//! no value for (the test then says which).

use quire_server::app::routes::{Access, ROUTES};
use quire_server::domain::access::Role;
use serde_json::json;

use crate::app::{sign_in, signed_in, Browser, Page};
use crate::harness::TestApp;

/// Who asks.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Who {
    Anonymous,
    /// Signed in, in no organization.
    Outsider,
    /// The organization's reader.
    Reader,
    /// The organization's editor.
    Editor,
    /// The organization's admin.
    OrgAdmin,
    /// An administrator of the server, not in the organization.
    ServerAdmin,
}

/// Whether the declaration lets `who` through.
fn allowed(access: Access, who: Who) -> bool {
    use Who::*;
    let role = match who {
        Reader => Some(Role::Read),
        Editor => Some(Role::Edit),
        OrgAdmin => Some(Role::Admin),
        _ => None,
    };
    match access {
        Access::Anyone => true,
        Access::SignedIn => who != Anonymous,
        Access::ServerAdmin => who == ServerAdmin,
        Access::Org | Access::OrgMember | Access::Collection => role.is_some(),
        Access::OrgAdmin => role == Some(Role::Admin),
        Access::Space(needed) => role.is_some_and(|r| r >= needed),
    }
}

/// Whether `who` sees what the route is about (its organization, collection or space), if
/// not at the role it needs: refused with 403 then, rather than answered as missing.
fn sees(access: Access, who: Who) -> bool {
    !matches!(access, Access::ServerAdmin)
        && matches!(who, Who::Reader | Who::Editor | Who::OrgAdmin)
}

/// The guard's answer to a signed-in person the route is not for.
const HIDDEN: &str = "This page does not exist, or you may not see it.";

#[tokio::test]
async fn every_screen_and_action_answers_every_persona_as_its_route_declares() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let bob = app.persona("bob").await;
    let carol = app.persona("carol").await;
    app.persona("dave").await;
    let org = app.org(&alice, "Matrix").await;
    app.add_member(&alice, &org, &bob, json!("read")).await;
    app.add_member(&alice, &org, &carol, json!("edit")).await;
    let space = app.space(&alice, &org, "Docs", None).await;
    let cr = app.open_change_request(&alice, &space, "A change").await;
    let cr = app
        .get(&alice, &format!("/v1/spaces/{space}/change-requests/{cr}"))
        .await
        .expect(200)["number"]
        .to_string();
    let collection = app
        .post(
            &alice,
            &format!("/v1/orgs/{org}/collections"),
            json!({ "title": "Product" }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let site = app
        .post(
            &alice,
            &format!("/v1/orgs/{org}/sites"),
            json!({ "title": "Public docs", "spaces": [space] }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.post(
        &alice,
        &format!("/v1/orgs/{org}/openapi"),
        json!({ "slug": "pets", "source": { "text": "openapi: 3.0.3\ninfo: {title: Pets, version: '1'}\npaths: {}\n" } }),
    )
    .await
    .expect(201);

    let revision = app
        .get(&alice, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200)["id"]
        .as_str()
        .unwrap()
        .to_string();
    // A value for every parameter a route may name; `None` where the matrix names nothing
    // that exists (a screen of a missing file answers its own 404, not the guard's).
    let value = |name: &str| -> Option<String> {
        Some(match name {
            "organizationId" => org.clone(),
            "spaceId" => space.clone(),
            "collectionId" => collection.clone(),
            "siteId" => site.clone(),
            "specSlug" => "pets".into(),
            "number" => cr.clone(),
            "revision" => revision.clone(),
            "tokenId" | "sessionId" | "samlProviderId" | "secret" | "inviteId" | "fileId"
            | "name" | "pageId" | "path" | "action" => return None,
            other => panic!("the matrix has no value for the route parameter `{other}`: add one"),
        })
    };

    let mut browsers = signed_in(&app, &["alice", "bob", "carol", "dave"]).await;
    let root = sign_in(&app, "root", true).await;
    let dave = browsers.pop().unwrap();
    let carol = browsers.pop().unwrap();
    let bob = browsers.pop().unwrap();
    let alice = browsers.pop().unwrap();
    let mut personas = [
        (Who::Anonymous, Browser::new(&app)),
        (Who::Outsider, dave),
        (Who::Reader, bob),
        (Who::Editor, carol),
        (Who::OrgAdmin, alice),
        (Who::ServerAdmin, root),
    ];

    let mut wrong = Vec::new();
    for route in ROUTES {
        let mut real = true;
        let path = route
            .path
            .split('/')
            .map(
                |seg| match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    Some(name) => value(name.trim_start_matches('*')).unwrap_or_else(|| {
                        real = false;
                        "not-there".into()
                    }),
                    None => seg.to_string(),
                },
            )
            .collect::<Vec<_>>()
            .join("/");
        for (who, browser) in personas.iter_mut() {
            let who = *who;
            // Forms carry a token no session has: an action the person may reach is
            // refused by its own CSRF check, so nothing is changed (not even a sign-out).
            let page = if route.method == "GET" {
                browser.get(&path).await
            } else {
                browser.post(&path, &[("csrf", "not-the-session-s")]).await
            };
            let to_signin = page.status == 303
                && page
                    .location
                    .as_deref()
                    .is_some_and(|l| l.starts_with("/signin"));
            let hidden = page.status == 404 && page.html.contains(HIDDEN);
            let refused = page.status == 403 && page.html.contains("<h1>Not allowed</h1>");
            let expected = allowed(route.access, who);
            let ok = match (expected, who) {
                _ if page.status >= 500 => false,
                (false, Who::Anonymous) => to_signin,
                (false, _) if sees(route.access, who) => refused,
                (false, _) => hidden,
                // A screen the person may see shows (or leads on to another of its own).
                (true, Who::Anonymous) => !hidden && !refused,
                (true, _) if route.access == Access::Anyone => !hidden && !refused,
                (true, _) if route.method == "GET" && real => {
                    page.status == 200 || (page.status == 303 && !to_signin)
                }
                (true, _) => !hidden && !refused && !to_signin,
            };
            if !ok {
                wrong.push(format!(
                    "{} {path} ({:?}) as {who:?}: {} {}",
                    route.method,
                    route.access,
                    page.status,
                    summary(&page)
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// What an answer was, in a line: where it leads, or its page's first heading.
fn summary(page: &Page) -> String {
    if let Some(l) = &page.location {
        return format!("to {l}");
    }
    let h1 = page
        .html
        .split("<h1>")
        .nth(1)
        .and_then(|h| h.split("</h1>").next())
        .unwrap_or("");
    let alert = page
        .html
        .split("role=\"alert\">")
        .nth(1)
        .and_then(|h| h.split('<').next())
        .unwrap_or("");
    format!("{h1}: {alert}")
}

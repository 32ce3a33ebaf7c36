//! One search everywhere: the same words over the same content give the same pages in the
//! same order through every surface that searches — `searchSpaceContent`,
//! `searchOrganizationContent`, the app's space and organization search screens, quick
//! find, and the published site's search (its `~search` page as JSON, `searchSiteContent`
//! and its MCP server's tool), which differs only by what the visitor's conditions hide.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::app::{sign_in, Browser};
use crate::harness::{id, Persona, TestApp};
use crate::search::enc;

/// The word that only a block behind a visitor's claim holds.
const SECRET: &str = "quokka";

/// A dozen pages whose ranking is not trivial: titles sharing words, bodies repeating them,
/// a phrase in a heading and in text, words that a prefix completes, and a block hidden from
/// a site's visitors (the only place of [`SECRET`]).
const PAGES: &[(&str, &str)] = &[
    (
        "Webhooks",
        "Webhooks notify your server when events happen. Configure a webhook endpoint in the dashboard.\n\n## Retry policy\n\nFailed webhook deliveries follow the retry policy: five attempts with backoff.\n",
    ),
    (
        "Webhook signatures",
        "Every webhook carries a signature. Verify the signature before trusting the payload.\n",
    ),
    (
        "Webhook retries",
        "Retries happen when a delivery fails. The policy on a retry is fixed: each retry waits longer.\n",
    ),
    (
        "Events",
        "Events are sent to webhooks. Each event has a type. Event types: created, updated, deleted. Events arrive in order, and events repeat.\n",
    ),
    (
        "Deployment",
        "Deploy the service with one command. Deploying takes a minute.\n\n## Configuration\n\nConfigure the deployment through environment variables.\n",
    ),
    (
        "Deploy to production",
        "Production deploys need an approval. Configuration files live in the repository.\n",
    ),
    (
        "Configuration reference",
        "Every configuration key with its default value. The config file is written in YAML; configuration changes apply at once.\n",
    ),
    (
        "Retry policy",
        "How clients retry requests: the policy is exponential backoff. Limits on each retry apply to every client.\n",
    ),
    (
        "Rate limits",
        "Requests beyond the limit are refused; retry after the delay. The retry header says when.\n",
    ),
    (
        "Billing",
        "Invoices are issued monthly. Payment by card or by transfer.\n",
    ),
    (
        "Plans",
        "Everyone reads about our plans here.\n\n{% if visitor.claims.pro %}\nThe quokka tier is for pro visitors.\n{% endif %}\n",
    ),
    (
        "Glossary",
        "Webhook: a callback over HTTP. Deployment: a release going live. Retry: another attempt. Policy: a rule.\n",
    ),
];

/// Queries, each as typed: a word being typed (its completions count) and the same word
/// complete (a space after it), several words, a quoted phrase, and the hidden word.
const QUERIES: &[&str] = &[
    "webhook",
    "webhook signature",
    "retry policy",
    "retry policy ",
    "\"retry policy\"",
    "conf",
    "conf ",
    "deplo",
    "events",
    "plans",
    SECRET,
];

/// The pages of a space: (id, title, path).
async fn pages_of(app: &TestApp, who: &Persona, space: &str) -> Vec<(String, String, String)> {
    let content = app
        .get(who, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    content["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let s = |k: &str| p[k].as_str().unwrap().to_string();
            (s("id"), s("title"), s("path"))
        })
        .collect()
}

/// `searchSpaceContent`: page ids, best first, and the count.
async fn api_space(app: &TestApp, who: &Persona, space: &str, q: &str) -> (Vec<String>, i64) {
    let res = app
        .get(who, &format!("/v1/spaces/{space}/search?query={}", enc(q)))
        .await
        .expect(200);
    let ids = res["items"].as_array().unwrap().iter().map(id).collect();
    (ids, res["count"].as_i64().unwrap())
}

/// The groups of an answer grouped by space (`searchOrganizationContent`,
/// `searchSiteContent`): (space id, page ids), in order.
fn groups(res: &Value) -> Vec<(String, Vec<String>)> {
    res["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{res}"))
        .iter()
        .map(|g| {
            let pages = g["pages"].as_array().unwrap().iter().map(id).collect();
            (id(g), pages)
        })
        .collect()
}

/// `searchOrganizationContent`'s groups.
async fn api_org(app: &TestApp, who: &Persona, org: &str, q: &str) -> Vec<(String, Vec<String>)> {
    groups(
        &app.get(who, &format!("/v1/orgs/{org}/search?query={}", enc(q)))
            .await
            .expect(200),
    )
}

/// The values of `attr` in `html`, in order.
fn attr_values(html: &str, attr: &str) -> Vec<String> {
    let needle = format!(" {attr}=\"");
    html.match_indices(&needle)
        .map(|(at, _)| {
            let from = at + needle.len();
            html[from..from + html[from..].find('"').unwrap()].to_string()
        })
        .collect()
}

/// The results an app screen lists: (space id, page id), in order, and its count line.
async fn app_screen(browser: &mut Browser, path: &str) -> (Vec<(String, String)>, String) {
    let page = browser.get(path).await;
    assert_eq!(page.status, 200, "{path}: {}", page.html);
    let region = &page.html[page
        .html
        .find("id=\"search-results\"")
        .unwrap_or_else(|| panic!("{path}: no results region in {}", page.html))..];
    let spaces = attr_values(region, "data-result-space");
    let pages = attr_values(region, "data-result-page");
    assert_eq!(spaces.len(), pages.len(), "{region}");
    let status = text_after(&page.html, "<p id=\"search-status\" role=\"status\">");
    (spaces.into_iter().zip(pages).collect(), status)
}

/// The text after `open` up to the next tag.
fn text_after(html: &str, open: &str) -> String {
    let from = html
        .find(open)
        .unwrap_or_else(|| panic!("{open} in {html}"))
        + open.len();
    html[from..from + html[from..].find('<').unwrap()].to_string()
}

/// The count line of an app screen for `n` pages.
fn count_line(n: usize) -> String {
    if n == 1 {
        "1 page matches.".into()
    } else {
        format!("{n} pages match.")
    }
}

/// The page path in a published URL of the site at `site` (its path from the host).
fn page_path(site: &str, url: &str) -> String {
    let at = url
        .find(site)
        .unwrap_or_else(|| panic!("{url} is not under {site}"));
    url[at + site.len()..]
        .split('#')
        .next()
        .unwrap()
        .to_string()
}

/// The site's `~search` as its script asks for it: the pages' paths, in order.
async fn site_page(app: &TestApp, site: &str, q: &str) -> Vec<String> {
    let res = reqwest::get(format!(
        "{}{site}~search?q={}&format=json",
        app.base,
        enc(q)
    ))
    .await
    .unwrap();
    assert_eq!(res.status(), 200);
    let v: Value = res.json().await.unwrap();
    v["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|h| page_path(site, h["url"].as_str().unwrap()))
        .collect()
}

/// The site's MCP search tool: the pages' paths, in order.
async fn site_mcp(app: &TestApp, site: &str, q: &str) -> Vec<String> {
    let res = reqwest::Client::new()
        .post(format!("{}{site}~gitbook/mcp", app.base))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "search", "arguments": { "query": q } }
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let v: Value = res.json().await.unwrap();
    let text: String = v["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect();
    text.lines()
        .filter_map(|l| l.strip_prefix("URL: "))
        .map(|url| page_path(site, url))
        .collect()
}

#[tokio::test]
async fn every_surface_ranks_the_same_pages_in_the_same_order() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space_with_pages(&alice, &org, "Handbook", PAGES).await;
    let pages = pages_of(&app, &alice, &space).await;
    assert_eq!(pages.len(), PAGES.len());
    let by_path: HashMap<&str, &str> = pages
        .iter()
        .map(|(id, _, path)| (path.as_str(), id.as_str()))
        .collect();
    let title_of: HashMap<&str, &str> = pages
        .iter()
        .map(|(id, title, _)| (id.as_str(), title.as_str()))
        .collect();
    let plans = pages.iter().find(|p| p.1 == "Plans").unwrap().0.clone();

    // Published as a site (public: an anonymous visitor, whom the block does not show).
    let sites = format!("/v1/orgs/{org}/sites");
    let site = id(&app
        .post(
            &alice,
            &sites,
            json!({ "title": "Docs", "spaces": [space], "visibility": "public" }),
        )
        .await
        .expect(201));
    let site_api = format!("{sites}/{site}");
    let published = app
        .post(&alice, &format!("{site_api}/publish"), json!({}))
        .await
        .expect(200);
    let url = published["urls"]["published"].as_str().unwrap();
    let site_path = url[url.find("/sites/").unwrap()..].to_string();
    let mut browser = sign_in(&app, "alice", false).await;
    let ids_of = |paths: Vec<String>| -> Vec<String> {
        paths
            .iter()
            .map(|p| {
                by_path
                    .get(p.as_str())
                    .unwrap_or_else(|| panic!("no page at {p}"))
                    .to_string()
            })
            .collect()
    };

    let mut orders: Vec<(&str, Vec<String>)> = Vec::new();
    for q in QUERIES {
        // The reference: searchSpaceContent.
        let (expected, count) = api_space(&app, &alice, &space, q).await;
        assert_eq!(count, expected.len() as i64, "{q:?}");
        let titles: Vec<&str> = expected.iter().map(|i| title_of[i.as_str()]).collect();

        // searchOrganizationContent: the space's group (the only one).
        let org_groups = api_org(&app, &alice, &org, q).await;
        if expected.is_empty() {
            assert!(org_groups.is_empty(), "{q:?}: {org_groups:?}");
        } else {
            assert_eq!(
                org_groups,
                vec![(space.clone(), expected.clone())],
                "{q:?}: searchOrganizationContent vs searchSpaceContent {titles:?}"
            );
        }

        // The app's screens: the space's, the organization's, and quick find's pages.
        let in_space: Vec<(String, String)> = expected
            .iter()
            .map(|p| (space.clone(), p.clone()))
            .collect();
        for path in [
            format!("/s/{space}/~/search?q={}", enc(q)),
            format!("/o/{org}/search?q={}", enc(q)),
            format!("/find?q={}", enc(q)),
        ] {
            let (listed, status) = app_screen(&mut browser, &path).await;
            assert_eq!(
                listed, in_space,
                "{q:?}: {path} vs searchSpaceContent {titles:?}"
            );
            assert_eq!(status, count_line(expected.len()), "{q:?}: {path}");
        }

        // The published site, for its anonymous visitor: the same pages in the same order,
        // except the page whose only match lies in the block hidden from them.
        let seen_by_visitor: Vec<String> = if *q == SECRET {
            assert_eq!(
                expected,
                vec![plans.clone()],
                "a member finds the hidden text"
            );
            Vec::new()
        } else {
            expected.clone()
        };
        assert_eq!(
            ids_of(site_page(&app, &site_path, q).await),
            seen_by_visitor,
            "{q:?}: the site's ~search vs searchSpaceContent {titles:?}"
        );
        assert_eq!(
            ids_of(site_mcp(&app, &site_path, q).await),
            seen_by_visitor,
            "{q:?}: the site's MCP search vs searchSpaceContent {titles:?}"
        );
        let site_groups = groups(
            &app.post(&alice, &format!("{site_api}/search"), json!({ "query": q }))
                .await
                .expect(200),
        );
        let site_ids: Vec<String> = site_groups.into_iter().flat_map(|(_, p)| p).collect();
        assert_eq!(
            site_ids, seen_by_visitor,
            "{q:?}: searchSiteContent vs searchSpaceContent {titles:?}"
        );
        orders.push((*q, titles.iter().map(|t| t.to_string()).collect()));
    }

    // The queries rank several pages, not trivially.
    let order = |q: &str| &orders.iter().find(|(x, _)| *x == q).unwrap().1;
    assert!(order("webhook").len() >= 4, "{orders:?}");
    assert!(order("retry policy").len() >= 4, "{orders:?}");
    assert_eq!(order("retry policy")[0], "Retry policy", "{orders:?}");
    // A phrase keeps only the pages where its words are adjacent.
    assert!(
        order("\"retry policy\"").len() < order("retry policy").len(),
        "{orders:?}"
    );
    // The word being typed is completed; once followed by a space, it is not.
    assert!(order("conf").len() >= 3, "{orders:?}");
    assert!(order("conf ").is_empty(), "{orders:?}");
    assert!(order("deplo").len() >= 3, "{orders:?}");
    // The page of the hidden text is itself visible: its open words find it on the site.
    assert_eq!(order("plans"), &vec!["Plans".to_string()]);
    assert_eq!(
        site_page(&app, &site_path, "plans").await,
        vec![pages.iter().find(|p| p.0 == plans).unwrap().2.clone()]
    );

    // Two spaces with the same content: every page ties with its twin, and ties go to the
    // space first in the organization's order, on every surface. The space whose id comes
    // first is put second, so that no other order (the database's) gives the same answer.
    let mirror = app.space_with_pages(&alice, &org, "Mirror", PAGES).await;
    let (first, second) = if mirror > space {
        (mirror.clone(), space.clone())
    } else {
        (space.clone(), mirror.clone())
    };
    app.post(
        &alice,
        &format!("/v1/spaces/{first}/move"),
        json!({ "position": { "before": { "type": "space", "space": second } } }),
    )
    .await
    .expect(200);
    let listed = app
        .get(&alice, &format!("/v1/orgs/{org}/spaces"))
        .await
        .expect(200);
    let listed: Vec<String> = listed["items"].as_array().unwrap().iter().map(id).collect();
    assert_eq!(listed, vec![first.clone(), second.clone()]);
    let mut titles: HashMap<String, String> = HashMap::new();
    for s in [&space, &mirror] {
        for (id, title, _) in pages_of(&app, &alice, s).await {
            titles.insert(id, title);
        }
    }
    for q in ["webhook", "retry policy", "conf", "\"retry policy\""] {
        let org_groups = api_org(&app, &alice, &org, q).await;
        let (screen, _) = app_screen(&mut browser, &format!("/o/{org}/search?q={}", enc(q))).await;
        let (found, _) = app_screen(&mut browser, &format!("/find?q={}", enc(q))).await;
        assert_eq!(
            found, screen,
            "{q:?}: quick find vs the organization's screen"
        );
        // Twins side by side, the first space's first.
        assert!(
            !screen.is_empty() && screen.len() % 2 == 0,
            "{q:?}: {screen:?}"
        );
        for pair in screen.chunks(2) {
            assert_eq!(
                (&pair[0].0, &pair[1].0),
                (&first, &second),
                "{q:?}: {screen:?}"
            );
            assert_eq!(titles[&pair[0].1], titles[&pair[1].1], "{q:?}: {screen:?}");
        }
        // searchOrganizationContent: the same ranking, grouped by space.
        let mut grouped: Vec<(String, Vec<String>)> = Vec::new();
        for (s, p) in &screen {
            match grouped.iter_mut().find(|(x, _)| x == s) {
                Some((_, pages)) => pages.push(p.clone()),
                None => grouped.push((s.clone(), vec![p.clone()])),
            }
        }
        assert_eq!(org_groups, grouped, "{q:?}: searchOrganizationContent");
    }
}

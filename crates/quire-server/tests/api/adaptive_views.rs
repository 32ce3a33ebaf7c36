//! Adaptive content through every output of a published site: a block behind a visitor's
//! claim reaches only the visitors who hold it (HTML, markdown, agents' files, search, the
//! site's MCP server, the renderer's API), and the renderer's token, bound to what it was
//! issued for, stays short and keeps reading only while that still holds.

use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};

/// The word only the guarded block holds.
const SECRET: &str = "quokkazebra";

struct World {
    admin: Persona,
    reader: Persona,
    org: String,
}

async fn world(app: &TestApp) -> World {
    let admin = app.persona("admin").await;
    let reader = app.persona("reader").await;
    let org = app.org(&admin, "Acme").await;
    app.add_member(&admin, &org, &reader, json!("read")).await;
    World { admin, reader, org }
}

fn id(v: &Value) -> String {
    v["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id in {v}"))
        .to_string()
}

/// Writes `changes` into `space` through a change request and merges it.
async fn write(app: &TestApp, w: &World, space: &str, changes: Value) {
    let cr = id(&app
        .post(
            &w.admin,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({ "subject": "Write" }),
        )
        .await
        .expect(201));
    app.post(
        &w.admin,
        &format!("/v1/spaces/{space}/change-requests/{cr}/content?compat=false"),
        json!({ "changes": changes }),
    )
    .await
    .expect(200);
    app.post(
        &w.admin,
        &format!("/v1/spaces/{space}/change-requests/{cr}/merge"),
        json!({}),
    )
    .await
    .expect(200);
}

/// A published site of one space whose page `Plans` holds a block only visitors with the
/// signed claim `pro` may see. Returns (API path of the site, site path, space, site key).
async fn adaptive_site(
    app: &TestApp,
    w: &World,
    visibility: &str,
) -> (String, String, String, String) {
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    let body = format!(
        "Everyone reads this.\n\n{{% if visitor.claims.pro %}}\nThe {SECRET} plan is for pro visitors.\n{{% endif %}}\n\n## Limits\n\nTen a day.\n"
    );
    write(
        app,
        w,
        &space,
        json!([
            { "operation": "insert_page", "title": "Plans", "document": { "markdown": body } },
            { "operation": "insert_page", "title": "Pro corner", "condition": "visitor.claims.pro === true",
              "document": { "markdown": "Only pros see this page." } }
        ]),
    )
    .await;
    let base = format!("/v1/orgs/{}/sites", w.org);
    let site = id(&app
        .post(
            &w.admin,
            &base,
            json!({ "title": "Docs", "spaces": [space], "visibility": visibility }),
        )
        .await
        .expect(201));
    let api = format!("{base}/{site}");
    let key = app
        .get(&w.admin, &format!("{api}/publishing/auth"))
        .await
        .expect(200)["privateKey"]
        .as_str()
        .unwrap()
        .to_string();
    let published = app
        .post(&w.admin, &format!("{api}/publish"), json!({}))
        .await
        .expect(200);
    let url = published["urls"]["published"].as_str().unwrap();
    let path = url[url.find("/sites/").unwrap()..].to_string();
    (api, path, space, key)
}

/// A visitor token signed with the site's key.
fn visitor_token(app: &TestApp, key: &str, claims: Value) -> String {
    let mut claims = claims;
    claims["exp"] = json!(app.state.now() / 1000 + 3600);
    encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(key.as_bytes()),
    )
    .unwrap()
}

/// A plain GET of a site's path: status and text.
async fn fetch(app: &TestApp, path: &str) -> (u16, String) {
    let res = reqwest::Client::new()
        .get(format!("{}{path}", app.base))
        .send()
        .await
        .expect("request sent");
    let status = res.status().as_u16();
    (status, res.text().await.unwrap())
}

/// Calls a tool of the site space's MCP server (`query`: how the visitor gets in).
async fn mcp_tool(app: &TestApp, site_path: &str, query: &str, tool: &str, args: Value) -> String {
    let res = reqwest::Client::new()
        .post(format!("{}{site_path}~gitbook/mcp{query}", app.base))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": tool, "arguments": args }
        }))
        .send()
        .await
        .expect("request sent");
    let status = res.status().as_u16();
    let text = res.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|_| panic!("{text}"));
    v["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Everything a visitor can read of the site that could carry the page's text, each named.
async fn outputs(
    app: &TestApp,
    w: &World,
    site: &str,
    space: &str,
    query: &str,
    jwt: Option<&str>,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let sep = if query.is_empty() { "?" } else { "&" };
    for (name, path) in [
        ("HTML page", format!("{site}plans{query}")),
        ("markdown", format!("{site}plans.md{query}")),
        ("llms.txt", format!("{site}llms.txt{query}")),
        ("llms-full.txt", format!("{site}llms-full.txt{query}")),
        (
            "search page",
            format!("{site}~search{query}{sep}q={SECRET}"),
        ),
        (
            "search JSON",
            format!("{site}~search{query}{sep}q={SECRET}&format=json"),
        ),
        (
            "search of the page's open words",
            format!("{site}~search{query}{sep}q=pro+plan&format=json"),
        ),
    ] {
        let (status, body) = fetch(app, &path).await;
        assert_eq!(status, 200, "{name}: {body}");
        // The results page echoes the query: only its results count.
        let body = body
            .replace(&format!("value=\"{SECRET}\""), "")
            .replace(&format!("“{SECRET}”"), "");
        out.push((name.to_string(), body));
    }
    let found = mcp_tool(app, site, query, "search", json!({ "query": SECRET })).await;
    // The answer without hits echoes the query.
    let found = found.replace(&format!("No page matches \"{SECRET}\"."), "");
    out.push(("MCP search".into(), found));
    out.push((
        "MCP read_page".into(),
        mcp_tool(app, site, query, "read_page", json!({ "path": "plans" })).await,
    ));
    out.push((
        "MCP list_pages".into(),
        mcp_tool(app, site, query, "list_pages", json!({})).await,
    ));
    // The renderer's path: the URL resolved for this visitor, then the page read with the
    // token it earned.
    let visitor = match jwt {
        Some(t) => json!({ "jwtToken": t }),
        None => json!({}),
    };
    let found = app
        .post(
            &w.reader,
            "/v1/urls/published",
            json!({ "url": format!("{}{site}plans", app.base), "visitor": visitor }),
        )
        .await
        .expect(200);
    let token = found["apiToken"].as_str().unwrap();
    let revision = found["revision"].as_str().unwrap();
    let pages = app
        .call(
            reqwest::Method::GET,
            &format!("/v1/spaces/{space}/revisions/{revision}?metadata=true"),
            Some(token),
            None,
        )
        .await
        .expect(200);
    let plans = pages["pages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["title"] == "Plans")
        .unwrap_or_else(|| panic!("{pages}"));
    let doc = app
        .call(
            reqwest::Method::GET,
            &format!(
                "/v1/spaces/{space}/revisions/{revision}/page/{}/document",
                id(plans)
            ),
            Some(token),
            None,
        )
        .await
        .expect(200);
    out.push(("revision read with the token".into(), pages.to_string()));
    out.push(("page document read with the token".into(), doc.to_string()));
    out
}

#[tokio::test]
async fn a_guarded_block_reaches_only_visitors_who_hold_its_claim() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let (_, site, space, key) = adaptive_site(&app, &w, "public").await;

    // A visitor without the claim (also one who states it unsigned) never sees the block's
    // words, nor the page its claim guards, nor the condition itself.
    let plain = visitor_token(&app, &key, json!({ "sub": "v1" }));
    for (query, jwt) in [
        (String::new(), None),
        ("?visitor.pro=true".to_string(), None),
        (format!("?jwt_token={plain}"), Some(plain.as_str())),
    ] {
        for (name, body) in outputs(&app, &w, &site, &space, &query, jwt).await {
            assert!(
                !body.contains(SECRET),
                "{name} ({query}) shows the guarded block: {body}"
            );
            assert!(
                !body.contains("Only pros"),
                "{name} ({query}) shows the guarded page: {body}"
            );
            assert!(
                !body.contains("visitor.claims.pro"),
                "{name} ({query}) shows the condition: {body}"
            );
            if !name.starts_with("search")
                && name != "MCP search"
                && name != "MCP list_pages"
                && name != "llms.txt"
            {
                assert!(
                    body.contains("Everyone reads this"),
                    "{name} ({query}): {body}"
                );
            }
        }
    }

    // With the claim, every output shows it (search finds the block's words).
    let pro = visitor_token(&app, &key, json!({ "pro": true }));
    let query = format!("?jwt_token={pro}");
    for (name, body) in outputs(&app, &w, &site, &space, &query, Some(&pro)).await {
        if ["llms.txt", "MCP list_pages"].contains(&name.as_str()) {
            assert!(body.contains("Pro corner"), "{name}: {body}");
            continue;
        }
        assert!(
            body.contains(SECRET),
            "{name} hides the block from its visitor: {body}"
        );
        assert!(
            !body.contains("{% if"),
            "{name} leaves the condition to evaluate: {body}"
        );
    }
}

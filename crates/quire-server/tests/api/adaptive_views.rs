//! Adaptive content through every output of a published site: a block behind a visitor's
//! claim reaches only the visitors who hold it (HTML, markdown, agents' files, search, the
//! site's MCP server, the renderer's API), and the renderer's token, bound to what it was
//! issued for, stays short and keeps reading only while that still holds.

use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use crate::harness::{id, Persona, TestApp};

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
    // A file shown only inside the guarded block (named with the secret word, so that an
    // output listing it shows the word), and one shown to everyone.
    let cr = id(&app
        .post(
            &w.admin,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({ "subject": "Files" }),
        )
        .await
        .expect(201));
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAEklEQVR4nGP4z8DAwMDAxMDAAAAZBwEEq5ZtpAAAAABJRU5ErkJggg==";
    let made = app
        .post(
            &w.admin,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content?compat=false"),
            json!({ "changes": [{ "operation": "insert_files", "files": [
                { "name": format!("{SECRET}.png"), "base64": png },
                { "name": "open.png", "base64": png }
            ] }] }),
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
    let (guarded, open) = (id(&made["insertedFiles"][0]), id(&made["insertedFiles"][1]));
    let body = format!(
        "Everyone reads this.\n\n![open](/files/{open})\n\n{{% if visitor.claims.pro %}}\nThe {SECRET} plan is for pro visitors.\n\n![chart](/files/{guarded})\n{{% endif %}}\n\n## Limits\n\nTen a day.\n"
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
            if name == "revision read with the token" {
                assert!(body.contains("open.png"), "{name} ({query}): {body}");
            }
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

/// Resolves `url` for a visitor (`visitor`: the `SiteVisitorPayload`), as the renderer does.
async fn resolve(app: &TestApp, w: &World, url: &str, visitor: Value) -> crate::harness::Res {
    app.post(
        &w.reader,
        "/v1/urls/published",
        json!({ "url": url, "visitor": visitor }),
    )
    .await
}

/// A GET with a published-content token: its status.
async fn with_token(app: &TestApp, token: &str, path: &str) -> u16 {
    app.call(reqwest::Method::GET, path, Some(token), None)
        .await
        .status
}

/// The id of the page titled `title` in the current content of `space`.
async fn page_id(app: &TestApp, w: &World, space: &str, title: &str) -> String {
    let pages = app
        .get(&w.admin, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200);
    pages["pages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["title"] == title)
        .map(id)
        .unwrap_or_else(|| panic!("no {title} in {pages}"))
}

#[tokio::test]
async fn the_renderer_token_reads_what_its_visitor_may_while_its_grounds_hold() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let (api, site, space, key) = adaptive_site(&app, &w, "public").await;
    let url = format!("{}{site}plans", app.base);
    let corner = page_id(&app, &w, &space, "Pro corner").await;
    let plain = resolve(&app, &w, &url, json!({})).await.expect(200);
    let pro = resolve(
        &app,
        &w,
        &url,
        json!({ "jwtToken": visitor_token(&app, &key, json!({ "pro": true })) }),
    )
    .await
    .expect(200);
    let (plain, pro, revision) = (
        plain["apiToken"].as_str().unwrap().to_string(),
        pro["apiToken"].as_str().unwrap().to_string(),
        plain["revision"].as_str().unwrap().to_string(),
    );
    let corner_doc = format!("/v1/spaces/{space}/revisions/{revision}/page/{corner}/document");
    // A page whose condition hides it from the token's visitor is not there for them.
    assert_eq!(with_token(&app, &plain, &corner_doc).await, 404);
    assert_eq!(with_token(&app, &pro, &corner_doc).await, 200);
    let space_path = format!("/v1/spaces/{space}");
    let published = format!("{api}/published");
    assert_eq!(with_token(&app, &plain, &space_path).await, 200);

    // Unpublished, the site's tokens read nothing; published again, they read again.
    app.post(&w.admin, &format!("{api}/unpublish"), json!({}))
        .await
        .expect(200);
    for path in [&space_path, &published, &corner_doc] {
        assert_eq!(with_token(&app, &pro, path).await, 404, "{path}");
    }
    app.post(&w.admin, &format!("{api}/publish"), json!({}))
        .await
        .expect(200);
    assert_eq!(with_token(&app, &pro, &space_path).await, 200);
    assert_eq!(with_token(&app, &pro, &published).await, 200);

    // A site space whose new condition hides it from the visitor closes their token only.
    let ss = id(&app
        .get(&w.admin, &format!("{api}/site-spaces"))
        .await
        .expect(200)["items"][0]);
    app.patch(
        &w.admin,
        &format!("{api}/site-spaces/{ss}"),
        json!({ "condition": "visitor.claims.pro === true" }),
    )
    .await
    .expect(200);
    assert_eq!(with_token(&app, &plain, &space_path).await, 404);
    assert_eq!(with_token(&app, &pro, &space_path).await, 200);
    // Gone from the structure, it closes every token.
    let other = app.space(&w.admin, &w.org, "Other", None).await;
    app.post(
        &w.admin,
        &format!("{api}/site-spaces"),
        json!({ "spaceId": other }),
    )
    .await
    .expect(201);
    app.delete(&w.admin, &format!("{api}/site-spaces/{ss}"))
        .await
        .expect(204);
    assert_eq!(with_token(&app, &pro, &space_path).await, 404);

    // A share link's token closes with its link.
    let (api, _, space, _) = adaptive_site(&app, &w, "share-link").await;
    let link = app
        .post(
            &w.admin,
            &format!("{api}/share-links"),
            json!({ "name": "Partners" }),
        )
        .await
        .expect(201);
    let shared = link["urls"]["published"].as_str().unwrap();
    let token = resolve(&app, &w, shared, json!({})).await.expect(200)["apiToken"]
        .as_str()
        .unwrap()
        .to_string();
    let space_path = format!("/v1/spaces/{space}");
    assert_eq!(with_token(&app, &token, &space_path).await, 200);
    app.patch(
        &w.admin,
        &format!("{api}/share-links/{}", id(&link)),
        json!({ "active": false }),
    )
    .await
    .expect(200);
    assert_eq!(with_token(&app, &token, &space_path).await, 404);

    // A visitor-authenticated site's token closes when the site's key is replaced.
    let (api, site, space, key) = adaptive_site(&app, &w, "visitor-auth").await;
    let token = resolve(
        &app,
        &w,
        &format!("{}{site}", app.base),
        json!({ "jwtToken": visitor_token(&app, &key, json!({})) }),
    )
    .await
    .expect(200)["apiToken"]
        .as_str()
        .unwrap()
        .to_string();
    let space_path = format!("/v1/spaces/{space}");
    assert_eq!(with_token(&app, &token, &space_path).await, 200);
    app.post(
        &w.admin,
        &format!("{api}/publishing/auth/regenerate"),
        json!({}),
    )
    .await
    .expect(200);
    assert_eq!(with_token(&app, &token, &space_path).await, 404);
}

/// Documents by id through a published-content token: each visitor reads the documents
/// their own view of the pages names, and no other.
#[tokio::test]
async fn a_visitor_reads_the_documents_their_view_names() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let (_, site, space, key) = adaptive_site(&app, &w, "public").await;
    let url = format!("{}{site}plans", app.base);
    let token = |claims: Value| {
        let (app, w, url) = (&app, &w, url.clone());
        let jwt = visitor_token(app, &key, claims);
        async move {
            resolve(app, w, &url, json!({ "jwtToken": jwt }))
                .await
                .expect(200)["apiToken"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let (plain, pro) = (token(json!({})).await, token(json!({ "pro": true })).await);
    let plans = page_id(&app, &w, &space, "Plans").await;
    let revision = id(&app
        .get(&w.admin, &format!("/v1/spaces/{space}/content"))
        .await
        .expect(200));
    let page = format!("/v1/spaces/{space}/revisions/{revision}/page/{plans}");
    let document_id = |token: Option<&str>| {
        let (app, page, admin) = (&app, page.clone(), &w.admin);
        let token = token.map(str::to_string);
        async move {
            let token = token.unwrap_or_else(|| admin.token.clone());
            app.call(reqwest::Method::GET, &page, Some(&token), None)
                .await
                .expect(200)["documentId"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let (stored, seen_plain, seen_pro) = (
        document_id(None).await,
        document_id(Some(&plain)).await,
        document_id(Some(&pro)).await,
    );
    // The guarded block makes three views: the stored one, and one per audience.
    assert_ne!(seen_plain, seen_pro);
    assert_ne!(stored, seen_plain);
    let doc = |id: &str| format!("/v1/spaces/{space}/documents/{id}");
    let read = |token: &str, id: &str| {
        let (app, path, token) = (&app, doc(id), token.to_string());
        async move {
            app.call(reqwest::Method::GET, &path, Some(&token), None)
                .await
        }
    };
    let mine = read(&plain, &seen_plain).await.expect(200).to_string();
    assert!(
        mine.contains("Everyone reads this") && !mine.contains(SECRET),
        "{mine}"
    );
    assert!(read(&pro, &seen_pro)
        .await
        .expect(200)
        .to_string()
        .contains(SECRET));
    // Another visitor's view, or the stored body, is not there for the plain visitor.
    read(&plain, &seen_pro).await.expect(404);
    read(&plain, &stored).await.expect(404);
    // A member reads the stored body by its id, guarded block included.
    let stored_doc = app
        .get(&w.admin, &doc(&stored))
        .await
        .expect(200)
        .to_string();
    assert!(stored_doc.contains(SECRET), "{stored_doc}");
}

#[tokio::test]
async fn the_renderer_token_is_short_and_any_node_reads_it() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let (_, site, space, key) = adaptive_site(&app, &w, "public").await;
    let url = format!("{}{site}plans", app.base);
    let pro = visitor_token(&app, &key, json!({ "pro": true, "name": "n".repeat(300) }));
    let found = resolve(
        &app,
        &w,
        &url,
        json!({ "jwtToken": pro, "unsignedClaims": { "lang": "x".repeat(500) } }),
    )
    .await
    .expect(200);
    let token = found["apiToken"].as_str().unwrap();
    // Shaped as a JWT (three base64url parts, HS256) of at most 96 characters, whose payload
    // holds its expiry, however many claims the visitor brought: renderers put it in the
    // names of the files they cache pages in.
    assert!(token.len() <= 96, "{} characters: {token}", token.len());
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "{token}");
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header: Value = serde_json::from_slice(&b64.decode(parts[0]).unwrap()).unwrap();
    assert_eq!(header["alg"], "HS256");
    let payload: Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
    let exp = payload["exp"].as_i64().unwrap();
    let now = app.state.now() / 1000;
    assert!(exp > now && exp <= now + 3600, "{payload}");
    // Nothing of it can be changed: not its expiry, not its scope, not its signature.
    let later = b64
        .encode(serde_json::to_vec(&json!({ "exp": exp + 3600, "sid": payload["sid"] })).unwrap());
    let mut flipped = parts[2].as_bytes().to_vec();
    flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
    for forged in [
        format!("{}.{later}.{}", parts[0], parts[2]),
        format!(
            "{}.{}.{}",
            parts[0],
            parts[1],
            String::from_utf8(flipped).unwrap()
        ),
        format!("{}.{}.", parts[0], parts[1]),
    ] {
        app.call(
            reqwest::Method::GET,
            &format!("/v1/spaces/{space}"),
            Some(&forged),
            None,
        )
        .await
        .expect_error(401);
    }

    // Another node sharing the database reads it, and shows the same visitor's view.
    let other = app.another_node().await;
    let revision = found["revision"].as_str().unwrap();
    let corner = page_id(&app, &w, &space, "Pro corner").await;
    let doc = other
        .call(
            reqwest::Method::GET,
            &format!("/v1/spaces/{space}/revisions/{revision}/page/{corner}/document"),
            Some(token),
            None,
        )
        .await
        .expect(200);
    assert!(doc.to_string().contains("Only pros"), "{doc}");

    // Claims no condition of the site reads make no new scope: one stored scope for any
    // number of them; a claim a condition reads makes one per value.
    let stored = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM published_scopes")
            .fetch_one(app.state.db.pool())
            .await
            .unwrap()
    };
    let before = stored().await;
    for i in 0..20 {
        resolve(
            &app,
            &w,
            &url,
            json!({ "unsignedClaims": { format!("noise{i}"): i, "other": format!("v{i}") } }),
        )
        .await
        .expect(200);
    }
    assert_eq!(stored().await, before + 1);
    for claims in [json!({ "sub": "a" }), json!({ "sub": "b", "seen": 1 })] {
        resolve(
            &app,
            &w,
            &url,
            json!({ "jwtToken": visitor_token(&app, &key, claims) }),
        )
        .await
        .expect(200);
    }
    assert_eq!(stored().await, before + 1);
    // Expired scopes leave with the next one stored.
    app.clock.advance_ms(3 * 3600 * 1000);
    resolve(&app, &w, &url, json!({})).await.expect(200);
    assert_eq!(stored().await, 1);
    drop(other);
}

#[tokio::test]
async fn the_renderer_s_visitor_type_is_accepted() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let (_, site, _, _) = adaptive_site(&app, &w, "public").await;
    let url = format!("{}{site}plans", app.base);
    for kind in ["human", "agent"] {
        resolve(&app, &w, &url, json!({ "type": kind }))
            .await
            .expect(200);
    }
    let msg = resolve(&app, &w, &url, json!({ "type": "robot" }))
        .await
        .expect_error(400);
    assert!(msg.contains("visitor.type"), "{msg}");
    // A field no official schema holds is still refused, by name.
    let msg = resolve(&app, &w, &url, json!({ "colour": "blue" }))
        .await
        .expect_error(400);
    assert!(msg.contains("colour"), "{msg}");
}

#[tokio::test]
async fn admins_preview_their_unpublished_site() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let space = app.space(&w.admin, &w.org, "Guide", None).await;
    let api = format!(
        "/v1/orgs/{}/sites/{}",
        w.org,
        id(&app
            .post(
                &w.admin,
                &format!("/v1/orgs/{}/sites", w.org),
                json!({ "title": "Docs", "spaces": [space] }),
            )
            .await
            .expect(201))
    );
    let published = format!("{api}/published");
    let preview = app.get(&w.admin, &published).await.expect(200);
    assert_eq!(preview["object"], "published-content-site");
    // Members who are not admins see it once it is published, like its visitors.
    app.get(&w.reader, &published).await.expect_error(404);
    app.post(&w.admin, &format!("{api}/publish"), json!({}))
        .await
        .expect(200);
    app.get(&w.reader, &published).await.expect(200);
}

/// The ETag of a page of a site for a visitor (`query`: how they come).
async fn etag(app: &TestApp, path: &str, query: &str) -> String {
    let res = reqwest::Client::new()
        .get(format!("{}{path}{query}", app.base))
        .send()
        .await
        .expect("request sent");
    assert_eq!(res.status(), 200);
    res.headers()["etag"].to_str().unwrap().to_string()
}

#[tokio::test]
async fn claims_no_condition_reads_share_one_rendering() {
    let app = TestApp::start().await;
    let w = world(&app).await;
    let (_, site, _, key) = adaptive_site(&app, &w, "public").await;
    let page = format!("{site}plans");
    let plain = etag(&app, &page, "").await;
    // Pages are kept and tagged by what their conditions read of a visitor: any other claim
    // (here any unsigned one, which no condition of the site reads) names the same page.
    for i in 0..5 {
        let query = format!("?visitor.random{i}={}", i * 7919);
        assert_eq!(etag(&app, &page, &query).await, plain, "{query}");
    }
    assert_eq!(etag(&app, &page, "?visitor.pro=true").await, plain);
    let other = visitor_token(&app, &key, json!({ "sub": "someone", "plan": "x" }));
    assert_eq!(
        etag(&app, &page, &format!("?jwt_token={other}")).await,
        plain
    );
    // A claim the conditions read names another page.
    let pro = visitor_token(&app, &key, json!({ "pro": true }));
    assert_ne!(etag(&app, &page, &format!("?jwt_token={pro}")).await, plain);
}

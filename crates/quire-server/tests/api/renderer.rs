//! What GitBook's open-source renderer asks of Quire with the token that
//! `resolvePublishedContentByUrl` hands it, beyond the page tree and documents (see
//! `scripts/renderer-e2e.sh`, which runs the renderer itself): a page's markdown (its `.md`
//! route and `llms-full.txt`) and a page looked up by path (an unknown path), each as the
//! token's visitor sees it.

use serde_json::{json, Value};

use crate::harness::{id, Persona, TestApp};

/// The word only the guarded block holds.
const SECRET: &str = "quokkazebra";

/// A published site of one space: `Plans` holds a block only visitors with the unsigned
/// claim `beta` see, and `Beta corner` is a page only they see. Returns the site's published
/// URL and the space.
async fn site(app: &TestApp, admin: &Persona) -> (String, String) {
    let org = app.org(admin, "Acme").await;
    let space = app.space(admin, &org, "Guide", None).await;
    let cr = id(&app
        .post(
            admin,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({ "subject": "Pages" }),
        )
        .await
        .expect(201));
    let plans = format!(
        "Everyone reads this.\n\n{{% if visitor.claims.unsigned.beta === true %}}\nThe {SECRET} plan.\n{{% endif %}}\n"
    );
    app.post(
        admin,
        &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
        json!({ "changes": [
            { "operation": "insert_page", "title": "Plans", "document": { "markdown": plans } },
            { "operation": "insert_page", "title": "Beta corner",
              "condition": "visitor.claims.unsigned.beta === true",
              "document": { "markdown": "Only testers see this page." } }
        ] }),
    )
    .await
    .expect(200);
    app.post(
        admin,
        &format!("/v1/spaces/{space}/change-requests/{cr}/merge"),
        json!({}),
    )
    .await
    .expect(200);
    let base = format!("/v1/orgs/{org}/sites");
    let site = id(&app
        .post(admin, &base, json!({ "title": "Docs", "spaces": [space] }))
        .await
        .expect(201));
    let published = app
        .post(admin, &format!("{base}/{site}/publish"), json!({}))
        .await
        .expect(200);
    let url = published["urls"]["published"].as_str().unwrap().to_string();
    (url, space)
}

/// The token and revision the renderer gets for `url` and these unsigned claims.
async fn resolve(app: &TestApp, who: &Persona, url: &str, claims: Value) -> (String, String) {
    let found = app
        .post(
            who,
            "/v1/urls/published",
            json!({ "url": url, "visitor": { "unsignedClaims": claims, "type": "human" } }),
        )
        .await
        .expect(200);
    (
        found["apiToken"].as_str().unwrap().to_string(),
        found["revision"].as_str().unwrap().to_string(),
    )
}

/// A GET with a published-content token.
async fn read(app: &TestApp, token: &str, path: &str) -> crate::harness::Res {
    app.call(reqwest::Method::GET, path, Some(token), None)
        .await
}

/// The id of the page titled `title` in the current content of `space`.
async fn page_id(app: &TestApp, admin: &Persona, space: &str, title: &str) -> String {
    let pages = app
        .get(admin, &format!("/v1/spaces/{space}/content"))
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
async fn the_renderer_token_reads_a_page_s_markdown_and_a_page_by_path_as_its_visitor_sees_them() {
    let app = TestApp::start().await;
    let admin = app.persona("admin").await;
    let (url, space) = site(&app, &admin).await;
    let plans = page_id(&app, &admin, &space, "Plans").await;
    let corner = page_id(&app, &admin, &space, "Beta corner").await;
    let (plain, revision) = resolve(&app, &admin, &format!("{url}plans"), json!({})).await;
    let (beta, _) = resolve(
        &app,
        &admin,
        &format!("{url}plans"),
        json!({ "beta": true }),
    )
    .await;
    let at = format!("/v1/spaces/{space}/revisions/{revision}");

    // The markdown of a page (the renderer's `.md` route and `llms-full.txt`).
    let markdown = format!("{at}/page/{plans}?format=markdown&format.markdown.refs=stable");
    let seen = read(&app, &plain, &markdown).await.expect(200);
    let text = seen["markdown"]
        .as_str()
        .unwrap_or_else(|| panic!("{seen}"));
    assert!(text.contains("Everyone reads this."), "{text}");
    assert!(!text.contains(SECRET), "{text}");
    assert!(!text.contains("{% if"), "{text}");
    let seen = read(&app, &beta, &markdown).await.expect(200);
    let text = seen["markdown"].as_str().unwrap();
    assert!(text.contains(SECRET) && !text.contains("{% if"), "{text}");
    // The document form too, and a guarded page only for its visitors.
    let seen = read(&app, &plain, &format!("{at}/page/{plans}"))
        .await
        .expect(200);
    assert!(!seen.to_string().contains(SECRET), "{seen}");
    assert!(seen.to_string().contains("Everyone reads this."), "{seen}");
    read(&app, &plain, &format!("{at}/page/{corner}?format=markdown"))
        .await
        .expect(404);
    let seen = read(&app, &beta, &format!("{at}/page/{corner}?format=markdown"))
        .await
        .expect(200);
    assert_eq!(seen["title"], "Beta corner", "{seen}");
    // No page of the tree answers with children its visitor may not see.
    assert!(
        !seen.to_string().contains("visitor.claims"),
        "a condition left to evaluate: {seen}"
    );

    // A page by path (how the renderer looks up a path its tree lacks): 404 for no page.
    let seen = read(&app, &plain, &format!("{at}/path/plans"))
        .await
        .expect(200);
    assert_eq!(seen["id"], plans.as_str(), "{seen}");
    assert!(!seen.to_string().contains(SECRET), "{seen}");
    read(&app, &plain, &format!("{at}/path/nope"))
        .await
        .expect(404);
    read(&app, &plain, &format!("{at}/path/beta-corner"))
        .await
        .expect(404);
    let seen = read(&app, &beta, &format!("{at}/path/beta-corner"))
        .await
        .expect(200);
    assert_eq!(seen["id"], corner.as_str(), "{seen}");

    // A page's meta links (`listRevisionPageMetaLinks`): none, the token reading its own
    // space alone; 404 for a page its visitor may not read.
    let links = read(&app, &plain, &format!("{at}/page/{plans}/meta-links"))
        .await
        .expect(200);
    assert_eq!(links, json!({}));
    read(&app, &plain, &format!("{at}/page/{corner}/meta-links"))
        .await
        .expect(404);
    read(&app, &beta, &format!("{at}/page/{corner}/meta-links"))
        .await
        .expect(200);
    read(&app, &plain, &format!("{at}/page/nope/meta-links"))
        .await
        .expect(404);

    // Still nothing of another space, nor another revision of this one.
    let org_of = app
        .get(&admin, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["organization"]
        .as_str()
        .unwrap()
        .to_string();
    let other = app.space(&admin, &org_of, "Other", None).await;
    let other_rev = app
        .get(&admin, &format!("/v1/spaces/{other}"))
        .await
        .expect(200)["revision"]
        .as_str()
        .unwrap()
        .to_string();
    read(
        &app,
        &plain,
        &format!("/v1/spaces/{other}/revisions/{other_rev}/path/plans"),
    )
    .await
    .expect(403);
    read(
        &app,
        &plain,
        &format!("/v1/spaces/{space}/content/path/plans"),
    )
    .await
    .expect(403);
    read(
        &app,
        &plain,
        &format!("/v1/spaces/{other}/revisions/{other_rev}/page/{plans}/meta-links"),
    )
    .await
    .expect(403);
}

#[tokio::test]
async fn the_published_site_read_with_the_renderer_token_holds_its_site_space_s_customization() {
    let app = TestApp::start().await;
    let admin = app.persona("admin").await;
    let (url, _) = site(&app, &admin).await;
    let found = app
        .post(&admin, "/v1/urls/published", json!({ "url": url }))
        .await
        .expect(200);
    let token = found["apiToken"].as_str().unwrap();
    let published = read(
        &app,
        token,
        &format!(
            "/v1/orgs/{}/sites/{}/published",
            found["organization"].as_str().unwrap(),
            found["site"].as_str().unwrap()
        ),
    )
    .await
    .expect(200);
    // The renderer takes the customization of the site space it renders from here (and
    // warns when it is missing); a site space has the site's own.
    let customizations = &published["customizations"];
    let site_space = found["siteSpace"].as_str().unwrap();
    assert_eq!(
        customizations["siteSpaces"][site_space], customizations["site"],
        "{customizations}"
    );
}

/// Every node of `doc` with an `object` of block, inline or text, and every fragment.
fn keyed_nodes<'a>(doc: &'a Value, out: &mut Vec<&'a Value>) {
    if let Some(o) = doc["object"].as_str() {
        if ["block", "inline", "text", "fragment"].contains(&o) {
            out.push(doc);
        }
    }
    for list in ["nodes", "fragments"] {
        for child in doc[list].as_array().into_iter().flatten() {
            keyed_nodes(child, out);
        }
    }
}

#[tokio::test]
async fn page_documents_give_every_node_a_key_unique_in_the_document() {
    let app = TestApp::start().await;
    let admin = app.persona("admin").await;
    let (url, space) = site(&app, &admin).await;
    let cr = id(&app
        .post(
            &admin,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({}),
        )
        .await
        .expect(201));
    // The renderer refuses to render tabs without keys, and uses keys as element ids.
    let markdown = "Intro with [a link](https://example.com).\n\n{% tabs %}\n{% tab title=\"One\" %}\nFirst tab.\n{% endtab %}\n{% tab title=\"Two\" %}\nSecond tab.\n{% endtab %}\n{% endtabs %}\n\n- [ ] a task\n- [x] done\n";
    app.post(
        &admin,
        &format!("/v1/spaces/{space}/change-requests/{cr}/content"),
        json!({ "changes": [
            { "operation": "insert_page", "title": "Tabs", "document": { "markdown": markdown } }
        ] }),
    )
    .await
    .expect(200);
    app.post(
        &admin,
        &format!("/v1/spaces/{space}/change-requests/{cr}/merge"),
        json!({}),
    )
    .await
    .expect(200);
    let tabs = page_id(&app, &admin, &space, "Tabs").await;
    let (token, revision) = resolve(&app, &admin, &format!("{url}tabs"), json!({})).await;
    let at = format!("/v1/spaces/{space}/revisions/{revision}/page/{tabs}");
    let mut documents = vec![
        // The renderer's read, with its token.
        read(&app, &token, &format!("{at}/document"))
            .await
            .expect(200),
        read(&app, &token, &format!("{at}/document"))
            .await
            .expect(200),
        // A member's reads of the page, as a document and as a page with its document.
        app.get(&admin, &format!("{at}/document")).await.expect(200),
        app.get(&admin, &format!("/v1/spaces/{space}/content/page/{tabs}"))
            .await
            .expect(200)["document"]
            .take(),
    ];
    for doc in &documents {
        let mut nodes = Vec::new();
        keyed_nodes(doc, &mut nodes);
        assert!(nodes.len() > 10, "{doc}");
        let keys: Vec<&str> = nodes
            .iter()
            .map(|n| {
                n["key"]
                    .as_str()
                    .unwrap_or_else(|| panic!("a node without a key: {n}"))
            })
            .collect();
        let unique: std::collections::BTreeSet<&&str> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len(), "keys repeat: {keys:?}");
    }
    // The same document has the same keys each time it is read.
    let last = documents.pop().unwrap();
    assert_eq!(documents[0], documents[1]);
    assert_eq!(documents[2], last);
}

#[tokio::test]
async fn a_resolution_is_complete_only_when_no_site_segment_can_follow() {
    let app = TestApp::start().await;
    let admin = app.persona("admin").await;
    let (url, space) = site(&app, &admin).await;
    let complete = |path: String| {
        let app = &app;
        let admin = &admin;
        async move {
            let found = app
                .post(admin, "/v1/urls/published", json!({ "url": path }))
                .await
                .expect(200);
            (
                found["complete"].as_bool().unwrap(),
                found["pathname"].as_str().unwrap().to_string(),
            )
        }
    };
    // One site space: whatever follows the site is a page path.
    assert_eq!(complete(url.clone()).await, (true, String::new()));
    assert_eq!(
        complete(format!("{url}plans")).await,
        (true, "plans".into())
    );

    // With a second section, the site's own URL could still be followed by its path: the
    // renderer tries shorter URLs too and takes the first complete answer, so that one must
    // not be (it rendered `/api` as the missing page `api` of the default section).
    let org = app
        .get(&admin, &format!("/v1/spaces/{space}"))
        .await
        .expect(200)["organization"]
        .as_str()
        .unwrap()
        .to_string();
    let site_id = url
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let api = app.space(&admin, &org, "API", None).await;
    let section = id(&app
        .post(
            &admin,
            &format!("/v1/orgs/{org}/sites/{site_id}/sections"),
            json!({ "spaceId": api, "title": "API" }),
        )
        .await
        .expect(201));
    assert_eq!(complete(url.clone()).await, (false, String::new()));
    assert_eq!(
        complete(format!("{url}plans")).await,
        (true, "plans".into())
    );
    assert_eq!(complete(format!("{url}api")).await, (true, String::new()));
    assert_eq!(
        complete(format!("{url}api/reference")).await,
        (true, "reference".into())
    );
    // Two site spaces in a section: the same at the site space's level.
    let v2 = app.space(&admin, &org, "V2", None).await;
    app.post(
        &admin,
        &format!("/v1/orgs/{org}/sites/{site_id}/site-spaces"),
        json!({ "spaceId": v2, "sectionId": section }),
    )
    .await
    .expect(201);
    assert_eq!(complete(format!("{url}api")).await, (false, String::new()));
    assert_eq!(
        complete(format!("{url}api/v2")).await,
        (true, String::new())
    );
    assert_eq!(
        complete(format!("{url}api/reference")).await,
        (true, "reference".into())
    );
}

/// A page's OpenAPI block makes the renderer read a specification of the site's
/// organization with the site's token: the specification's content, 404 for one that does
/// not exist (drawn as a missing block), and nothing of another organization.
#[tokio::test]
async fn the_renderer_token_reads_the_sites_organizations_specifications() {
    let app = TestApp::start().await;
    let admin = app.persona("admin").await;
    let (url, _) = site(&app, &admin).await;
    let found = app
        .post(&admin, "/v1/urls/published", json!({ "url": url }))
        .await
        .expect(200);
    let token = found["apiToken"].as_str().unwrap();
    let org = found["organization"].as_str().unwrap();
    let specs = format!("/v1/orgs/{org}/openapi");
    app.post(
        &admin,
        &specs,
        json!({ "slug": "pets", "source": { "text": crate::openapi::PETS_30_YAML } }),
    )
    .await
    .expect(201);
    crate::openapi::processed(&app, &admin, &format!("{specs}/pets")).await;
    let content = read(
        &app,
        token,
        &format!("{specs}/pets/versions/latest/content"),
    )
    .await
    .expect(200);
    // The specification itself: its paths are there.
    let files = content["filesystem"]
        .as_object()
        .expect("the specification's files");
    assert!(
        files.values().any(|f| f.to_string().contains("/pets")),
        "{content}"
    );
    read(
        &app,
        token,
        &format!("{specs}/missing/versions/latest/content"),
    )
    .await
    .expect(404);
    let other = app.org(&admin, "Elsewhere").await;
    read(
        &app,
        token,
        &format!("/v1/orgs/{other}/openapi/pets/versions/latest/content"),
    )
    .await
    .expect(403);
    // The rest of the organization's specifications stays out of reach.
    read(&app, token, &format!("{specs}/pets"))
        .await
        .expect(403);
}

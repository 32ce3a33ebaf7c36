//! OpenAPI specifications: the eleven operations, processing as a durable job (from text and
//! from a loopback URL, JSON and YAML, 3.0 and 3.1; Swagger 2.0, broken references, invalid
//! documents, alias bombs (of values or of bytes) and oversized files each end in a clear
//! failed state), versions added only when the document changes, and the version
//! document's URL.

use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};

pub(crate) const PETS_30_YAML: &str = "openapi: 3.0.3
info:
  title: Pets
  version: '1.0'
paths:
  /pets/{petId}:
    get:
      operationId: getPet
      summary: Get a pet
      parameters:
        - name: petId
          in: path
          required: true
          schema: { type: string }
      responses:
        200:
          description: The pet
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/Pet'
components:
  schemas:
    Pet:
      type: object
      properties:
        id: { type: string }
        parent: { $ref: '#/components/schemas/Pet' }
";

fn pets_31_json() -> String {
    json!({
        "openapi": "3.1.0",
        "info": { "title": "Pets", "version": "2.0" },
        "paths": { "/pets": { "post": {
            "requestBody": { "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Pet" } } } },
            "responses": { "201": { "description": "Created" } }
        } } },
        "components": { "schemas": { "Pet": { "type": "object", "properties": { "name": { "type": "string" } } } } }
    })
    .to_string()
}

/// Runs due jobs, then waits until the spec is processed; returns it.
pub(crate) async fn processed(app: &TestApp, who: &Persona, path: &str) -> Value {
    for _ in 0..200 {
        quire_server::domain::jobs::run_due(&app.state)
            .await
            .unwrap();
        let spec = app.get(who, path).await.expect(200);
        if spec["processingState"] == "complete" {
            return spec;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the spec at {path} was never processed");
}

async fn setup(app: &TestApp) -> (Persona, String) {
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    (admin, org)
}

/// A loopback server answering every request with `status` and `body`.
async fn serve(status: u16, body: Vec<u8>) -> String {
    crate::loopback::serve(move |_| {
        crate::loopback::Reply::ok("application/yaml", body.clone()).with_status(status)
    })
    .await
}

fn loopback(config: &mut quire_server::ServerConfig) {
    config.fetch_allow = vec!["127.0.0.1/32".parse().unwrap()];
}

#[tokio::test]
async fn specs_are_created_processed_versioned_and_deleted() {
    let app = TestApp::start().await;
    let (admin, org) = setup(&app).await;
    let base = format!("/v1/orgs/{org}/openapi");
    let created = app
        .post(
            &admin,
            &base,
            json!({ "slug": "pets", "source": { "text": PETS_30_YAML } }),
        )
        .await
        .expect(201);
    assert_eq!(created["object"], "openapi-spec");
    assert_eq!(created["slug"], "pets");
    assert_eq!(created["visibility"], "private");
    // The node's worker may already have taken it: any state of the processing.
    assert!(
        ["pending", "progress", "complete"].contains(&created["processingState"].as_str().unwrap())
    );
    let spec_path = format!("{base}/pets");
    let spec = processed(&app, &admin, &spec_path).await;
    assert!(spec.get("lastProcessErrorCode").is_none(), "{spec}");
    assert!(spec["lastProcessedAt"].is_string());
    let first = spec["lastVersion"].as_str().unwrap().to_string();
    assert_eq!(spec["permissions"], json!({ "view": true, "edit": true }));

    // The same document again: no new version. A changed one (JSON, 3.1): a new version.
    app.put(
        &admin,
        &spec_path,
        json!({ "source": { "text": PETS_30_YAML } }),
    )
    .await
    .expect(200);
    let spec = processed(&app, &admin, &spec_path).await;
    assert_eq!(spec["lastVersion"], json!(first));
    app.clock.advance_ms(1000);
    app.put(
        &admin,
        &spec_path,
        json!({ "source": { "text": pets_31_json() } }),
    )
    .await
    .expect(200);
    let spec = processed(&app, &admin, &spec_path).await;
    let second = spec["lastVersion"].as_str().unwrap().to_string();
    assert_ne!(second, first);

    let versions = app
        .get(&admin, &format!("{spec_path}/versions"))
        .await
        .expect(200);
    assert_eq!(versions["count"], json!(2));
    assert_eq!(versions["items"][0]["id"], json!(second), "newest first");
    assert_eq!(versions["items"][1]["id"], json!(first));
    let latest = app
        .get(&admin, &format!("{spec_path}/versions/latest"))
        .await
        .expect(200);
    assert_eq!(latest["object"], "openapi-spec-version");
    assert_eq!(latest["id"], json!(second));
    let old = app
        .get(&admin, &format!("{spec_path}/versions/{first}"))
        .await
        .expect(200);
    let content = app
        .get(&admin, &format!("{spec_path}/versions/{first}/content"))
        .await
        .expect(200);
    assert_eq!(content["url"], old["url"]);
    let doc = &content["filesystem"]["openapi.json"];
    assert_eq!(doc["openapi"], "3.0.3");
    assert_eq!(
        doc["paths"]["/pets/{petId}"]["get"]["responses"]["200"]["description"],
        "The pet"
    );
    let latest_content = app
        .get(&admin, &format!("{spec_path}/versions/latest/content"))
        .await
        .expect(200);
    assert_eq!(
        latest_content["filesystem"]["openapi.json"]["openapi"],
        "3.1.0"
    );

    // The document's URL: private needs a member's token; public is open.
    let url = content["url"].as_str().unwrap().to_string();
    let client = reqwest::Client::new();
    let anonymous = client.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let with_token = client
        .get(&url)
        .bearer_auth(&admin.token)
        .send()
        .await
        .unwrap();
    assert_eq!(with_token.status(), 200);
    let body: Value = with_token.json().await.unwrap();
    assert_eq!(body["openapi"], "3.0.3");
    let outsider = app.persona("outsider").await;
    let foreign = client
        .get(&url)
        .bearer_auth(&outsider.token)
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 404);
    let public = app
        .patch(&admin, &spec_path, json!({ "visibility": "public" }))
        .await
        .expect(200);
    assert_eq!(public["visibility"], "public");
    assert!(public["urls"]["published"].is_string());
    let anonymous = client.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status(), 200);
    assert_eq!(
        anonymous.headers()["content-type"],
        "application/json",
        "served as data"
    );
    let published = client
        .get(public["urls"]["published"].as_str().unwrap())
        .send()
        .await
        .unwrap();
    let body: Value = published.json().await.unwrap();
    assert_eq!(body["openapi"], "3.1.0");

    let list = app.get(&admin, &base).await.expect(200);
    assert_eq!(list["count"], json!(1));
    assert_eq!(list["items"][0]["slug"], "pets");

    assert_eq!(app.delete(&admin, &spec_path).await.status, 204);
    app.get(&admin, &spec_path).await.expect_error(404);
    assert_eq!(client.get(&url).send().await.unwrap().status(), 404);
    assert_eq!(app.delete(&admin, &spec_path).await.status, 204);
    app.get(&admin, &format!("{spec_path}/versions"))
        .await
        .expect_error(404);
}

#[tokio::test]
async fn put_creates_a_new_slug_and_bad_input_is_named() {
    let app = TestApp::start().await;
    let (admin, org) = setup(&app).await;
    let base = format!("/v1/orgs/{org}/openapi");
    let created = app
        .put(
            &admin,
            &format!("{base}/my-api-2"),
            json!({ "source": { "text": pets_31_json() } }),
        )
        .await
        .expect(201);
    assert_eq!(created["slug"], "my-api-2");
    assert!(
        ["pending", "progress", "complete"].contains(&created["processingState"].as_str().unwrap())
    );
    for slug in ["Pets", "a--b", "-a", "a-", "a_b"] {
        let msg = app
            .put(
                &admin,
                &format!("{base}/{slug}"),
                json!({ "source": { "text": "x" } }),
            )
            .await
            .expect_error(400);
        assert!(msg.contains("`slug`"), "{msg}");
    }
    let long = "a".repeat(101);
    app.post(
        &admin,
        &base,
        json!({ "slug": long, "source": { "text": "x" } }),
    )
    .await
    .expect_error(400);
    let msg = app
        .post(&admin, &base, json!({ "slug": "x", "source": {} }))
        .await
        .expect_error(400);
    assert!(msg.contains("`source`"), "{msg}");
    let msg = app
        .post(
            &admin,
            &base,
            json!({ "slug": "x", "source": { "url": "https://example.com/a", "text": "y" } }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("`source`"), "{msg}");
    let msg = app
        .post(
            &admin,
            &base,
            json!({ "slug": "x", "source": { "url": "file:///etc/passwd" } }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("`source.url`"), "{msg}");
    let msg = app
        .post(
            &admin,
            &base,
            json!({ "slug": "x", "source": { "text": "" } }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("`source.text`"), "{msg}");
    let msg = app
        .post(&admin, &base, json!({ "source": { "text": "y" } }))
        .await
        .expect_error(400);
    assert!(msg.contains("slug"), "{msg}");
    app.post(
        &admin,
        &base,
        json!({ "slug": "my-api-2", "source": { "text": "y" } }),
    )
    .await
    .expect_error(409);
    let msg = app
        .patch(
            &admin,
            &format!("{base}/my-api-2"),
            json!({ "visibility": "everyone" }),
        )
        .await
        .expect_error(400);
    assert!(msg.contains("visibility"), "{msg}");
    app.patch(
        &admin,
        &format!("{base}/nope"),
        json!({ "visibility": "public" }),
    )
    .await
    .expect_error(404);
    app.get(&admin, &format!("{base}/my-api-2/versions/nope"))
        .await
        .expect_error(404);
    // A spec whose only processing failed has no version.
    app.put(
        &admin,
        &format!("{base}/broken"),
        json!({ "source": { "text": "x: [" } }),
    )
    .await
    .expect(201);
    processed(&app, &admin, &format!("{base}/broken")).await;
    for tail in ["versions/latest", "versions/latest/content"] {
        app.get(&admin, &format!("{base}/broken/{tail}"))
            .await
            .expect_error(404);
    }

    // Readers read; only members who create content manage.
    let reader = app.persona("reader").await;
    app.add_member(&admin, &org, &reader, json!("read")).await;
    app.get(&reader, &format!("{base}/my-api-2"))
        .await
        .expect(200);
    let spec = app
        .get(&reader, &format!("{base}/my-api-2"))
        .await
        .expect(200);
    assert_eq!(spec["permissions"]["edit"], json!(false));
    app.put(
        &reader,
        &format!("{base}/my-api-2"),
        json!({ "source": { "text": "x" } }),
    )
    .await
    .expect_error(403);
}

/// Processes `text` into spec `slug` and returns the processed spec.
async fn process_text(app: &TestApp, admin: &Persona, org: &str, slug: &str, text: &str) -> Value {
    let path = format!("/v1/orgs/{org}/openapi/{slug}");
    let res = app
        .put(admin, &path, json!({ "source": { "text": text } }))
        .await;
    assert!(res.status == 200 || res.status == 201, "{res:?}");
    processed(app, admin, &path).await
}

#[track_caller]
fn assert_failed(spec: &Value, official: &str, code: &str) {
    assert_eq!(spec["processingState"], "complete", "{spec}");
    assert_eq!(spec["lastProcessErrorCode"], official, "{spec}");
    assert_eq!(spec["lastProcessedErrorCount"], json!(1), "{spec}");
    assert_eq!(spec["lastProcessedErrors"][0]["code"], code, "{spec}");
    let message = spec["lastProcessedErrors"][0]["message"].as_str().unwrap();
    assert!(message.len() > 10, "{spec}");
}

#[tokio::test]
async fn bad_documents_end_in_a_clear_failed_state() {
    let app = TestApp::start_with(|c| c.max_spec_bytes = 48 * 1024).await;
    let (admin, org) = setup(&app).await;

    let swagger =
        json!({ "swagger": "2.0", "info": { "title": "Old", "version": "1" }, "paths": {} });
    let spec = process_text(&app, &admin, &org, "swagger", &swagger.to_string()).await;
    assert_failed(&spec, "PARSE_ERROR", "SWAGGER_2_UNSUPPORTED");
    assert!(spec.get("lastVersion").is_none());

    let broken = PETS_30_YAML.replace("schemas/Pet'\ncomponents", "schemas/Dog'\ncomponents");
    let spec = process_text(&app, &admin, &org, "broken", &broken).await;
    assert_failed(&spec, "PARSE_ERROR", "BROKEN_REF");
    assert!(spec["lastProcessedErrors"][0]["message"]
        .as_str()
        .unwrap()
        .contains("#/components/schemas/Dog"));

    let spec = process_text(
        &app,
        &admin,
        &org,
        "yaml",
        "openapi: 3.0.0\ninfo: [unclosed\n",
    )
    .await;
    assert_failed(&spec, "PARSE_ERROR", "INVALID_YAML");
    let spec = process_text(&app, &admin, &org, "json", "{\"openapi\": \"3.0.0\",").await;
    assert_failed(&spec, "PARSE_ERROR", "INVALID_JSON");
    let spec = process_text(&app, &admin, &org, "not-openapi", "title: hello\n").await;
    assert_failed(&spec, "PARSE_ERROR", "INVALID_SPEC");
    let spec = process_text(
        &app,
        &admin,
        &org,
        "v4",
        "openapi: 4.0.0\ninfo: {title: a, version: b}\npaths: {}\n",
    )
    .await;
    assert_failed(&spec, "PARSE_ERROR", "UNSUPPORTED_VERSION");

    // A billion laughs in YAML: ten aliases a level, nine levels.
    let mut bomb = String::from("openapi: 3.0.0\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [{}]\n",
            vec![format!("*a{p}"); 10].join(", ")
        ));
    }
    let spec = process_text(&app, &admin, &org, "bomb", &bomb).await;
    assert_failed(&spec, "PARSE_ERROR", "INVALID_YAML");
    // Nesting far past any real document.
    let deep = format!(
        "openapi: 3.0.0\nx: {}1{}\n",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let spec = process_text(&app, &admin, &org, "deep", &deep).await;
    assert_failed(&spec, "PARSE_ERROR", "INVALID_YAML");
    let deep_json = format!(
        "{{\"openapi\":\"3.0.0\",\"x\":{}1{}}}",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let spec = process_text(&app, &admin, &org, "deep-json", &deep_json).await;
    assert_failed(&spec, "PARSE_ERROR", "INVALID_JSON");

    // Text larger than the specification limit is refused at the door.
    let big = format!("openapi: 3.0.0\ndescription: '{}'\n", "x".repeat(50 * 1024));
    let path = format!("/v1/orgs/{org}/openapi/big");
    let res = app
        .put(&admin, &path, json!({ "source": { "text": big } }))
        .await;
    assert!(res.status == 413, "{res:?}");

    // A failed processing keeps the last good version, and the server goes on.
    let spec = process_text(&app, &admin, &org, "good", PETS_30_YAML).await;
    let good = spec["lastVersion"].clone();
    assert!(good.is_string());
    let spec = process_text(&app, &admin, &org, "good", &bomb).await;
    assert_failed(&spec, "PARSE_ERROR", "INVALID_YAML");
    assert_eq!(spec["lastVersion"], good);
    let spec = process_text(&app, &admin, &org, "good", &pets_31_json()).await;
    assert!(spec.get("lastProcessErrorCode").is_none(), "{spec}");
    assert_ne!(spec["lastVersion"], good);
}

#[tokio::test]
async fn a_long_string_repeated_by_aliases_fails_cleanly_and_the_server_stays_up() {
    let app = TestApp::start_with(|c| {
        c.max_body_bytes = 4 * 1024 * 1024;
        c.max_spec_bytes = 4 * 1024 * 1024;
    })
    .await;
    let (admin, org) = setup(&app).await;
    // 2.1 MB of YAML: a 2 MiB string and 5,000 aliases of it, 10 GB once expanded.
    let mut bomb = format!(
        "openapi: 3.0.0\ninfo: {{title: t, version: '1'}}\npaths: {{}}\nx-big: &a \"{}\"\nx-list: [",
        "x".repeat(2 * 1024 * 1024)
    );
    bomb.push_str(&vec!["*a"; 5_000].join(", "));
    bomb.push_str("]\n");
    let spec = process_text(&app, &admin, &org, "bomb", &bomb).await;
    assert_failed(&spec, "PARSE_ERROR", "TOO_LARGE");
    let message = spec["lastProcessedErrors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "{} bytes (as JSON) once its YAML aliases are expanded",
            quire_content::openapi::MAX_SPEC_BYTES
        )),
        "{message}"
    );
    assert!(spec.get("lastVersion").is_none());
    // The server goes on, and processes the next spec.
    let spec = process_text(&app, &admin, &org, "pets", PETS_30_YAML).await;
    assert!(spec.get("lastProcessErrorCode").is_none(), "{spec}");
    assert!(spec["lastVersion"].is_string());
}

#[tokio::test]
async fn specs_are_fetched_from_their_url_through_the_safe_fetcher() {
    let app = TestApp::start_with(|c| {
        loopback(c);
        c.max_spec_bytes = 32 * 1024;
    })
    .await;
    let (admin, org) = setup(&app).await;
    let base = format!("/v1/orgs/{org}/openapi");
    let source = serve(200, PETS_30_YAML.as_bytes().to_vec()).await;
    let url = format!("{source}/openapi.yaml");
    let created = app
        .post(
            &admin,
            &base,
            json!({ "slug": "remote", "source": { "url": url } }),
        )
        .await
        .expect(201);
    assert_eq!(created["sourceURL"], json!(url));
    let spec = processed(&app, &admin, &format!("{base}/remote")).await;
    assert!(spec.get("lastProcessErrorCode").is_none(), "{spec}");
    assert!(spec["lastVersion"].is_string());

    let missing = serve(404, b"no".to_vec()).await;
    app.put(
        &admin,
        &format!("{base}/missing"),
        json!({ "source": { "url": format!("{missing}/x.yaml") } }),
    )
    .await
    .expect(201);
    let spec = processed(&app, &admin, &format!("{base}/missing")).await;
    assert_failed(&spec, "FETCH_ERROR", "FETCH_FAILED");

    let huge = serve(200, vec![b'a'; 40 * 1024]).await;
    app.put(
        &admin,
        &format!("{base}/huge"),
        json!({ "source": { "url": format!("{huge}/x.yaml") } }),
    )
    .await
    .expect(201);
    let spec = processed(&app, &admin, &format!("{base}/huge")).await;
    assert_failed(&spec, "FETCH_ERROR", "TOO_LARGE");
}

#[tokio::test]
async fn inner_addresses_are_not_fetched() {
    let app = TestApp::start().await;
    let (admin, org) = setup(&app).await;
    let source = serve(200, PETS_30_YAML.as_bytes().to_vec()).await;
    let path = format!("/v1/orgs/{org}/openapi/inner");
    app.put(
        &admin,
        &path,
        json!({ "source": { "url": format!("{source}/openapi.yaml") } }),
    )
    .await
    .expect(201);
    let spec = processed(&app, &admin, &path).await;
    assert_failed(&spec, "FETCH_ERROR", "FETCH_FAILED");
}

/// A loopback server answering `files` by path (404 for others).
async fn serve_files(files: Vec<(&'static str, String)>) -> String {
    crate::loopback::serve(move |r| match files.iter().find(|(p, _)| *p == r.path) {
        Some((_, body)) => crate::loopback::Reply::ok("application/yaml", body.clone()),
        None => crate::loopback::Reply::not_found(),
    })
    .await
}

#[tokio::test]
async fn files_that_a_fetched_spec_references_are_bundled_into_it() {
    let app = TestApp::start_with(loopback).await;
    let (admin, org) = setup(&app).await;
    let main = "openapi: 3.0.3
info: { title: Split, version: '1' }
paths:
  /pets:
    get:
      responses:
        200:
          description: OK
          content:
            application/json:
              schema: { $ref: 'schemas/pet.yaml#/Pet' }
";
    let pet = "Pet:
  type: object
  properties:
    owner: { $ref: '#/Owner' }
    tag: { $ref: '../common.yaml#/Tag' }
Owner: { type: object }
";
    let common = "Tag: { type: string }\n";
    let base = serve_files(vec![
        ("/api/main.yaml", main.to_string()),
        ("/api/schemas/pet.yaml", pet.to_string()),
        ("/api/common.yaml", common.to_string()),
        (
            "/api/broken.yaml",
            main.replace("pet.yaml#/Pet", "pet.yaml#/Cat"),
        ),
        (
            "/api/missing.yaml",
            main.replace("schemas/pet.yaml", "schemas/none.yaml"),
        ),
    ])
    .await;
    let path = format!("/v1/orgs/{org}/openapi/split");
    app.put(
        &admin,
        &path,
        json!({ "source": { "url": format!("{base}/api/main.yaml") } }),
    )
    .await
    .expect(201);
    let spec = processed(&app, &admin, &path).await;
    assert!(spec.get("lastProcessErrorCode").is_none(), "{spec}");
    let content = app
        .get(&admin, &format!("{path}/versions/latest/content"))
        .await
        .expect(200);
    let doc = &content["filesystem"]["openapi.json"];
    let schema =
        &doc["paths"]["/pets"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
    assert_eq!(schema["$ref"], "#/x-quire-files/0/Pet", "{doc}");
    assert_eq!(
        doc["x-quire-files"][0]["Pet"]["properties"]["owner"]["$ref"],
        "#/x-quire-files/0/Owner"
    );
    assert_eq!(
        doc["x-quire-files"][0]["Pet"]["properties"]["tag"]["$ref"],
        "#/x-quire-files/1/Tag"
    );
    assert_eq!(doc["x-quire-files"][1]["Tag"]["type"], "string");

    for (slug, file, code, official) in [
        ("broken", "broken.yaml", "BROKEN_REF", "PARSE_ERROR"),
        ("missing", "missing.yaml", "FETCH_FAILED", "FETCH_ERROR"),
    ] {
        let path = format!("/v1/orgs/{org}/openapi/{slug}");
        app.put(
            &admin,
            &path,
            json!({ "source": { "url": format!("{base}/api/{file}") } }),
        )
        .await
        .expect(201);
        let spec = processed(&app, &admin, &path).await;
        assert_failed(&spec, official, code);
    }
}

/// Computed content of a processed spec: its pages (a tag's operations, its models), the same
/// for the same seed, and one document of them; other sources refused naming the field.
#[tokio::test]
async fn a_spec_computes_its_reference_pages_and_documents() {
    let app = TestApp::start().await;
    let (admin, org) = setup(&app).await;
    let reader = app.persona("reader").await;
    app.add_member(&admin, &org, &reader, json!("read")).await;
    let text = PETS_30_YAML.replace(
        "      operationId: getPet\n",
        "      operationId: getPet\n      tags: [pets]\n",
    );
    process_text(&app, &admin, &org, "pets", &text).await;
    let space = app.space(&admin, &org, "Reference", None).await;
    let base = format!("/v1/spaces/{space}/content/computed");
    let source = |props: Value| {
        json!({
            "type": "builtin:openapi",
            "props": props,
            "dependencies": { "spec": { "ref": { "kind": "openapi", "spec": "pets" } } }
        })
    };

    let rev = app
        .post(
            &reader,
            &format!("{base}/revision"),
            json!({ "source": source(json!({ "models": true })), "seed": "s1" }),
        )
        .await
        .expect(200);
    let titles: Vec<&str> = rev["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["pets", "Models"], "{rev}");
    assert_eq!(rev["files"], json!([]));
    assert_eq!(rev["reusableContents"], json!([]));
    let pets = rev["pages"][0]["markdown"].as_str().unwrap();
    assert!(
        pets.contains("path=\"/pets/{petId}\" method=\"get\""),
        "{pets}"
    );
    let again = app
        .post(
            &reader,
            &format!("{base}/revision"),
            json!({ "source": source(json!({ "models": false })), "seed": "s1" }),
        )
        .await
        .expect(200);
    assert_eq!(again["pages"].as_array().unwrap().len(), 1);
    assert_eq!(
        again["pages"][0]["id"], rev["pages"][0]["id"],
        "same seed, same ids"
    );

    let doc = app
        .post(
            &reader,
            &format!("{base}/document"),
            json!({ "source": source(json!({ "doc": "operations", "page": "pets" })), "seed": "s1" }),
        )
        .await
        .expect(200);
    assert_eq!(doc["nodes"][0]["type"], "openapi-operation", "{doc}");
    assert_eq!(doc["nodes"][0]["data"]["path"], "/pets/{petId}");
    let models = app
        .post(
            &reader,
            &format!("{base}/document"),
            json!({ "source": source(json!({ "doc": "models" })), "seed": "s1" }),
        )
        .await
        .expect(200);
    assert_eq!(models["nodes"][0]["data"]["schemas"], json!(["Pet"]));
    let info = app
        .post(
            &reader,
            &format!("{base}/document"),
            json!({ "source": source(json!({ "doc": "info" })), "seed": "s1" }),
        )
        .await
        .expect(200);
    assert!(info.to_string().contains("Pets"), "{info}");

    // Refusals name the field.
    let refused = |body: Value, field: &'static str| {
        let (app, reader, path) = (&app, &reader, format!("{base}/document"));
        async move {
            let msg = app.post(reader, &path, body).await.expect_error(400);
            assert!(msg.contains(field), "{field}: {msg}");
        }
    };
    refused(
        json!({ "source": source(json!({ "doc": "operations", "page": "nope" })), "seed": "s" }),
        "source.props.page",
    )
    .await;
    refused(
        json!({ "source": source(json!({ "doc": "everything" })), "seed": "s" }),
        "source.props.doc",
    )
    .await;
    refused(
        json!({ "source": { "type": "builtin:openapi", "props": { "doc": "models" }, "dependencies": { "spec": { "ref": { "kind": "openapi", "spec": "ghost" } } } }, "seed": "s" }),
        "source.dependencies.spec",
    )
    .await;
    refused(
        json!({ "source": { "type": "builtin:translation", "props": { "doc": "models" } }, "seed": "s" }),
        "source.type",
    )
    .await;
    refused(
        json!({ "source": { "type": "integration:acme:docs", "props": { "doc": "models" } }, "seed": "s" }),
        "source.type",
    )
    .await;
    refused(
        json!({ "source": source(json!({ "doc": "models" })), "seed": "" }),
        "seed",
    )
    .await;
    // Someone who may not read the space reads nothing of it.
    let outsider = app.persona("outsider").await;
    app.post(
        &outsider,
        &format!("{base}/revision"),
        json!({ "source": source(json!({ "models": true })), "seed": "s1" }),
    )
    .await
    .expect_error(404);
}

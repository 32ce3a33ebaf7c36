//! Reusable contents and documents: what a Git Sync tree's `.gitbook/includes/` becomes once
//! imported, read in the space, a change request and any revision; and documents read back
//! by the ids pages and reusable contents give.

use serde_json::{json, Value};

use crate::harness::{Persona, TestApp};
use crate::imports::{app, zip_of};
use crate::loopback::{serve, Reply};

struct World {
    alice: Persona,
    space: String,
}

/// A space holding two pages that include one reusable content, imported from a zip in Git
/// Sync's layout.
async fn world(app: &TestApp) -> World {
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let space = app.space(&alice, &org, "Docs", None).await;
    let archive = zip_of(&[
        (
            "docs/README.md",
            b"# Welcome\n\n{% include \".gitbook/includes/support.md\" %}\n",
        ),
        (
            "docs/guide.md",
            b"# Guide\n\nSteps.\n\n{% include \".gitbook/includes/support.md\" %}\n",
        ),
        (
            "docs/.gitbook/includes/support.md",
            b"---\ntitle: Support banner\n---\n\nWrite to [the welcome page](../../README.md).\n",
        ),
    ]);
    let base = serve(move |_| Reply::ok("application/zip", archive.clone())).await;
    let res = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/content/import"),
            json!({ "url": format!("{base}/docs.zip"), "source": "zip" }),
        )
        .await
        .expect(200);
    // Two pages and the reusable content.
    assert_eq!(res["importedResources"], json!(3), "{res}");
    World { alice, space }
}

/// Writes `changes` through a change request, merged.
async fn merged_edit(app: &TestApp, w: &World, changes: Value) {
    let cr = app.open_change_request(&w.alice, &w.space, "Edit").await;
    app.edit_change_request(&w.alice, &w.space, &cr, changes)
        .await;
    app.merge_change_request(&w.alice, &w.space, &cr).await;
}

/// `v` without its blocks' `key`s (a page's document keys its blocks from the page id).
fn unkeyed(mut v: Value) -> Value {
    let mut pending = vec![&mut v];
    while let Some(v) = pending.pop() {
        match v {
            Value::Object(o) => {
                o.remove("key");
                pending.extend(o.values_mut());
            }
            Value::Array(a) => pending.extend(a.iter_mut()),
            _ => {}
        }
    }
    v
}

fn text(v: &Value) -> String {
    v.to_string()
}

#[tokio::test]
async fn imported_includes_are_reusable_contents_of_every_scope() {
    let app = app().await;
    let w = world(&app).await;
    let space = format!("/v1/spaces/{}", w.space);
    let revision = app
        .get(&w.alice, &format!("{space}/content"))
        .await
        .expect(200);
    let listed = revision["reusableContents"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{revision}");
    let rc = &listed[0];
    assert_eq!(rc["title"], json!("Support banner"));
    let (rc_id, rc_doc) = (rc["id"].as_str().unwrap(), rc["document"].as_str().unwrap());
    let rev_id = revision["id"].as_str().unwrap();

    // Both pages name it by id.
    let include = format!("{{% include \"/reusable-contents/{rc_id}\" %}}");
    for page in revision["pages"].as_array().unwrap() {
        let md = app
            .get(
                &w.alice,
                &format!(
                    "{space}/content/page/{}?format=markdown",
                    page["id"].as_str().unwrap()
                ),
            )
            .await
            .expect(200);
        assert!(text(&md).contains(&include.replace('"', "\\\"")), "{md}");
    }

    // The same object in the space, a revision and a change request opened after.
    let cr = app
        .post(
            &w.alice,
            &format!("{space}/change-requests"),
            json!({ "subject": "Edit" }),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    for path in [
        format!("{space}/content/reusable-contents/{rc_id}"),
        format!("{space}/revisions/{rev_id}/reusable-contents/{rc_id}"),
        format!("{space}/change-requests/{cr}/content/reusable-contents/{rc_id}"),
    ] {
        let got = app.get(&w.alice, &path).await.expect(200);
        assert_eq!(
            got,
            json!({ "id": rc_id, "title": "Support banner", "document": rc_doc }),
            "{path}"
        );
    }

    // Its document, from the revision and by its id: the link inside resolved to the page.
    let welcome = revision["pages"][0]["id"].as_str().unwrap();
    let doc = app
        .get(
            &w.alice,
            &format!("{space}/revisions/{rev_id}/reusable-contents/{rc_id}/document"),
        )
        .await
        .expect(200);
    assert_eq!(doc["object"], json!("document"));
    assert!(text(&doc).contains("Write to "), "{doc}");
    assert!(text(&doc).contains(welcome), "{doc}");
    let by_id = app
        .get(&w.alice, &format!("{space}/documents/{rc_doc}"))
        .await
        .expect(200);
    assert_eq!(
        by_id["nodes"].as_array().map(Vec::len),
        doc["nodes"].as_array().map(Vec::len)
    );

    // Unknown ids are 404s naming what was missing.
    let missing = app
        .get(&w.alice, &format!("{space}/content/reusable-contents/nope"))
        .await
        .expect_error(404);
    assert!(missing.contains("nope"), "{missing}");
    app.get(
        &w.alice,
        &format!("{space}/revisions/{rev_id}/reusable-contents/nope/document"),
    )
    .await
    .expect(404);
}

#[tokio::test]
async fn documents_are_read_by_the_ids_pages_give_in_any_revision() {
    let app = app().await;
    let w = world(&app).await;
    let space = format!("/v1/spaces/{}", w.space);
    let before = app
        .get(&w.alice, &format!("{space}/content"))
        .await
        .expect(200);
    let guide = &before["pages"][1];
    let (guide_id, old_doc) = (
        guide["id"].as_str().unwrap(),
        guide["documentId"].as_str().unwrap().to_string(),
    );
    // The page read and the listing agree on the id.
    let page = app
        .get(&w.alice, &format!("{space}/content/page/{guide_id}"))
        .await
        .expect(200);
    assert_eq!(page["documentId"], json!(old_doc));
    let doc = app
        .get(&w.alice, &format!("{space}/documents/{old_doc}"))
        .await
        .expect(200);
    assert_eq!(
        unkeyed(doc),
        unkeyed(page["document"].clone()),
        "a document by id is the page's document"
    );

    // Edited, the page names a new document; the old one is still there by its id.
    merged_edit(&app, &w, json!([
        { "operation": "update_page", "page": guide_id, "document": { "markdown": "New steps.\n" } }
    ]))
    .await;
    let after = app
        .get(&w.alice, &format!("{space}/content/page/{guide_id}"))
        .await
        .expect(200);
    let new_doc = after["documentId"].as_str().unwrap();
    assert_ne!(new_doc, old_doc);
    assert!(text(
        &app.get(&w.alice, &format!("{space}/documents/{new_doc}"))
            .await
            .expect(200)
    )
    .contains("New steps."));
    assert!(text(
        &app.get(&w.alice, &format!("{space}/documents/{old_doc}"))
            .await
            .expect(200)
    )
    .contains("Steps."));
    // `schema` takes the official values only.
    app.get(
        &w.alice,
        &format!("{space}/documents/{old_doc}?schema=next"),
    )
    .await
    .expect(200);
    app.get(&w.alice, &format!("{space}/documents/{old_doc}?schema=v9"))
        .await
        .expect(400);

    // An id that names nothing of this space: another space's document, a page record, junk.
    let org = app.org(&w.alice, "Other").await;
    let other = app.space(&w.alice, &org, "Other", None).await;
    let foreign = app
        .get(&w.alice, &format!("/v1/spaces/{other}/documents/{old_doc}"))
        .await
        .expect_error(404);
    assert!(foreign.contains(&old_doc), "{foreign}");
    for junk in ["nope", &old_doc.to_uppercase(), &"0".repeat(64)] {
        app.get(&w.alice, &format!("{space}/documents/{junk}"))
            .await
            .expect(404);
    }
    // An empty page has no document.
    merged_edit(
        &app,
        &w,
        json!([
            { "operation": "insert_page", "title": "Blank", "document": {} }
        ]),
    )
    .await;
    let pages = app
        .get(&w.alice, &format!("{space}/content/pages"))
        .await
        .expect(200);
    let blank = pages["pages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["title"] == "Blank")
        .unwrap();
    assert!(blank.get("documentId").is_none(), "{blank}");
}

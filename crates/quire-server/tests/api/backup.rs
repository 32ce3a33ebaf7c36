//! `quire admin backup` and `restore`: a backup taken while writes go on restores into a
//! new data dir with everything it held readable.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::json;

use crate::harness::TestApp;

/// A 2×3 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAADCAIAAAA2iEnWAAAAEklEQVR4nGP4z8DAwMDAxMDAAAAZBwEEq5ZtpAAAAABJRU5ErkJggg==";

#[tokio::test]
async fn a_backup_under_write_load_restores_everything_it_holds() {
    let app = Arc::new(TestApp::start().await);
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Backed up").await;
    let space = app.space(&alice, &org, "Kept", None).await;
    let cr = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/change-requests"),
            json!({}),
        )
        .await
        .expect(201)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let inserted = app
        .post(
            &alice,
            &format!("/v1/spaces/{space}/change-requests/{cr}/content?compat=false"),
            json!({ "changes": [
                { "operation": "insert_files", "files": [{ "base64": PNG, "name": "pixel.png" }] },
                { "operation": "insert_page", "title": "Kept page",
                  "document": { "markdown": "Text that must survive.\n" } }
            ]}),
        )
        .await
        .expect(200);
    let file_id = inserted["insertedFiles"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.post(
        &alice,
        &format!("/v1/spaces/{space}/change-requests/{cr}/merge"),
        json!({}),
    )
    .await
    .expect(200);

    // Comments keep arriving while the backup is taken.
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..3 {
        let (app, token, space, stop) = (app.clone(), alice.clone(), space.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) && n < 200 {
                app.post(
                    &token,
                    &format!("/v1/spaces/{space}/comments"),
                    json!({ "body": { "markdown": format!("writer {w} comment {n}") } }),
                )
                .await
                .expect(200);
                n += 1;
            }
            n
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    let before = app
        .get(&alice, &format!("/v1/spaces/{space}/comments?limit=1"))
        .await
        .expect(200)["count"]
        .as_i64()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("backup");
    let manifest = quire_server::admin::backup(&app.config, &to)
        .await
        .expect("backup");
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    assert!(manifest.blobs >= 1, "{manifest:?}");
    assert!(to.join("backup.json").exists());

    if app.config.database_url.is_some() {
        // PostgreSQL: the folder holds the blobs and the pg_dump step, not the database.
        assert_eq!(manifest.database, "postgres");
        assert!(std::fs::read_to_string(to.join("README.txt"))
            .unwrap()
            .contains("pg_dump"));
        return;
    }
    assert_eq!(manifest.database, "sqlite");
    // A backup folder is never overwritten.
    assert!(quire_server::admin::backup(&app.config, &to).await.is_err());

    let restored_dir = tempfile::tempdir().unwrap();
    let target = restored_dir.path().to_path_buf();
    let mut config = app.config.clone();
    config.data_dir = target.clone();
    quire_server::admin::restore(&config, &to)
        .await
        .expect("restore");
    // Restoring over a database is refused.
    assert!(quire_server::admin::restore(&config, &to).await.is_err());

    let restored = TestApp::start_with(move |c| c.data_dir = target).await;
    // The same token, the same space, page, file and comments.
    let listed = restored
        .get(&alice, &format!("/v1/spaces/{space}/comments?limit=1"))
        .await
        .expect(200);
    let count = listed["count"].as_i64().unwrap();
    assert!(
        count >= before,
        "{count} comments restored, {before} acknowledged before"
    );
    let counted = restored
        .get(&alice, &format!("/v1/spaces/{space}"))
        .await
        .expect(200);
    assert_eq!(counted["id"], space.as_str());
    let pages = restored
        .get(&alice, &format!("/v1/spaces/{space}/content/pages"))
        .await
        .expect(200);
    let page_id = pages["pages"][0]["id"].as_str().unwrap();
    let page = restored
        .get(
            &alice,
            &format!("/v1/spaces/{space}/content/page/{page_id}?format=markdown"),
        )
        .await
        .expect(200);
    assert!(page["markdown"]
        .as_str()
        .unwrap()
        .contains("Text that must survive."));
    let file = restored
        .get(
            &alice,
            &format!("/v1/spaces/{space}/content/files/{file_id}"),
        )
        .await
        .expect(200);
    let got = reqwest::get(file["downloadURL"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(got.status().as_u16(), 200);
    assert_eq!(got.bytes().await.unwrap().len(), 76);
}

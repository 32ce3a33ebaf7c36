//! Keyset pagination: stable under concurrent inserts.

use std::collections::HashSet;

use serde_json::json;

use crate::harness::TestApp;

#[tokio::test]
async fn walking_with_limit_one_while_inserting_serves_each_existing_item_once() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let mut existing = HashSet::new();
    for i in 0..6 {
        let t = app
            .put(
                &alice,
                &format!("/v1/orgs/{org}/teams"),
                json!({ "title": format!("Team {i}") }),
            )
            .await
            .expect(201);
        existing.insert(t["id"].as_str().unwrap().to_string());
    }
    let mut seen = Vec::new();
    let mut page: Option<String> = None;
    let mut inserted = 0;
    loop {
        let path = match &page {
            Some(p) => format!("/v1/orgs/{org}/teams?limit=1&page={p}"),
            None => format!("/v1/orgs/{org}/teams?limit=1"),
        };
        let res = app.get(&alice, &path).await.expect(200);
        assert!(res["items"].as_array().unwrap().len() <= 1);
        for item in res["items"].as_array().unwrap() {
            seen.push(item["id"].as_str().unwrap().to_string());
        }
        // Insert while walking (during the first steps, so that the walk can end).
        if inserted < 4 {
            app.put(
                &alice,
                &format!("/v1/orgs/{org}/teams"),
                json!({ "title": format!("Late {inserted}") }),
            )
            .await
            .expect(201);
            inserted += 1;
        }
        match res["next"]["page"].as_str() {
            Some(p) => page = Some(p.to_string()),
            None => break,
        }
        assert!(seen.len() < 50, "walk does not end");
    }
    for id in &existing {
        assert_eq!(
            seen.iter().filter(|s| *s == id).count(),
            1,
            "{id} served exactly once"
        );
    }
    let unique: HashSet<_> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no item served twice");

    let all = app
        .get(&alice, &format!("/v1/orgs/{org}/teams?limit=1000"))
        .await
        .expect(200);
    assert_eq!(all["count"], json!(6 + inserted));
    assert!(all.get("next").is_none());
}

#[tokio::test]
async fn member_pages_follow_the_requested_order() {
    let app = TestApp::start().await;
    let alice = app.persona("alice").await;
    let org = app.org(&alice, "Acme").await;
    let mut people = vec![alice.id.clone()];
    for name in ["bob", "carol", "dave", "erin"] {
        let p = app.persona(name).await;
        app.clock.advance_ms(10);
        app.add_member(&alice, &org, &p, json!("read")).await;
        people.push(p.id);
    }
    for order in ["asc", "desc"] {
        let mut seen = Vec::new();
        let mut page = String::new();
        loop {
            let res = app
                .get(
                    &alice,
                    &format!("/v1/orgs/{org}/members?order={order}&limit=2&page={page}"),
                )
                .await
                .expect(200);
            assert_eq!(res["count"], 5);
            seen.extend(
                res["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m["id"].as_str().unwrap().to_string()),
            );
            match res["next"]["page"].as_str() {
                Some(p) => page = p.to_string(),
                None => break,
            }
        }
        let mut expected = people.clone();
        if order == "desc" {
            expected.reverse();
        }
        assert_eq!(seen, expected, "order={order}");
    }
}

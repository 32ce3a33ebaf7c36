//! The durable job table's give-up rules: a job whose runs keep failing is retried with a
//! growing wait, then failed for good; a job whose process keeps stopping while it runs
//! (its lease runs out with no outcome) is failed after a few starts, and what it was for
//! (here an OpenAPI spec's processing) shows the failure. The operator sees failed jobs in
//! the metrics.

use std::time::Duration;

use quire_server::domain::jobs::{run_due, MAX_FAILURES, MAX_INTERRUPTIONS};
use quire_server::store::jobs;
use serde_json::json;

use crate::harness::TestApp;

/// A kind no worker knows: each of its runs ends in an error.
const NEVER_WORKS: &str = "test-never-works";

const LEASE_MS: i64 = 5 * 60 * 1000;

/// The job's `run_at` and failed runs.
async fn row(app: &TestApp, id: &str) -> (i64, i64) {
    sqlx::query_as("SELECT run_at, failures FROM jobs WHERE id = $1")
        .bind(id)
        .fetch_one(app.state.db.pool())
        .await
        .unwrap()
}

/// Runs due jobs until the job has failed `failures` times (this node's background worker
/// may be the one that runs it).
async fn until_failures(app: &TestApp, id: &str, failures: i64) -> (i64, i64) {
    for _ in 0..400 {
        run_due(&app.state).await.unwrap();
        let row = row(app, id).await;
        if row.1 >= failures {
            return row;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("job {id} never reached {failures} failures");
}

async fn failed(app: &TestApp, id: &str) -> Option<jobs::FailedJob> {
    jobs::failed(&app.state.db, 100)
        .await
        .unwrap()
        .into_iter()
        .find(|j| j.id == id)
}

#[tokio::test]
async fn a_job_that_keeps_failing_is_retried_later_each_time_then_failed_for_good() {
    let app = TestApp::start_with(|c| c.metrics_token = Some("scrape".into())).await;
    let now = app.state.now();
    let mut tx = app.state.db.begin().await.unwrap();
    tx.touches(&[]);
    let id = jobs::enqueue(&mut tx, NEVER_WORKS, "x", now, now)
        .await
        .unwrap();
    tx.commit().await.unwrap();

    let mut waits = Vec::new();
    for n in 1..MAX_FAILURES {
        let (run_at, _) = until_failures(&app, &id, n).await;
        waits.push((run_at - app.state.now() + 30_000) / 60_000);
        assert!(failed(&app, &id).await.is_none(), "failed after {n} runs");
        // Past the longest wait: the job is due again.
        app.clock.advance_ms(9 * 60_000);
    }
    // A minute after the first failure, then twice as long each time.
    assert_eq!(waits, [1, 2, 4, 8]);
    for _ in 0..400 {
        run_due(&app.state).await.unwrap();
        if failed(&app, &id).await.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let job = failed(&app, &id).await.expect("failed for good");
    assert_eq!((job.attempts, job.failures), (MAX_FAILURES, MAX_FAILURES));
    let reason = job.reason.unwrap_or_default();
    assert!(reason.contains("failed 5 times"), "{reason}");
    assert!(reason.contains("unknown job kind"), "{reason}");
    // Kept for the operator, never claimed again, and not counted as waiting.
    let later = app.state.now() + 30 * 86_400_000;
    let claimed = jobs::claim(&app.state.db, later, LEASE_MS).await.unwrap();
    assert_ne!(claimed.map(|j| j.id), Some(id.clone()));
    assert_eq!(jobs::count(&app.state.db, NEVER_WORKS).await.unwrap(), 0);
    let metrics = reqwest::Client::new()
        .get(format!("{}/metrics", app.base))
        .bearer_auth("scrape")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(&format!("quire_jobs_failed{{kind=\"{NEVER_WORKS}\"}} 1")),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_job_whose_process_keeps_stopping_is_failed_and_its_spec_says_so() {
    let app = TestApp::start().await;
    let admin = app.persona("admin").await;
    let org = app.org(&admin, "Acme").await;
    let path = format!("/v1/orgs/{org}/openapi/pets");
    let text = "openapi: 3.1.0\ninfo: {title: Pets, version: '1'}\ncomponents: {}\n";
    let spec = app
        .put(&admin, &path, json!({ "source": { "text": text } }))
        .await
        .expect(201);
    let spec_id = spec["id"].as_str().unwrap().to_string();
    let good = loop {
        run_due(&app.state).await.unwrap();
        let spec = app.get(&admin, &path).await.expect(200);
        if spec["processingState"] == "complete" {
            break spec["lastVersion"].clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    };
    assert!(good.is_string());

    // The spec's processing again, due tomorrow (so that no worker takes it meanwhile).
    // Each start below claims it, marks the spec in progress as the job does, and then
    // never finishes: the process died.
    let tomorrow = app.state.now() + 86_400_000;
    let mut tx = app.state.db.begin().await.unwrap();
    tx.touches(&[]);
    let payload = format!("{spec_id} 1");
    let id = jobs::enqueue(
        &mut tx,
        quire_server::domain::openapi::JOB,
        &payload,
        tomorrow,
        tomorrow,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let mut at = tomorrow;
    for start in 1..=MAX_INTERRUPTIONS {
        let job = jobs::claim(&app.state.db, at, LEASE_MS)
            .await
            .unwrap()
            .expect("due");
        assert_eq!((job.id.as_str(), job.attempts), (id.as_str(), start));
        quire_server::store::openapi::start_processing(&app.state.db, &spec_id, 1, at)
            .await
            .unwrap();
        // Held while its lease lasts, by a process that is gone.
        assert!(jobs::claim(&app.state.db, at + LEASE_MS - 1, LEASE_MS)
            .await
            .unwrap()
            .is_none());
        at += LEASE_MS + 1;
    }
    let stuck = app.get(&admin, &path).await.expect(200);
    assert_eq!(stuck["processingState"], "progress");

    // The next start gives it up instead of running it a fourth time.
    app.clock.advance_ms(at - app.state.now() + 1000);
    let mut spec = stuck;
    for _ in 0..400 {
        run_due(&app.state).await.unwrap();
        spec = app.get(&admin, &path).await.expect(200);
        if spec["processingState"] == "complete" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(spec["processingState"], "complete", "{spec}");
    assert_eq!(spec["lastProcessErrorCode"], "PARSE_ERROR", "{spec}");
    assert_eq!(spec["lastProcessedErrors"][0]["code"], "PROCESSING_FAILED");
    let message = spec["lastProcessedErrors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "interrupted {MAX_INTERRUPTIONS} times (the process stopped while running it)"
        )),
        "{message}"
    );
    assert_eq!(spec["lastVersion"], good, "the last good version stays");
    let job = failed(&app, &id).await.expect("failed for good");
    assert_eq!((job.attempts, job.failures), (MAX_INTERRUPTIONS + 1, 0));
    let later = app.state.now() + 30 * 86_400_000;
    let claimed = jobs::claim(&app.state.db, later, LEASE_MS).await.unwrap();
    assert_ne!(claimed.map(|j| j.id), Some(id));

    // A new source is processed as usual.
    let text = "openapi: 3.1.0\ninfo: {title: Pets, version: '2'}\ncomponents: {}\n";
    app.put(&admin, &path, json!({ "source": { "text": text } }))
        .await
        .expect(200);
    for _ in 0..400 {
        run_due(&app.state).await.unwrap();
        spec = app.get(&admin, &path).await.expect(200);
        if spec["processingState"] == "complete" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(spec.get("lastProcessErrorCode").is_none(), "{spec}");
    assert_ne!(spec["lastVersion"], good);
}

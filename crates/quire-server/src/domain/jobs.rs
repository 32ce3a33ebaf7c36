//! Background work from the durable job table. Every node runs a worker; a job is claimed
//! with a lease, so several nodes share the table safely and a node that dies mid-job
//! leaves it to be claimed again when the lease expires.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use crate::state::AppState;
use crate::store;
use crate::store::jobs::Job;

/// How long a deleted space can be restored before it is purged, as this node is set.
pub fn retention_ms(state: &AppState) -> i64 {
    i64::try_from(state.config.deleted_space_retention_ms).unwrap_or(i64::MAX / 2)
}

/// Job kind that purges a deleted space.
pub const PURGE_JOB: &str = "purge-space";

/// Runs every job that is due now; returns how many ran.
pub async fn run_due(state: &AppState) -> anyhow::Result<usize> {
    run_due_until(state, &tokio::sync::watch::channel(false).1).await
}

/// Runs due jobs until none is left or `stop` turns true; a job already started is finished
/// first (a step of a job is one transaction: stopping mid-step would only waste it).
async fn run_due_until(
    state: &AppState,
    stop: &tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<usize> {
    let mut ran = 0;
    let lease_ms = i64::try_from(state.config.job_lease_ms.max(300)).unwrap_or(i64::MAX / 4);
    while !*stop.borrow() {
        let Some(job) = store::jobs::claim(&state.db, state.now(), lease_ms).await? else {
            break;
        };
        tracing::info!(job = %job.id, kind = %job.kind, attempt = job.attempts, "job started");
        let lease = AtomicI64::new(job.lease);
        // The lease is renewed while the job runs; if another node took it over (this node
        // stalled past its lease), the work here is dropped: each step of a job is one
        // transaction, so a dropped step leaves nothing behind.
        let outcome = tokio::select! {
            done = execute(state, &job) => Some(done),
            () = keep_lease(state, &job.id, &lease, lease_ms) => None,
        };
        let lease = lease.load(Ordering::SeqCst);
        match outcome {
            None => {
                tracing::warn!(job = %job.id, kind = %job.kind, "job lease lost to another node; abandoned here");
            }
            Some(Ok(())) => {
                if store::jobs::finish(&state.db, &job.id, lease).await? {
                    tracing::info!(job = %job.id, kind = %job.kind, "job finished");
                } else {
                    tracing::warn!(job = %job.id, kind = %job.kind, "job finished after its lease was taken over");
                }
            }
            Some(Err(err)) => {
                tracing::warn!(job = %job.id, kind = %job.kind, error = %err, "job failed; will retry");
                let backoff = 60_000 * job.attempts.clamp(1, 60);
                let retry = state.now() + backoff;
                store::jobs::fail(&state.db, &job.id, lease, &err.to_string(), retry).await?;
            }
        }
        ran += 1;
    }
    Ok(ran)
}

/// Renews a job's lease every third of its length; returns only once it is lost (another
/// node claimed the job, or renewals failed until the lease ran out).
async fn keep_lease(state: &AppState, id: &str, lease: &AtomicI64, lease_ms: i64) {
    let every = Duration::from_millis(u64::try_from(lease_ms / 3).unwrap_or(100).max(100));
    loop {
        tokio::time::sleep(every).await;
        let held = lease.load(Ordering::SeqCst);
        let until = state.now() + lease_ms;
        match store::jobs::renew(&state.db, id, held, until).await {
            Ok(true) => lease.store(until, Ordering::SeqCst),
            Ok(false) => return,
            Err(err) => {
                tracing::warn!(job = %id, error = %err, "could not renew a job's lease");
                if state.now() >= held {
                    return;
                }
            }
        }
    }
}

async fn execute(state: &AppState, job: &Job) -> anyhow::Result<()> {
    match job.kind.as_str() {
        PURGE_JOB => purge_space(state, &job.payload).await,
        crate::domain::content::PRUNE_JOB => {
            crate::domain::content::prune_derived(state, &job.payload)
                .await
                .map(drop)
        }
        crate::domain::openapi::JOB => crate::domain::openapi::process(state, &job.payload).await,
        crate::domain::search::JOB => {
            Ok(crate::domain::search::maintain(state, &job.payload).await?)
        }
        crate::domain::translations::JOB => {
            crate::domain::translations::run(state, &job.id, &job.payload).await
        }
        other => anyhow::bail!("unknown job kind {other}"),
    }
}

/// Removes a space for good if it is still deleted and its retention has passed. A space
/// restored (or deleted again later) is left alone: a later job covers a later deletion.
async fn purge_space(state: &AppState, space_id: &str) -> anyhow::Result<()> {
    let cutoff = state.now() - retention_ms(state);
    if !store::spaces::deleted_before(&state.db, space_id, cutoff).await? {
        return Ok(());
    }
    let mut tx = state.db.begin().await?;
    let blobs = store::objects::blob_refs(&mut tx, space_id).await?;
    store::spaces::purge(&mut tx, space_id).await?;
    tx.commit().await?;
    state
        .cache
        .invalidate(&[crate::cache::Scope::Space(space_id)]);
    // File bytes no other space uses go too. A crash between the commit and here can only
    // leave unreferenced bytes behind, never remove bytes that some content still names.
    for hash in store::objects::unused_blobs(&state.db, &blobs).await? {
        state.blobs.delete(&hash).await?;
        store::objects::delete_blob(&state.db, &hash).await?;
    }
    state.blobs.delete_derived(space_id).await?;
    tracing::info!(space = %space_id, "purged deleted space");
    Ok(())
}

/// Runs due jobs every `interval` until `stop` turns true, then returns once the job in
/// hand (if any) is done.
pub fn spawn_worker(
    state: AppState,
    interval: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while !*stop.borrow() {
            if let Err(err) = run_due_until(&state, &stop).await {
                tracing::warn!(error = %err, "job worker pass failed");
            }
            tokio::select! {
                () = tokio::time::sleep(interval) => {}
                () = state.jobs_due.notified() => {}
                _ = stop.changed() => {}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stopped_worker_returns_without_waiting_out_its_interval() {
        let dir = tempfile::tempdir().unwrap();
        let config = crate::config::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        };
        let state = AppState::open(
            config,
            std::sync::Arc::new(crate::clock::SystemClock),
            "http://quire.test".into(),
        )
        .await
        .unwrap();
        let (stop, stopped) = tokio::sync::watch::channel(false);
        // An hour between passes: only the stop signal can end this worker in time.
        let worker = spawn_worker(state, Duration::from_secs(3600), stopped);
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(60), worker)
            .await
            .expect("the worker stops when told")
            .unwrap();
    }
}

//! Background work from the durable job table. Every node runs a worker; a job is claimed
//! with a lease, so several nodes share the table safely and a node that dies mid-job
//! leaves it to be claimed again when the lease expires.
//!
//! A job that cannot succeed is given up on rather than retried forever: after
//! [`MAX_FAILURES`] runs that ended in an error (retried with a growing wait), or after
//! [`MAX_INTERRUPTIONS`] starts that ended with no outcome at all (its process died while
//! running it: a job that exhausts memory would otherwise kill every node that restarts).
//! The job's row is kept, failed with its reason, for the operator (`quire admin
//! failed-jobs`, `quire_jobs_failed`), and what the job was for shows the failure.
//!
//! The runner knows no kind of job itself: each is a [`JobKind`] defined by the module
//! whose work it runs, and the server registers them all when it starts.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures_util::FutureExt;

use crate::db::Tx;
use crate::state::{AppState, JobKind};
use crate::store;
use crate::store::jobs::Job;

/// Runs of a job that may end in an error before it is given up on.
pub const MAX_FAILURES: i64 = 5;

/// Starts of a job that may end with no outcome (the process stopped while running it, or
/// its lease was lost) before it is given up on, unrun, at the next start.
pub const MAX_INTERRUPTIONS: i64 = 3;

/// Wait before retrying a job after its first failed run; it doubles with each failure
/// (1, 2, 4 and 8 minutes before the last run).
const RETRY_MS: i64 = 60_000;

/// Longest error kept for a job, in characters.
const MAX_ERROR_CHARS: usize = 2000;

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
        ran += 1;
        // Earlier starts that ended neither finished nor failed: their process stopped.
        let interrupted = job.attempts - 1 - job.failures;
        if interrupted >= MAX_INTERRUPTIONS {
            let reason = format!(
                "The job was interrupted {interrupted} times (the process stopped while running it)."
            );
            give_up(state, &job, job.lease, false, &reason).await?;
            continue;
        }
        tracing::info!(job = %job.id, kind = %job.kind, attempt = job.attempts, "job started");
        let lease = AtomicI64::new(job.lease);
        // The lease is renewed while the job runs; if another node took it over (this node
        // stalled past its lease), the work here is dropped: each step of a job is one
        // transaction, so a dropped step leaves nothing behind. A panic is a failed run,
        // not the end of this node's worker.
        let outcome = tokio::select! {
            done = AssertUnwindSafe(execute(state, &job)).catch_unwind() => Some(
                done.unwrap_or_else(|_| Err(anyhow::anyhow!("the job panicked")))
            ),
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
                let failures = job.failures + 1;
                let error = clip(&format!("{err:#}"));
                if failures >= MAX_FAILURES {
                    let reason =
                        format!("The job failed {failures} times; the last error: {error}");
                    give_up(state, &job, lease, true, &reason).await?;
                } else {
                    tracing::warn!(job = %job.id, kind = %job.kind, error = %error, "job failed; will retry");
                    let retry = state.now() + (RETRY_MS << (failures - 1).clamp(0, 20));
                    store::jobs::fail(&state.db, &job.id, lease, &error, retry).await?;
                }
            }
        }
    }
    Ok(ran)
}

/// `text` cut to [`MAX_ERROR_CHARS`]: errors are stored, and may quote their input.
fn clip(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Fails the job held under `lease` for good (after a failed run of this claim, or none),
/// and shows the failure where its owner looks, in one transaction; nothing when another
/// node took the job over meanwhile.
async fn give_up(
    state: &AppState,
    job: &Job,
    lease: i64,
    failed_run: bool,
    reason: &str,
) -> anyhow::Result<()> {
    let now = state.now();
    let mut tx = state.db.begin().await?;
    // What a job is given up on for (a spec's processing, a translation) is read fresh.
    tx.touches(&[]);
    if !store::jobs::give_up(&mut tx, &job.id, lease, failed_run, reason, now).await? {
        return Ok(());
    }
    tracing::error!(job = %job.id, kind = %job.kind, payload = %job.payload, reason = %reason, "job given up on");
    let wake = match owner_failed(state, &mut tx, job, reason, now).await {
        Ok(wake) => {
            tx.commit().await?;
            wake
        }
        Err(err) => {
            // The job is given up on all the same: running it again is what must stop.
            tracing::warn!(job = %job.id, error = %err, "could not record a failed job with its owner");
            drop(tx);
            let mut tx = state.db.begin().await?;
            tx.touches(&[]);
            store::jobs::give_up(&mut tx, &job.id, lease, failed_run, reason, now).await?;
            tx.commit().await?;
            false
        }
    };
    if wake {
        state.jobs_due.notify_one();
    }
    Ok(())
}

/// Tells the job's owner, inside `tx`, that it was given up on; returns whether a job was
/// enqueued in its place (to wake the worker once committed). Pruning and search
/// maintenance have no user to tell, and the space's next change enqueues them again; a
/// purge given up on leaves its space deleted, not purged. The operator sees each one.
async fn owner_failed(
    state: &AppState,
    tx: &mut Tx,
    job: &Job,
    reason: &str,
    now: i64,
) -> anyhow::Result<bool> {
    match kind(state, &job.kind).and_then(|k| k.given_up) {
        Some(given_up) => given_up(tx, job, reason, now).await,
        None => Ok(false),
    }
}

/// The registered kind named `name`.
fn kind<'a>(state: &'a AppState, name: &str) -> Option<&'a JobKind> {
    state.job_kinds.get()?.iter().find(|k| k.name == name)
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
    match kind(state, &job.kind) {
        Some(kind) => (kind.run)(state, job).await,
        None => anyhow::bail!("unknown job kind {}", job.kind),
    }
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

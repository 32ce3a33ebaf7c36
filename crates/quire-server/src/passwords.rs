//! Password hashing (argon2id, PHC strings) in a few slots per node with a bounded queue:
//! each hash holds about 19 MiB for tens of milliseconds, so a flood of sign-ins (no
//! account needed) would otherwise hold that much per request at once.

use argon2::password_hash::rand_core::OsRng;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;

/// Password hashing on one node: only a few hashes run at once and only a bounded number
/// wait; past that, [`Busy`].
#[derive(Debug)]
pub struct Hashing {
    slots: tokio::sync::Semaphore,
    /// Hashes running or waiting for a slot.
    queued: std::sync::atomic::AtomicUsize,
    /// Most hashes running or waiting at once.
    max_queued: usize,
}

/// The node's password hashing is at its bound: try again in a few seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

/// Seconds a client refused with [`Busy`] is told to wait (`Retry-After`).
pub const BUSY_RETRY_SECONDS: u64 = 5;

impl Hashing {
    /// At most `slots` hashes at once, and `waiting` more waiting for a slot.
    pub fn new(slots: usize, waiting: usize) -> Self {
        let slots = slots.max(1);
        Hashing {
            slots: tokio::sync::Semaphore::new(slots),
            queued: std::sync::atomic::AtomicUsize::new(0),
            max_queued: slots + waiting,
        }
    }

    /// A node's hashing: half its cores, at least one and at most four, and sixteen waiting
    /// for each (each hash takes tens of milliseconds in a release build).
    pub fn for_this_machine() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        let slots = (cores / 2).clamp(1, 4);
        Hashing::new(slots, slots * 16)
    }

    /// Runs `work` in a slot, off the async workers; [`Busy`] at once when too many run or
    /// wait already.
    pub async fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Busy> {
        use std::sync::atomic::Ordering;
        // Counted before waiting, and given back however this ends (a dropped request too).
        struct Queued<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Queued<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        if self.queued.fetch_add(1, Ordering::AcqRel) >= self.max_queued {
            self.queued.fetch_sub(1, Ordering::AcqRel);
            return Err(Busy);
        }
        let _queued = Queued(&self.queued);
        let _slot = self.slots.acquire().await.map_err(|_| Busy)?;
        tokio::task::spawn_blocking(work).await.map_err(|_| Busy)
    }
}

/// The argon2id hash of a password (PHC string) with a new salt, computed in a slot of
/// `hashing`.
pub async fn hash(hashing: &Hashing, password: &str) -> Result<anyhow::Result<String>, Busy> {
    let password = password.to_string();
    hashing
        .run(move || {
            let salt = SaltString::generate(&mut OsRng);
            Argon2::default()
                .hash_password(password.as_bytes(), &salt)
                .map(|h| h.to_string())
                .map_err(|e| anyhow::anyhow!("cannot hash the password: {e}"))
        })
        .await
}

/// Whether `password` matches a stored hash (computed in a slot of `hashing`); a stored
/// value that is no PHC string matches nothing.
pub async fn verify(hashing: &Hashing, password: &str, stored: &str) -> Result<bool, Busy> {
    let (password, stored) = (password.to_string(), stored.to_string());
    hashing
        .run(move || {
            PasswordHash::new(&stored)
                .map(|parsed| {
                    Argon2::default()
                        .verify_password(password.as_bytes(), &parsed)
                        .is_ok()
                })
                .unwrap_or(false)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn hashes_are_argon2id_and_verify() {
        let h = Hashing::new(1, 0);
        let hash = hash(&h, "a long enough secret").await.unwrap().unwrap();
        assert!(hash.starts_with("$argon2id$"), "{hash}");
        assert_eq!(verify(&h, "a long enough secret", &hash).await, Ok(true));
        assert_eq!(verify(&h, "another secret here", &hash).await, Ok(false));
        assert_eq!(verify(&h, "anything", "not a hash").await, Ok(false));
    }

    #[tokio::test]
    async fn hashing_runs_a_few_at_once_and_refuses_past_its_queue() {
        let h = std::sync::Arc::new(Hashing::new(1, 2));
        let (started, mut running) = tokio::sync::mpsc::unbounded_channel();
        // Each run waits until `release` is dropped.
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let gate = std::sync::Arc::new(std::sync::Mutex::new(gate));
        // One runs (held at the gate), two wait for its slot: the bound.
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let (h, gate, started) = (h.clone(), gate.clone(), started.clone());
            tasks.push(tokio::spawn(async move {
                h.run(move || {
                    let _ = started.send(());
                    let _ = gate.lock().unwrap().recv();
                })
                .await
            }));
        }
        running.recv().await.unwrap();
        while h.queued.load(std::sync::atomic::Ordering::Acquire) < 3 {
            tokio::task::yield_now().await;
        }
        assert_eq!(h.run(|| ()).await, Err(Busy), "a fourth is refused at once");
        drop(release);
        for t in tasks {
            assert_eq!(t.await.unwrap(), Ok(()));
        }
        // A waiter that gives up gives its place back.
        assert_eq!(h.queued.load(std::sync::atomic::Ordering::Acquire), 0);
        assert_eq!(h.run(|| 7).await, Ok(7));
    }
}

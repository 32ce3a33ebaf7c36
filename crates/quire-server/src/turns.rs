//! Turns by key, per node: writes that would race to compare-and-set the same row (a change
//! request's revision, a space's main revision) wait for each other on this node instead, so
//! that only writes of different nodes can race, and retry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::{Mutex as TurnLock, OwnedMutexGuard};

/// Keys with a write holding or awaiting their turn beyond which unused entries are swept.
const SWEEP_PAST: usize = 256;

/// This node's turns.
#[derive(Debug, Default)]
pub struct Turns {
    locks: Mutex<HashMap<String, Weak<TurnLock<()>>>>,
}

/// A turn held: the next write of its key waits until it is dropped.
pub type Turn = OwnedMutexGuard<()>;

impl Turns {
    /// Waits for the turn of `key` (first come, first served) and holds it.
    pub async fn take(&self, key: &str) -> Turn {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            match locks.get(key).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    if locks.len() >= SWEEP_PAST {
                        locks.retain(|_, w| w.strong_count() > 0);
                    }
                    let lock = Arc::new(TurnLock::new(()));
                    locks.insert(key.to_string(), Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }

    /// Keys known now (tests).
    pub fn len(&self) -> usize {
        self.locks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|w| w.strong_count() > 0)
            .count()
    }

    /// Whether no key is held or awaited (tests).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_key_is_held_by_one_write_at_a_time_and_others_are_free() {
        let turns = Arc::new(Turns::default());
        let first = turns.take("cr:a").await;
        let waiting = {
            let turns = turns.clone();
            tokio::spawn(async move {
                let _t = turns.take("cr:a").await;
            })
        };
        // Another key is not held up.
        let _other = turns.take("cr:b").await;
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(first);
        waiting.await.unwrap();
    }

    #[tokio::test]
    async fn keys_are_forgotten_once_unused() {
        let turns = Turns::default();
        for i in 0..(SWEEP_PAST * 2) {
            drop(turns.take(&format!("k{i}")).await);
        }
        assert!(turns.locks.lock().unwrap().len() <= SWEEP_PAST + 1);
        assert!(turns.is_empty());
    }
}

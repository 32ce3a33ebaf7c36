//! Fair turns at a node's few slots, by key: a key (an organization, for published pages)
//! holds at most `per_key` slots at once, and a slot that frees goes to the next key in
//! turn among those waiting, not to the oldest waiter. So a flood of one key's requests
//! waits behind itself, and another key's request takes the next slot, or one left free.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::sync::oneshot;

/// Slots shared fairly among keys.
#[derive(Clone)]
pub struct FairSlots(Arc<Inner>);

struct Inner {
    per_key: usize,
    queue_bound: usize,
    queues: Mutex<Queues>,
}

struct Queues {
    free: usize,
    keys: HashMap<Arc<str>, Key>,
    /// The keys with waiters, in the order their turns come.
    ring: VecDeque<Arc<str>>,
}

/// One key's slots held and waiters (a waiter whose request was dropped stays until its
/// turn comes or the queue is full, then is passed over).
#[derive(Default)]
struct Key {
    held: usize,
    waiting: VecDeque<oneshot::Sender<Slot>>,
}

/// A slot held; dropping it hands it on.
pub struct Slot {
    /// `None` once handed to a waiter that was gone: such a slot was never counted.
    owner: Option<(Arc<Inner>, Arc<str>)>,
}

/// Refused at once: the key has `queue_bound` requests waiting already.
#[derive(Debug)]
pub struct Full;

/// A request in its key's queue (or already served), resolved with its slot.
pub struct Waiting {
    state: WaitingState,
    /// Keeps the queues, and so this waiter's sender, alive while it waits.
    _slots: Arc<Inner>,
}

enum WaitingState {
    Ready(Option<Slot>),
    Queued(oneshot::Receiver<Slot>),
}

impl FairSlots {
    /// `total` slots, at most `per_key` of them held by one key, at most `queue_bound`
    /// requests waiting per key.
    pub fn new(total: usize, per_key: usize, queue_bound: usize) -> Self {
        FairSlots(Arc::new(Inner {
            per_key: per_key.max(1),
            queue_bound,
            queues: Mutex::new(Queues {
                free: total.max(1),
                keys: HashMap::new(),
                ring: VecDeque::new(),
            }),
        }))
    }

    /// Takes a place for `key` now: served at once when a slot is free and `key` holds
    /// fewer than its share, queued otherwise, refused when its queue is full. Await the
    /// answer for the slot; dropping it gives up the place (or the slot).
    pub fn take(&self, key: &str) -> Result<Waiting, Full> {
        let inner = &self.0;
        let mut q = inner.lock();
        let Queues { free, keys, ring } = &mut *q;
        let k = keys.entry(Arc::from(key)).or_default();
        if *free > 0 && k.held < inner.per_key && k.waiting.is_empty() {
            *free -= 1;
            k.held += 1;
            let slot = Slot {
                owner: Some((inner.clone(), Arc::from(key))),
            };
            return Ok(self.waiting(WaitingState::Ready(Some(slot))));
        }
        if k.waiting.len() >= inner.queue_bound {
            k.waiting.retain(|tx| !tx.is_closed());
            if k.waiting.len() >= inner.queue_bound {
                return Err(Full);
            }
            // Every waiter may have been gone, and the key then out of the ring.
            if k.waiting.is_empty() {
                ring.retain(|r| &**r != key);
            }
        }
        let (tx, rx) = oneshot::channel();
        if k.waiting.is_empty() {
            ring.push_back(Arc::from(key));
        }
        k.waiting.push_back(tx);
        inner.hand_out(&mut q);
        Ok(self.waiting(WaitingState::Queued(rx)))
    }

    fn waiting(&self, state: WaitingState) -> Waiting {
        Waiting {
            state,
            _slots: self.0.clone(),
        }
    }

    /// Slots `key` holds now.
    pub fn held(&self, key: &str) -> usize {
        self.0.lock().keys.get(key).map_or(0, |k| k.held)
    }

    /// Requests of `key` waiting now (those given up not counted).
    pub fn waiting_for(&self, key: &str) -> usize {
        self.0
            .lock()
            .keys
            .get(key)
            .map_or(0, |k| k.waiting.iter().filter(|tx| !tx.is_closed()).count())
    }

    /// Slots free now.
    pub fn free(&self) -> usize {
        self.0.lock().free
    }

    /// The most slots one key holds at once.
    pub fn per_key(&self) -> usize {
        self.0.per_key
    }
}

impl std::fmt::Debug for FairSlots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FairSlots")
            .field("per_key", &self.0.per_key)
            .field("free", &self.free())
            .finish_non_exhaustive()
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queues> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Gives free slots to waiting keys in turn, passing over keys at their share and
    /// waiters that are gone.
    fn hand_out(self: &Arc<Self>, q: &mut Queues) {
        let Queues { free, keys, ring } = q;
        // Keys at their share passed over since the last slot given: once every key in
        // the ring was, none can take one.
        let mut passed = 0;
        while *free > 0 && passed < ring.len() {
            let Some(name) = ring.pop_front() else { break };
            let Some(k) = keys.get_mut(&name) else {
                continue;
            };
            if k.held >= self.per_key {
                ring.push_back(name);
                passed += 1;
                continue;
            }
            while let Some(tx) = k.waiting.pop_front() {
                let slot = Slot {
                    owner: Some((self.clone(), name.clone())),
                };
                match tx.send(slot) {
                    Ok(()) => {
                        k.held += 1;
                        *free -= 1;
                        passed = 0;
                        break;
                    }
                    // Its request was dropped: this slot was not counted, so it must not
                    // be handed back (nor the lock taken again, which this thread holds).
                    Err(mut slot) => slot.owner = None,
                }
            }
            if !k.waiting.is_empty() {
                ring.push_back(name);
            } else if k.held == 0 {
                keys.remove(&name);
            }
        }
    }

    fn release(self: &Arc<Self>, key: &str) {
        let mut q = self.lock();
        q.free += 1;
        if let Some(k) = q.keys.get_mut(key) {
            k.held -= 1;
            if k.held == 0 && k.waiting.is_empty() {
                q.keys.remove(key);
            }
        }
        self.hand_out(&mut q);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some((inner, key)) = self.owner.take() {
            inner.release(&key);
        }
    }
}

impl Future for Waiting {
    type Output = Slot;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Slot> {
        match &mut self.state {
            WaitingState::Ready(slot) => {
                Poll::Ready(slot.take().expect("polled after it was ready"))
            }
            // A queued sender is dropped unsent only once its receiver is gone, and the
            // queues outlive this waiter: the channel cannot close under it.
            WaitingState::Queued(rx) => Pin::new(rx)
                .poll(cx)
                .map(|sent| sent.expect("a waiter's slot is sent before its sender goes")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    /// Polls each waiter once and names those that got their slot, keeping the slots.
    fn served(
        waiters: &mut Vec<(&'static str, Waiting)>,
        held: &mut Vec<(&'static str, Slot)>,
    ) -> Vec<&'static str> {
        let mut names = Vec::new();
        waiters.retain_mut(|(name, w)| match w.now_or_never() {
            Some(slot) => {
                names.push(*name);
                held.push((*name, slot));
                false
            }
            None => true,
        });
        names
    }

    #[test]
    fn a_freed_slot_goes_to_the_next_key_in_turn_not_to_the_oldest_waiter() {
        let slots = FairSlots::new(1, 1, 16);
        let first = slots.take("a").unwrap().now_or_never().unwrap();
        // Key `a` floods first, then `b` and `c` ask once each.
        let mut waiters: Vec<(&str, Waiting)> = ["a1", "a2", "a3", "b1", "c1"]
            .into_iter()
            .map(|n| (n, slots.take(&n[..1]).unwrap()))
            .collect();
        let mut held = Vec::new();
        assert!(served(&mut waiters, &mut held).is_empty());
        drop(first);
        let mut order = Vec::new();
        while !waiters.is_empty() {
            let now = served(&mut waiters, &mut held);
            assert_eq!(now.len(), 1, "one slot, one waiter served: {now:?}");
            order.extend(now);
            held.clear();
        }
        assert_eq!(order, ["a1", "b1", "c1", "a2", "a3"]);
        assert_eq!(slots.free(), 1);
    }

    #[test]
    fn a_key_holds_its_share_at_most_and_leaves_the_rest_to_others() {
        let slots = FairSlots::new(3, 2, 16);
        let a: Vec<Slot> = (0..2)
            .map(|_| slots.take("a").unwrap().now_or_never().unwrap())
            .collect();
        // A third slot is free, yet `a` waits: it is kept for another key.
        let mut a3 = slots.take("a").unwrap();
        assert!((&mut a3).now_or_never().is_none());
        assert_eq!(slots.free(), 1);
        let b = slots
            .take("b")
            .unwrap()
            .now_or_never()
            .expect("b served at once");
        assert_eq!(slots.free(), 0);
        // `b` letting go of its slot does not give it to `a`, still at its share...
        drop(b);
        assert!((&mut a3).now_or_never().is_none());
        assert_eq!(slots.free(), 1);
        // ...one of `a`'s own does.
        drop(a);
        let a3 = a3.now_or_never().expect("a served once under its share");
        assert_eq!((slots.held("a"), slots.free()), (1, 2));
        drop(a3);
        assert_eq!((slots.held("a"), slots.free()), (0, 3));
    }

    #[test]
    fn a_waiter_given_up_takes_no_slot_and_keeps_none() {
        let slots = FairSlots::new(1, 1, 16);
        let first = slots.take("a").unwrap().now_or_never().unwrap();
        let gone = slots.take("a").unwrap();
        let mut next = slots.take("b").unwrap();
        assert_eq!(slots.waiting_for("a"), 1);
        // Given up before its turn: passed over, the slot goes to the next waiter.
        drop(gone);
        assert_eq!(slots.waiting_for("a"), 0);
        drop(first);
        let slot = (&mut next).now_or_never().expect("b served");
        drop(slot);
        assert_eq!(slots.free(), 1);
        // Given up after its slot was sent, before reading it: the slot comes back.
        let first = slots.take("a").unwrap().now_or_never().unwrap();
        let sent = slots.take("b").unwrap();
        drop(first);
        assert_eq!((slots.free(), slots.held("b")), (0, 1));
        drop(sent);
        assert_eq!((slots.free(), slots.held("b")), (1, 0));
        // Nothing is left of either key.
        assert!(slots.0.lock().keys.is_empty() && slots.0.lock().ring.is_empty());
    }

    #[test]
    fn a_key_s_queue_is_bounded_and_waiters_given_up_make_room() {
        let slots = FairSlots::new(1, 1, 2);
        let first = slots.take("a").unwrap().now_or_never().unwrap();
        let w1 = slots.take("a").unwrap();
        let w2 = slots.take("a").unwrap();
        assert!(slots.take("a").is_err());
        // Another key has a queue of its own.
        let b = slots.take("b").unwrap();
        drop((w1, w2));
        let mut w3 = slots.take("a").unwrap();
        drop(first);
        // `a`'s only live waiter, after `b`, whose turn came first.
        assert!(b.now_or_never().is_some());
        assert!((&mut w3).now_or_never().is_some());
        assert_eq!(slots.free(), 1);
    }

    #[tokio::test]
    async fn waiters_timed_out_leak_no_slot() {
        let slots = FairSlots::new(2, 1, 64);
        let held = slots.take("a").await_ready();
        let mut tasks = Vec::new();
        for i in 0..20 {
            let slots = slots.clone();
            tasks.push(tokio::spawn(async move {
                let key = if i % 2 == 0 { "a" } else { "b" };
                let waiting = slots.take(key).unwrap();
                if i % 3 == 0 {
                    // Gives up at once, as a request past its wait would.
                    drop(waiting);
                } else {
                    let _slot = waiting.await;
                    tokio::task::yield_now().await;
                }
            }));
        }
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(slots.free(), 2);
        assert!(slots.0.lock().keys.is_empty());
    }

    trait ReadyNow {
        fn await_ready(self) -> Slot;
    }

    impl ReadyNow for Result<Waiting, Full> {
        fn await_ready(self) -> Slot {
            self.unwrap().now_or_never().expect("served at once")
        }
    }
}

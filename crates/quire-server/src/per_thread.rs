//! What the hot path writes on every request, kept per thread: a line every core writes is
//! a line the cores trade on every request, which cost a served-from-memory answer more than
//! finding it (BENCHMARKS.md, issue 11).

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};

/// A value of each thread, for one owner. A thread holds the values of a few owners at most
/// (one per node in a server; tests run several), and drops the oldest past that.
pub struct PerThread<T> {
    id: u64,
    _values: std::marker::PhantomData<fn() -> T>,
}

/// Owners' values a thread holds at most.
const PER_THREAD_OWNERS: usize = 16;

thread_local! {
    static PER_THREAD: std::cell::RefCell<Vec<(u64, Box<dyn Any>)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

static NEXT_OWNER: AtomicU64 = AtomicU64::new(0);

impl<T> Default for PerThread<T> {
    fn default() -> Self {
        Self {
            id: NEXT_OWNER.fetch_add(1, Ordering::Relaxed),
            _values: std::marker::PhantomData,
        }
    }
}

impl<T: Default + 'static> PerThread<T> {
    /// Runs `f` with this thread's value (made by `T::default` at first). `f` may use other
    /// owners' values; one that uses this owner's again gets a value of its own, dropped.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // Taken out while `f` runs, so that `f` may reach other owners' values. A thread
        // whose values are already gone (it is ending) gets a value of its own, dropped.
        let taken = PER_THREAD
            .try_with(|all| {
                let mut all = all.borrow_mut();
                let at = all.iter().position(|(id, _)| *id == self.id)?;
                Some(all.swap_remove(at).1)
            })
            .ok()
            .flatten();
        let mut value = taken
            .and_then(|v| v.downcast::<T>().ok())
            .unwrap_or_default();
        let out = f(&mut value);
        let _ = PER_THREAD.try_with(|all| {
            let mut all = all.borrow_mut();
            if all.len() >= PER_THREAD_OWNERS {
                all.remove(0);
            }
            all.push((self.id, value));
        });
        out
    }
}

/// A count that many threads add to. Each thread adds to a slot of its own (a cache line
/// of its own), so that counting does not make cores trade one line on every request; read,
/// the slots are summed.
pub struct Tally {
    slots: Box<[TallySlot; TALLY_SLOTS]>,
}

/// Slots of a [`Tally`]: threads past this many share slots, which stays exact.
const TALLY_SLOTS: usize = 16;

#[derive(Default)]
#[repr(align(128))]
struct TallySlot(AtomicU64);

thread_local! {
    /// This thread's slot in every tally.
    static TALLY_SLOT: usize = {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        (NEXT.fetch_add(1, Ordering::Relaxed) % TALLY_SLOTS as u64) as usize
    };
}

impl Default for Tally {
    fn default() -> Self {
        Self {
            slots: Box::new(std::array::from_fn(|_| TallySlot::default())),
        }
    }
}

impl Tally {
    /// Adds one.
    pub fn add(&self) {
        let slot = TALLY_SLOT.with(|i| *i);
        self.slots[slot].0.fetch_add(1, Ordering::Relaxed);
    }

    /// The sum so far.
    pub fn get(&self) -> u64 {
        self.slots.iter().map(|s| s.0.load(Ordering::Relaxed)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::{PerThread, Tally};

    #[test]
    fn a_per_thread_value_is_its_threads_and_its_owners() {
        let (a, b) = (PerThread::<u32>::default(), PerThread::<u32>::default());
        a.with(|v| *v += 1);
        // Used from inside another owner's `with`.
        b.with(|v| {
            *v += 10;
            a.with(|v| *v += 1);
        });
        assert_eq!(a.with(|v| *v), 2);
        assert_eq!(b.with(|v| *v), 10);
        let a = std::sync::Arc::new(a);
        let other = a.clone();
        assert_eq!(
            std::thread::spawn(move || other.with(|v| *v))
                .join()
                .unwrap(),
            0
        );
        // Past the bound, the oldest owners' values are dropped, not mixed up.
        let many: Vec<PerThread<u32>> = (0..40).map(|_| PerThread::default()).collect();
        for (i, p) in many.iter().enumerate() {
            p.with(|v| *v = i as u32 + 1);
        }
        for (i, p) in many.iter().enumerate().rev().take(10) {
            assert_eq!(p.with(|v| *v), i as u32 + 1);
        }
        assert_eq!(many[0].with(|v| *v), 0);
    }

    #[test]
    fn a_tally_sums_the_counts_of_every_thread() {
        let tally = std::sync::Arc::new(Tally::default());
        let threads: Vec<_> = (0..20)
            .map(|_| {
                let tally = tally.clone();
                std::thread::spawn(move || (0..1000).for_each(|_| tally.add()))
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(tally.get(), 20_000);
    }
}

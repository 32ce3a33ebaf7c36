//! What the hot path writes on every request, kept per thread: a line every core writes is
//! a line the cores trade on every request, which cost a served-from-memory answer more than
//! finding it (BENCHMARKS.md, issue 11).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use thread_local::ThreadLocal;

/// A value of each thread, for one owner, dropped with it.
pub struct PerThread<T: Send> {
    values: ThreadLocal<RefCell<T>>,
}

impl<T: Send> Default for PerThread<T> {
    fn default() -> Self {
        Self {
            values: ThreadLocal::new(),
        }
    }
}

impl<T: Default + Send> PerThread<T> {
    /// Runs `f` with this thread's value (made by `T::default` at first). `f` may use other
    /// owners' values; one that uses this owner's again gets a value of its own, dropped.
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        match self.values.get_or_default().try_borrow_mut() {
            Ok(mut value) => f(&mut value),
            Err(_) => f(&mut T::default()),
        }
    }
}

/// A count that many threads add to. Each thread adds to a slot of its own (a cache line
/// of its own), so that counting does not make cores trade one line on every request; read,
/// the slots are summed.
#[derive(Default)]
pub struct Tally {
    slots: ThreadLocal<TallySlot>,
}

#[derive(Default)]
#[repr(align(128))]
struct TallySlot(AtomicU64);

impl Tally {
    /// Adds one.
    pub fn add(&self) {
        self.slots
            .get_or_default()
            .0
            .fetch_add(1, Ordering::Relaxed);
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
        // Used again from inside its own `with`: a value of its own, dropped.
        a.with(|v| {
            assert_eq!(a.with(|inner| *inner), 0);
            *v += 1;
        });
        assert_eq!(a.with(|v| *v), 3);
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

//! Decoded revisions by root, bounded by the memory they hold together.
//!
//! Revisions of one space share their document bodies copy-on-write (`SharedDocument`): a
//! change request's revision, the space's revision it started from and their merge hold the
//! same bodies but for the pages that changed. Weighing each revision by all its text (as a
//! weighed cache does) counts those bodies once per revision: a space of 20 MB of text then
//! leaves room for one revision in a 32 MB share, while a merge reads three or four of them,
//! so every merge decoded them again from the database. Here
//! a body shared by several cached revisions is weighed once, and the least recently used
//! revisions leave (oldest first, with a second chance for one used since it was queued)
//! when the distinct bodies and the page records outgrow the capacity.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use quire_content::model::{Page, PageKind, Revision};

/// What a page weighs besides its body: its record, id, title, slug, links to children.
const PER_PAGE: u64 = 256;
/// What a file entry weighs.
const PER_FILE: u64 = 256;

/// Decoded revisions by root, bounded (see the module doc).
#[derive(Clone)]
pub struct Revisions {
    inner: Arc<RwLock<Inner>>,
    /// Ticks of use, for choosing the least recently used revision.
    clock: Arc<AtomicU64>,
    capacity: u64,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<String, Entry>,
    /// Every entry's root, oldest first, with the tick it was queued at: an entry used since
    /// it was queued goes to the back once more instead of leaving (a second chance), so
    /// choosing what leaves costs no scan of every entry.
    queue: VecDeque<(String, u64)>,
    /// Cached occurrences and length of each document body, by the body's identity.
    bodies: HashMap<usize, (u32, u64)>,
    /// Page and file records of every entry, plus each distinct body once.
    weight: u64,
}

struct Entry {
    rev: Arc<Revision>,
    /// The identities of the entry's document bodies, one per occurrence.
    bodies: Box<[usize]>,
    /// What the entry weighs besides its bodies.
    records: u64,
    used: AtomicU64,
}

/// A revision's document bodies (identity and length) and the weight of its records.
fn parts(rev: &Revision) -> (Vec<(usize, u64)>, u64) {
    let mut bodies = Vec::new();
    let mut pages = 0u64;
    let mut stack: Vec<&Page> = rev.pages.iter().collect();
    while let Some(page) = stack.pop() {
        pages += 1;
        if let PageKind::Document(doc) = &page.kind {
            bodies.push((doc.identity(), doc.markdown.len() as u64));
        }
        stack.extend(page.pages.iter());
    }
    (bodies, pages * PER_PAGE + rev.files.len() as u64 * PER_FILE)
}

impl Revisions {
    /// An empty cache holding about `capacity` bytes at most.
    pub fn new(capacity: u64) -> Self {
        Self {
            inner: Arc::default(),
            clock: Arc::default(),
            capacity,
        }
    }

    /// The bytes it holds at most.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// What `rev` weighs alone: its records and all its text.
    pub fn weight_alone(rev: &Revision) -> u64 {
        let (bodies, records) = parts(rev);
        records + bodies.iter().map(|(_, len)| len).sum::<u64>()
    }

    /// What the cached revisions weigh together now.
    #[cfg(test)]
    fn weight(&self) -> u64 {
        self.read().weight
    }

    /// How many revisions are cached.
    pub fn len(&self) -> usize {
        self.read().entries.len()
    }

    /// Whether no revision is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The revision `root`, marked as just used.
    pub fn get(&self, root: &str) -> Option<Arc<Revision>> {
        let inner = self.read();
        let entry = inner.entries.get(root)?;
        entry.used.store(self.tick(), Ordering::Relaxed);
        Some(entry.rev.clone())
    }

    /// Whether the revision `root` is cached.
    pub fn contains_key(&self, root: &str) -> bool {
        self.read().entries.contains_key(root)
    }

    /// Caches `rev` under `root`, then lets the least recently used revisions go until all
    /// fit. One that alone weighs more than the capacity is not kept: false then.
    pub fn insert(&self, root: String, rev: Arc<Revision>) -> bool {
        // Walk the tree before taking the lock: a large revision has many pages.
        let (bodies, records) = parts(&rev);
        if records + bodies.iter().map(|(_, len)| len).sum::<u64>() > self.capacity {
            // Weighed alone it can never fit: keeping it would only push the others out.
            return false;
        }
        let used = self.tick();
        let mut inner = self.write();
        if let Some(entry) = inner.entries.get(&root) {
            entry.used.store(used, Ordering::Relaxed);
            return true;
        }
        let mut added = records;
        for &(id, len) in &bodies {
            let slot = inner.bodies.entry(id).or_insert((0, len));
            if slot.0 == 0 {
                added += len;
            }
            slot.0 += 1;
        }
        inner.weight += added;
        let entry = Entry {
            rev,
            bodies: bodies.into_iter().map(|(id, _)| id).collect(),
            records,
            used: AtomicU64::new(used),
        };
        inner.entries.insert(root.clone(), entry);
        inner.queue.push_back((root.clone(), used));
        inner.make_room(self.capacity, &root);
        true
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Inner> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Inner> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl Inner {
    /// Lets the least recently used entries go, never `newest`, until the weight fits
    /// `capacity` (`newest` alone always fits: see `insert`). Holding the write lock, no
    /// entry is used meanwhile: each other entry gets at most one second chance.
    fn make_room(&mut self, capacity: u64, newest: &str) {
        while self.weight > capacity && self.queue.len() > 1 {
            let Some((root, queued)) = self.queue.pop_front() else {
                break;
            };
            let Some(entry) = self.entries.get(&root) else {
                continue;
            };
            let used = entry.used.load(Ordering::Relaxed);
            if root == newest || used > queued {
                self.queue.push_back((root, used));
            } else {
                self.remove(&root);
            }
        }
    }

    /// Removes the entry `root` and the weight of what only it held.
    fn remove(&mut self, root: &str) {
        let Some(entry) = self.entries.remove(root) else {
            return;
        };
        let mut freed = entry.records;
        for id in entry.bodies.iter() {
            if let Some(slot) = self.bodies.get_mut(id) {
                slot.0 -= 1;
                if slot.0 == 0 {
                    freed += slot.1;
                    // The body may be freed with the entry: its identity may be reused.
                    self.bodies.remove(id);
                }
            }
        }
        self.weight -= freed;
    }
}

#[cfg(test)]
mod tests {
    use super::Revisions;
    use quire_content::model::{Page, Revision};
    use std::sync::Arc;

    fn revision(pages: usize, text: usize) -> Revision {
        Revision {
            pages: (0..pages)
                .map(|i| Page::document(&format!("p{i}"), "T", &format!("p{i}"), &"x".repeat(text)))
                .collect(),
            ..Revision::default()
        }
    }

    /// `rev` with the body of its first page changed (the others still shared).
    fn edited(rev: &Revision) -> Revision {
        let mut next = rev.clone();
        if let quire_content::model::PageKind::Document(doc) = &mut next.pages[0].kind {
            doc.markdown.push_str("changed");
        }
        next
    }

    #[test]
    fn revisions_sharing_their_bodies_weigh_them_once() {
        let base = revision(10, 1000);
        let alone = Revisions::weight_alone(&base);
        assert_eq!(alone, 10 * 256 + 10 * 1000);
        // Room for one revision weighed whole and two edits of it: a cache weighing each
        // revision whole would hold only one of the three.
        let cache = Revisions::new(alone + 8000);
        let next = edited(&base);
        let third = edited(&next);
        cache.insert("base".into(), Arc::new(base));
        cache.insert("next".into(), Arc::new(next));
        cache.insert("third".into(), Arc::new(third));
        // Each later one adds its records and its one changed body.
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.weight(), alone + 2 * (10 * 256 + 1007) + 7);
        assert!(cache.get("base").is_some() && cache.get("third").is_some());
    }

    #[test]
    fn unrelated_revisions_are_weighed_whole_and_the_least_recently_used_leaves() {
        let one = revision(10, 1000);
        let alone = Revisions::weight_alone(&one);
        let cache = Revisions::new(2 * alone + 100);
        cache.insert("a".into(), Arc::new(revision(10, 1000)));
        cache.insert("b".into(), Arc::new(revision(10, 1000)));
        assert_eq!(cache.weight(), 2 * alone);
        // `a` is used, so `b` is the one to leave for `c`.
        assert!(cache.get("a").is_some());
        cache.insert("c".into(), Arc::new(revision(10, 1000)));
        assert!(cache.contains_key("a") && cache.contains_key("c"));
        assert!(!cache.contains_key("b"));
        assert_eq!(cache.weight(), 2 * alone);
    }

    #[test]
    fn a_body_leaves_the_weight_only_with_its_last_revision() {
        let base = revision(4, 1000);
        let alone = Revisions::weight_alone(&base);
        let next = edited(&base);
        let cache = Revisions::new(10 * alone);
        cache.insert("base".into(), Arc::new(base));
        cache.insert("next".into(), Arc::new(next));
        let shared = cache.weight();
        // Fill the cache with unrelated revisions until both shared ones have gone.
        for i in 0..20 {
            cache.insert(format!("other{i}"), Arc::new(revision(4, 1000)));
        }
        assert!(!cache.contains_key("base") && !cache.contains_key("next"));
        assert!(shared > alone);
        assert!(cache.weight() <= 10 * alone);
        assert_eq!(cache.weight(), cache.len() as u64 * alone);
    }

    #[test]
    fn a_revision_heavier_than_the_capacity_is_not_kept() {
        let cache = Revisions::new(1000);
        assert!(cache.insert("light".into(), Arc::new(revision(1, 100))));
        assert!(!cache.insert("heavy".into(), Arc::new(revision(10, 1000))));
        assert!(!cache.contains_key("heavy"));
        // Nor does it push out what fits.
        assert!(cache.contains_key("light"));
        assert_eq!(cache.weight(), 256 + 100);
    }

    #[test]
    fn inserting_a_cached_root_again_changes_nothing() {
        let cache = Revisions::new(1 << 20);
        let rev = Arc::new(revision(3, 10));
        cache.insert("r".into(), rev.clone());
        let weight = cache.weight();
        cache.insert("r".into(), rev);
        assert_eq!(cache.weight(), weight);
        assert_eq!(cache.len(), 1);
    }
}

//! The worker's queue: interactive requests before background ones, first
//! come first served within a priority.
//!
//! Requests arrive on a channel; the worker moves everything that has
//! arrived into this heap before choosing what to run next, so a chat
//! message that arrives while an LMS summary waits is served first.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use hearth_core::chat::Priority;

struct Entry<T> {
    priority: Priority,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.priority == other.priority && self.seq == other.seq
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    /// Higher priority first; within one, the lower sequence number first.
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority
            .cmp(&other.priority)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

pub struct PriorityQueue<T> {
    heap: BinaryHeap<Entry<T>>,
    next_seq: u64,
}

impl<T> Default for PriorityQueue<T> {
    fn default() -> Self {
        Self {
            heap: BinaryHeap::new(),
            next_seq: 0,
        }
    }
}

impl<T> PriorityQueue<T> {
    pub fn push(&mut self, priority: Priority, item: T) {
        self.heap.push(Entry {
            priority,
            seq: self.next_seq,
            item,
        });
        self.next_seq += 1;
    }

    #[cfg(test)]
    pub fn pop(&mut self) -> Option<T> {
        self.heap.pop().map(|e| e.item)
    }

    /// The first item in order that `ready` accepts; those before it keep
    /// their places.
    pub fn pop_first(&mut self, mut ready: impl FnMut(&T) -> bool) -> Option<T> {
        let mut skipped = Vec::new();
        let found = loop {
            match self.heap.pop() {
                Some(e) if ready(&e.item) => break Some(e.item),
                Some(e) => skipped.push(e),
                None => break None,
            }
        };
        self.heap.extend(skipped);
        found
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

/// How many requests of each priority wait for the worker: counted up
/// when submitted, down when the worker takes one up.
#[derive(Debug, Default)]
pub struct Waiting {
    interactive: AtomicUsize,
    background: AtomicUsize,
    /// Replies the worker is decoding now.
    running: AtomicUsize,
}

impl Waiting {
    /// Posted by the worker whenever the replies it decodes change.
    pub fn set_running(&self, n: usize) {
        self.running.store(n, AtomicOrdering::Relaxed);
    }

    /// Whether nothing waits and nothing decodes: background work (memory
    /// vectors) goes now without slowing anyone's reply.
    pub fn idle(&self) -> bool {
        self.running.load(AtomicOrdering::Relaxed) == 0
            && self.interactive.load(AtomicOrdering::Relaxed) == 0
            && self.background.load(AtomicOrdering::Relaxed) == 0
    }

    fn counter(&self, priority: Priority) -> &AtomicUsize {
        match priority {
            Priority::Interactive => &self.interactive,
            Priority::Background => &self.background,
        }
    }

    pub fn add(&self, priority: Priority) {
        self.counter(priority).fetch_add(1, AtomicOrdering::Relaxed);
    }

    pub fn remove(&self, priority: Priority) {
        let _ = self.counter(priority).fetch_update(
            AtomicOrdering::Relaxed,
            AtomicOrdering::Relaxed,
            |n| n.checked_sub(1),
        );
    }

    pub fn depth(&self) -> Vec<(Priority, usize)> {
        vec![
            (
                Priority::Interactive,
                self.interactive.load(AtomicOrdering::Relaxed),
            ),
            (
                Priority::Background,
                self.background.load(AtomicOrdering::Relaxed),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interactive_first_then_fifo() {
        let mut q = PriorityQueue::default();
        q.push(Priority::Background, "b1");
        q.push(Priority::Interactive, "i1");
        q.push(Priority::Background, "b2");
        q.push(Priority::Interactive, "i2");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, ["i1", "i2", "b1", "b2"]);
    }

    #[test]
    fn skipped_items_keep_their_places() {
        let mut q = PriorityQueue::default();
        q.push(Priority::Interactive, "a1");
        q.push(Priority::Interactive, "b1");
        q.push(Priority::Interactive, "a2");
        q.push(Priority::Background, "c1");
        assert_eq!(q.pop_first(|x| !x.starts_with('a')), Some("b1"));
        assert_eq!(q.pop_first(|x| x.starts_with('z')), None);
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, ["a1", "a2", "c1"]);
    }
}

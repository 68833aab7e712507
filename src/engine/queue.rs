//! The worker's queue: interactive requests before background ones, first
//! come first served within a priority.
//!
//! Requests arrive on a channel; the worker moves everything that has
//! arrived into this heap before choosing what to run next, so a chat
//! message that arrives while an LMS summary waits is served first.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::chat::Priority;

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

    pub fn pop(&mut self) -> Option<T> {
        self.heap.pop().map(|e| e.item)
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
}

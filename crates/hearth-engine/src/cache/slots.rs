//! Which conversation sits in which KV-cache sequence, least recently used
//! first out. Pure bookkeeping; the llama.cpp side is in `super`.

use llama_cpp_2::token::LlamaToken;

use super::checkpoint::Checkpoint;

#[derive(Debug, Default)]
pub struct Slot {
    /// The conversation whose tokens the sequence holds.
    pub conversation: Option<String>,
    /// The tokens in the sequence, position by position.
    pub tokens: Vec<LlamaToken>,
    /// A sliding-window sequence's earlier windows, oldest first.
    pub checkpoints: Vec<Checkpoint>,
    last_used: u64,
}

#[derive(Debug)]
pub struct Slots {
    slots: Vec<Slot>,
    clock: u64,
}

impl Slots {
    pub fn new(n: usize) -> Self {
        Self {
            slots: (0..n.max(1)).map(|_| Slot::default()).collect(),
            clock: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// The slot holding `conversation`, if any.
    pub fn find(&self, conversation: &str) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| s.conversation.as_deref() == Some(conversation))
    }

    /// A free slot, else the least recently used one; never one of
    /// `busy` (the sequences of replies in flight) while another exists.
    pub fn victim(&self, busy: &[usize]) -> usize {
        let idle = || (0..self.slots.len()).filter(|i| !busy.contains(i));
        idle()
            .find(|&i| self.slots[i].conversation.is_none())
            .or_else(|| idle().min_by_key(|&i| self.slots[i].last_used))
            .unwrap_or(0)
    }

    pub fn touch(&mut self, i: usize) {
        self.clock += 1;
        self.slots[i].last_used = self.clock;
    }

    pub fn get(&self, i: usize) -> &Slot {
        &self.slots[i]
    }

    pub fn get_mut(&mut self, i: usize) -> &mut Slot {
        &mut self.slots[i]
    }

    /// Every slot that holds a conversation.
    pub fn occupied(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.slots.len()).filter(|&i| self.slots[i].conversation.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_slots_first_then_least_recently_used() {
        let mut s = Slots::new(2);
        let a = s.victim(&[]);
        s.get_mut(a).conversation = Some("a".into());
        s.touch(a);
        let b = s.victim(&[]);
        assert_ne!(a, b);
        s.get_mut(b).conversation = Some("b".into());
        s.touch(b);
        assert_eq!(s.victim(&[]), a, "a is older");
        s.touch(a);
        assert_eq!(s.victim(&[]), b);
        assert_eq!(s.find("b"), Some(b));
        assert_eq!(s.occupied().count(), 2);
    }

    #[test]
    fn a_sequence_in_flight_is_never_taken() {
        let mut s = Slots::new(3);
        for (i, c) in ["a", "b", "c"].into_iter().enumerate() {
            s.get_mut(i).conversation = Some(c.into());
            s.touch(i);
        }
        assert_eq!(s.victim(&[]), 0, "a is the oldest");
        assert_eq!(s.victim(&[0]), 1, "a is busy: the next oldest");
        assert_eq!(s.victim(&[0, 1]), 2);
        s.get_mut(2).conversation = None;
        assert_eq!(s.victim(&[]), 2, "a free slot before any eviction");
        assert_eq!(s.victim(&[2]), 0, "a busy free slot is not free");
    }
}

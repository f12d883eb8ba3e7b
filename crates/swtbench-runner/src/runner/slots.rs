//! The container slots: at most N test containers at once, given to the waiting run with the
//! longest expected duration first (then first come, first served).
//!
//! A slot is held while its container lives and given back when the [`Slot`] is dropped,
//! however its holder ends (a result, an error, a cancelled task). A waiter that is cancelled
//! before it was served takes nothing; one cancelled after it was served gives its slot back.
//!
//! At the start the slots are closed ([`Slots::close`]) until the first instances have put
//! their runs in the queue ([`Opener`]): otherwise free slots go to whichever runs happen to ask
//! first, not to the longest.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::lock::Locked;

pub(super) struct Slots {
    capacity: usize,
    state: Mutex<State>,
}

struct State {
    free: usize,
    /// Closed: free slots are not given out yet.
    closed: bool,
    waiting: BinaryHeap<Waiter>,
    next_seq: u64,
}

struct Waiter {
    priority: u64,
    /// Among equal priorities, the smaller first (the plan's order), so that the order the
    /// waiters happened to arrive in does not decide.
    tiebreak: u64,
    seq: u64,
    serve: oneshot::Sender<Slot>,
}

impl PartialEq for Waiter {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Waiter {}

impl PartialOrd for Waiter {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Waiter {
    /// The greatest is served first: the highest priority, then the smallest tiebreak, then the
    /// earliest.
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority
            .cmp(&other.priority)
            .then_with(|| other.tiebreak.cmp(&self.tiebreak))
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// One container's place; given back on drop.
pub(super) struct Slot {
    slots: Option<Arc<Slots>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.take() {
            slots.give_back();
        }
    }
}

/// Opens the slots when the last clone of it is dropped: each of the first instances holds one
/// until its runs are queued.
pub(super) struct Opener(pub Arc<Slots>);

impl Drop for Opener {
    fn drop(&mut self) {
        self.0.open();
    }
}

impl Slots {
    pub fn new(capacity: usize) -> Arc<Slots> {
        let capacity = capacity.max(1);
        Arc::new(Slots {
            capacity,
            state: Mutex::new(State {
                free: capacity,
                closed: false,
                waiting: BinaryHeap::new(),
                next_seq: 0,
            }),
        })
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// A slot, once every waiter with a higher `priority` (an expected duration in ms), and every
    /// one with the same and a smaller `tiebreak` (then: earlier), was served.
    pub async fn acquire(self: &Arc<Self>, priority: u64, tiebreak: u64) -> Slot {
        let served = {
            let mut st = self.state.locked();
            if st.free > 0 && st.waiting.is_empty() && !st.closed {
                st.free -= 1;
                return Slot {
                    slots: Some(self.clone()),
                };
            }
            let (serve, served) = oneshot::channel();
            let seq = st.next_seq;
            st.next_seq += 1;
            st.waiting.push(Waiter {
                priority,
                tiebreak,
                seq,
                serve,
            });
            served
        };
        match served.await {
            Ok(slot) => slot,
            // Waiters leave the queue only by being served, and the queue lives as long as
            // `self`: unreachable, but a slot of its own is the safe answer.
            Err(_) => Slot {
                slots: Some(self.clone()),
            },
        }
    }

    /// Gives out no free slot until [`Slots::open`]; waiters queue meanwhile.
    pub fn close(&self) {
        self.state.locked().closed = true;
    }

    /// Gives the free slots to the waiters, the longest first (again when open already).
    pub fn open(self: &Arc<Self>) {
        let free = {
            let mut st = self.state.locked();
            st.closed = false;
            std::mem::take(&mut st.free)
        };
        for _ in 0..free {
            self.clone().give_back();
        }
    }

    /// Slots held right now.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.capacity - self.state.locked().free
    }

    fn give_back(self: Arc<Self>) {
        loop {
            let next = {
                let mut st = self.state.locked();
                match st.waiting.pop() {
                    Some(w) => w,
                    None => {
                        st.free += 1;
                        return;
                    }
                }
            };
            let slot = Slot {
                slots: Some(self.clone()),
            };
            match next.serve.send(slot) {
                Ok(()) => return,
                // The waiter was cancelled: the slot goes to the next one, without the drop
                // handing it back a second time.
                Err(mut unsent) => {
                    unsent.slots = None;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    async fn settle() {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn the_longest_waiting_work_is_served_first_then_the_earliest() {
        let slots = Slots::new(1);
        let first = slots.acquire(5, 0).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = tokio::task::JoinSet::new();
        for (name, priority) in [
            ("short", 10),
            ("long", 500),
            ("medium", 100),
            ("long2", 500),
        ] {
            let (slots, order) = (slots.clone(), order.clone());
            tasks.spawn(async move {
                let _slot = slots.acquire(priority, 0).await;
                order.locked().push(name);
                settle().await;
            });
            settle().await;
        }
        assert_eq!(slots.held(), 1);
        drop(first);
        while tasks.join_next().await.is_some() {}
        assert_eq!(*order.locked(), ["long", "long2", "medium", "short"]);
        assert_eq!(slots.held(), 0);
    }

    #[tokio::test]
    async fn no_more_than_the_capacity_are_held_and_a_newcomer_does_not_jump_the_queue() {
        let slots = Slots::new(2);
        let a = slots.acquire(1, 0).await;
        let _b = slots.acquire(1, 0).await;
        let waiting = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire(1, 0).await })
        };
        settle().await;
        assert_eq!(slots.held(), 2);
        assert!(!waiting.is_finished());
        drop(a);
        let c = waiting.await.expect("served");
        assert_eq!(slots.held(), 2, "the freed slot went to the waiter");
        drop(c);
        assert_eq!(slots.held(), 1);
    }

    #[tokio::test]
    async fn closed_slots_wait_for_every_opener_then_go_longest_first() {
        let slots = Slots::new(2);
        slots.close();
        let opener = Arc::new(Opener(slots.clone()));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = tokio::task::JoinSet::new();
        for (name, priority) in [("short", 1), ("medium", 50), ("long", 90)] {
            let (slots, order, token) = (slots.clone(), order.clone(), opener.clone());
            tasks.spawn(async move {
                let acquiring = slots.acquire(priority, 0);
                drop(token);
                let _slot = acquiring.await;
                order.locked().push(name);
                settle().await;
            });
        }
        settle().await;
        assert!(order.locked().is_empty(), "closed while one opener is left");
        drop(opener);
        while tasks.join_next().await.is_some() {}
        let order = order.locked().clone();
        assert_eq!(order[..2], ["long", "medium"], "{order:?}");
        assert_eq!(slots.held(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn cancelled_waiters_take_nothing() {
        let slots = Slots::new(1);
        let held = slots.acquire(1, 0).await;
        // Cancelled while waiting.
        let gave_up = tokio::time::timeout(Duration::from_millis(10), slots.acquire(9, 0)).await;
        assert!(gave_up.is_err());
        // Cancelled while waiting as a task that was aborted.
        let late = {
            let slots = slots.clone();
            tokio::spawn(async move { slots.acquire(3, 0).await })
        };
        settle().await;
        late.abort();
        let _ = late.await;
        drop(held);
        assert_eq!(slots.held(), 0, "every slot came back");
        let again = tokio::time::timeout(Duration::from_millis(10), slots.acquire(1, 0)).await;
        assert!(again.is_ok(), "and can be taken");
    }

    #[tokio::test]
    async fn among_equal_priorities_the_smaller_tiebreak_goes_first_whatever_the_arrival() {
        let slots = Slots::new(1);
        let first = slots.acquire(5, 0).await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = tokio::task::JoinSet::new();
        // Arrive in the order 30, 10, 20 (all expected to take as long).
        for tiebreak in [30u64, 10, 20] {
            let (slots, order) = (slots.clone(), order.clone());
            tasks.spawn(async move {
                let _slot = slots.acquire(7, tiebreak).await;
                order.locked().push(tiebreak);
            });
            settle().await;
        }
        drop(first);
        while tasks.join_next().await.is_some() {}
        assert_eq!(*order.locked(), vec![10, 20, 30]);
    }
}

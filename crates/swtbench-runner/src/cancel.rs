//! Cancellation that escalates: the first request ([`CancelReason::Interrupt`]) stops scheduling,
//! stops running containers and lets the runner write partial reports; the second
//! ([`CancelReason::Kill`]) also skips the reports. The binary maps Ctrl-C presses to requests;
//! the runner awaits them. No signals are handled here.

use std::sync::Arc;

use tokio::sync::watch;

use crate::events::CancelReason;

/// A cloneable cancellation handle.
#[derive(Debug, Clone)]
pub struct Cancel {
    tx: Arc<watch::Sender<Option<CancelReason>>>,
}

impl Default for Cancel {
    fn default() -> Self {
        Cancel::new()
    }
}

impl Cancel {
    pub fn new() -> Cancel {
        let (tx, _rx) = watch::channel(None);
        Cancel { tx: Arc::new(tx) }
    }

    /// Requests cancellation; a request never lowers the current level. Returns the level now in
    /// force.
    pub fn request(&self, reason: CancelReason) -> CancelReason {
        let mut now = reason;
        self.tx.send_modify(|cur| {
            let next = match *cur {
                Some(c) if c >= reason => c,
                _ => reason,
            };
            now = next;
            *cur = Some(next);
        });
        now
    }

    /// The next level up from the current one (what a further Ctrl-C asks for).
    pub fn escalate(&self) -> CancelReason {
        let next = match self.level() {
            None => CancelReason::Interrupt,
            Some(_) => CancelReason::Kill,
        };
        self.request(next)
    }

    pub fn level(&self) -> Option<CancelReason> {
        *self.tx.borrow()
    }

    pub fn is_cancelled(&self) -> bool {
        self.level().is_some()
    }

    /// Resolves once cancellation is requested at `at_least` or above.
    pub async fn reached(&self, at_least: CancelReason) {
        let mut rx = self.tx.subscribe();
        // The sender lives as long as `self`, so `wait_for` only ends when the level is reached.
        let _ = rx.wait_for(|l| l.is_some_and(|l| l >= at_least)).await;
    }

    /// Resolves once any cancellation is requested.
    pub async fn cancelled(&self) {
        self.reached(CancelReason::Interrupt).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_escalate_and_never_lower() {
        let c = Cancel::new();
        assert!(!c.is_cancelled());
        assert_eq!(c.escalate(), CancelReason::Interrupt);
        c.cancelled().await;
        assert_eq!(c.request(CancelReason::Kill), CancelReason::Kill);
        assert_eq!(c.request(CancelReason::Interrupt), CancelReason::Kill);
        c.reached(CancelReason::Kill).await;
        assert_eq!(c.escalate(), CancelReason::Kill);
    }

    #[tokio::test]
    async fn waiters_wake_up_when_requested_from_another_task() {
        let c = Cancel::new();
        let waiter = {
            let c = c.clone();
            tokio::spawn(async move { c.reached(CancelReason::Kill).await })
        };
        c.request(CancelReason::Interrupt);
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        c.request(CancelReason::Kill);
        waiter.await.expect("waiter");
    }
}

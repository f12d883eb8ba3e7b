//! The one way the runner takes a lock: [`Locked::locked`].
//!
//! A mutex is poisoned when a thread panicked while holding it. Everything the runner guards is
//! bookkeeping that stays consistent between statements (sets, counters, a file handle), and a
//! panicking instance is reported as that instance's error while the others go on; so a poisoned
//! lock is taken over as it is instead of spreading the panic to every other task.

use std::sync::{Mutex, MutexGuard};

/// Locking that recovers from poisoning.
pub trait Locked<T> {
    /// The guard, whether or not an earlier holder panicked.
    fn locked(&self) -> MutexGuard<'_, T>;
}

impl<T> Locked<T> for Mutex<T> {
    fn locked(&self) -> MutexGuard<'_, T> {
        self.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_is_taken_over_with_its_value() {
        let m = std::sync::Arc::new(Mutex::new(vec![1]));
        let m2 = m.clone();
        let panicked = std::thread::spawn(move || {
            let mut g = m2.locked();
            g.push(2);
            panic!("while holding the lock");
        })
        .join();
        assert!(panicked.is_err());
        assert!(m.is_poisoned());
        m.locked().push(3);
        assert_eq!(*m.locked(), vec![1, 2, 3]);
    }
}

//! Engine calls of the clean-up that an engine which stopped answering cannot hold up.
//!
//! The clean-up (removing this process's containers and images at the end of an evaluation or
//! after a Ctrl-C) must end within seconds on a hung engine, and must not give up on a healthy
//! but slow one (a container that is not removed is left behind). So a call is not cut off at a
//! fixed time: once it has taken [`SLOW_CALL`], the engine is probed ([`PROBE_LIMIT`]) while the
//! call goes on; an engine that answers the probe is waited for, one that does not ends the wait,
//! and every later call of the clean-up is skipped at once. After a cancel, the clean-up as a
//! whole also has [`CANCELLED_CLEANUP_LIMIT`].
//!
//! It holds no clean-up logic (that is the dispatcher's); it only bounds waits.

use std::future::Future;
use std::time::Duration;

use swtbench_backend::{BackendError, ContainerBackend};
use tokio::time::Instant;

/// How long a clean-up call may take before the engine is probed.
pub(crate) const SLOW_CALL: Duration = Duration::from_secs(3);
/// How long the probe may take before the engine counts as not answering.
pub(crate) const PROBE_LIMIT: Duration = Duration::from_secs(3);
/// How long the clean-up after a cancel (Ctrl-C, or a run stopped for a failure of the machine)
/// may take as a whole, however the engine behaves.
pub(crate) const CANCELLED_CLEANUP_LIMIT: Duration = Duration::from_secs(20);

/// Why the clean-up stopped waiting for the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// The engine did not answer a probe.
    Silent,
    /// The clean-up's time limit ran out.
    OutOfTime,
}

impl Stopped {
    /// The reason as the clause of a sentence ("… could not be removed: {}").
    pub fn describe(self) -> String {
        match self {
            Stopped::Silent => format!(
                "the container engine does not answer (no answer to a ping within {} s)",
                PROBE_LIMIT.as_secs()
            ),
            Stopped::OutOfTime => format!(
                "the clean-up's time limit ({} s) ran out",
                CANCELLED_CLEANUP_LIMIT.as_secs()
            ),
        }
    }
}

/// Bounds the waits of one clean-up.
pub(crate) struct Watch<'a, B: ContainerBackend> {
    backend: &'a B,
    deadline: Option<Instant>,
    stopped: Option<Stopped>,
}

impl<'a, B: ContainerBackend> Watch<'a, B> {
    /// A watch over `backend`; with `limit`, the whole clean-up ends after it.
    pub fn new(backend: &'a B, limit: Option<Duration>) -> Self {
        Watch {
            backend,
            deadline: limit.map(|l| Instant::now() + l),
            stopped: None,
        }
    }

    /// Why the clean-up stopped waiting, if it did.
    pub fn stopped(&self) -> Option<Stopped> {
        self.stopped
    }

    /// Whether the engine answers a ping within [`PROBE_LIMIT`]; remembers a silence.
    pub async fn probe(&mut self) -> bool {
        if self.stopped.is_some() {
            return false;
        }
        let alive = alive(self.backend).await;
        if !alive {
            self.stopped = Some(Stopped::Silent);
        }
        alive
    }

    /// Runs `call` to its end while the engine answers; `None` when the engine is silent or the
    /// time is up (then, and ever after, without waiting).
    pub async fn call<T>(&mut self, call: impl Future<Output = T>) -> Option<T> {
        if self.stopped.is_some() {
            return None;
        }
        let past_deadline = async {
            match self.deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::pin!(call, past_deadline);
        loop {
            tokio::select! {
                biased;
                r = &mut call => return Some(r),
                _ = &mut past_deadline => {
                    self.stopped = Some(Stopped::OutOfTime);
                    return None;
                }
                _ = tokio::time::sleep(SLOW_CALL) => {}
            }
            // Slow: is the engine there at all? (The call goes on meanwhile.)
            tokio::select! {
                biased;
                r = &mut call => return Some(r),
                _ = &mut past_deadline => {
                    self.stopped = Some(Stopped::OutOfTime);
                    return None;
                }
                alive = alive(self.backend) => if !alive {
                    self.stopped = Some(Stopped::Silent);
                    return None;
                },
            }
        }
    }
}

/// Whether the engine answers a ping within [`PROBE_LIMIT`].
pub(crate) async fn alive<B: ContainerBackend>(backend: &B) -> bool {
    matches!(
        tokio::time::timeout(PROBE_LIMIT, backend.engine_info()).await,
        Ok(Ok(_))
    )
}

/// The engine's answer to a ping within `limit`: a ping without an answer is
/// [`BackendError::EngineHung`], whatever the backend does about deadlines.
pub(crate) async fn ping<B: ContainerBackend>(
    backend: &B,
    limit: Duration,
) -> Result<(), BackendError> {
    match tokio::time::timeout(limit, backend.engine_info()).await {
        Ok(r) => r.map(|_| ()),
        Err(_) => Err(BackendError::EngineHung {
            operation: "pinging the container engine".into(),
            after: limit,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use swtbench_backend::FakeBackend;

    #[tokio::test(start_paused = true)]
    async fn a_slow_call_of_a_live_engine_is_waited_for() {
        let fake = FakeBackend::new();
        let mut watch = Watch::new(&fake, None);
        let slow = tokio::time::sleep(Duration::from_secs(40));
        assert_eq!(watch.call(slow).await, Some(()));
        assert_eq!(watch.stopped(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_engine_ends_the_wait_and_later_calls_are_skipped() {
        let fake = FakeBackend::new();
        fake.set_unreachable(true);
        let start = Instant::now();
        let mut watch = Watch::new(&fake, None);
        assert_eq!(watch.call(std::future::pending::<()>()).await, None);
        assert_eq!(watch.stopped(), Some(Stopped::Silent));
        assert_eq!(
            start.elapsed(),
            SLOW_CALL,
            "the fake refuses the ping at once"
        );
        assert_eq!(watch.call(async { 1 }).await, None, "skipped");
        assert_eq!(start.elapsed(), SLOW_CALL);
    }

    #[tokio::test(start_paused = true)]
    async fn the_whole_clean_up_has_a_limit() {
        let fake = FakeBackend::new();
        let start = Instant::now();
        let mut watch = Watch::new(&fake, Some(CANCELLED_CLEANUP_LIMIT));
        assert_eq!(watch.call(std::future::pending::<()>()).await, None);
        assert_eq!(watch.stopped(), Some(Stopped::OutOfTime));
        assert_eq!(start.elapsed(), CANCELLED_CLEANUP_LIMIT);
    }

    #[tokio::test(start_paused = true)]
    async fn a_ping_is_answered_or_refused() {
        let fake = FakeBackend::new();
        assert_eq!(ping(&fake, PROBE_LIMIT).await, Ok(()));
        fake.set_unreachable(true);
        assert!(matches!(
            ping(&fake, PROBE_LIMIT).await,
            Err(BackendError::Unreachable { .. })
        ));
    }
}

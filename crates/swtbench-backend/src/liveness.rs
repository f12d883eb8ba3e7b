//! Telling a hung engine from a quiet command.
//!
//! Every short engine call has a deadline ([`DEFAULT_CALL_DEADLINE`]). Output streams (a command's
//! output, a build log, an import) have none of their own, because a test may print nothing for
//! minutes; their length is bounded by the run or build timeout. Silence alone is therefore no
//! proof of a hang: a stream quiet for [`DEFAULT_QUIET_PROBE`] makes the backend ping the engine
//! with a short deadline ([`PROBE_DEADLINE`]). An engine that answers is alive and the wait goes
//! on; one that does not is lost.
//!
//! This module holds the waiting logic over any stream and any probe, so that it can be tested on
//! the tokio clock without an engine; the Docker backend supplies the stream and the ping.

use std::future::Future;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use tokio::time::Instant;

/// How long a liveness probe (a ping) may take before the engine counts as lost.
pub const PROBE_DEADLINE: Duration = Duration::from_secs(5);
/// The deadline of every short call (create, start, copy, inspect, kill, remove, list).
pub const DEFAULT_CALL_DEADLINE: Duration = Duration::from_secs(60);
/// How long an output stream may stay silent before the engine is probed.
pub const DEFAULT_QUIET_PROBE: Duration = Duration::from_secs(30);

/// How waiting for the next item of a stream ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Wait<T> {
    /// The stream produced an item, or ended (`None`).
    Item(Option<T>),
    /// The caller's deadline came first.
    Deadline,
    /// The stream was silent and the engine did not answer a probe; how long the wait lasted.
    Lost(Duration),
}

/// The next item of `stream`. Every `quiet` of silence, `probe` asks whether the engine is alive
/// (the stream is still read meanwhile): alive, the wait goes on; not, [`Wait::Lost`]. With a
/// `deadline`, the wait ends there at the latest ([`Wait::Deadline`]). `probe` must bound itself.
pub async fn next_or_probe<S, P, F>(
    stream: &mut S,
    deadline: Option<Instant>,
    quiet: Duration,
    mut probe: P,
) -> Wait<S::Item>
where
    S: Stream + Unpin,
    P: FnMut() -> F,
    F: Future<Output = bool>,
{
    let began = Instant::now();
    let past_deadline = async move {
        match deadline {
            Some(d) => tokio::time::sleep_until(d).await,
            None => std::future::pending::<()>().await,
        }
    };
    tokio::pin!(past_deadline);
    loop {
        tokio::select! {
            biased;
            item = stream.next() => return Wait::Item(item),
            _ = &mut past_deadline => return Wait::Deadline,
            _ = tokio::time::sleep(quiet) => {}
        }
        let alive = probe();
        tokio::pin!(alive);
        tokio::select! {
            biased;
            item = stream.next() => return Wait::Item(item),
            _ = &mut past_deadline => return Wait::Deadline,
            alive = &mut alive => if !alive {
                return Wait::Lost(began.elapsed());
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn silent() -> impl Stream<Item = u8> + Unpin {
        futures_util::stream::pending()
    }

    /// A stream that yields `item` after `after`, then ends.
    fn late(after: Duration, item: u8) -> impl Stream<Item = u8> + Unpin {
        Box::pin(futures_util::stream::once(async move {
            tokio::time::sleep(after).await;
            item
        }))
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_stream_of_a_live_engine_is_waited_for() {
        let probes = AtomicUsize::new(0);
        let mut s = late(Duration::from_secs(95), 7);
        let got = next_or_probe(&mut s, None, Duration::from_secs(30), || {
            probes.fetch_add(1, Ordering::SeqCst);
            async { true }
        })
        .await;
        assert_eq!(got, Wait::Item(Some(7)));
        assert_eq!(probes.load(Ordering::SeqCst), 3, "at 30, 60 and 90 s");
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_stream_of_a_silent_engine_is_lost_after_one_quiet_period_and_the_probe() {
        let start = Instant::now();
        let mut s = silent();
        let got = next_or_probe(&mut s, None, Duration::from_secs(30), || async {
            tokio::time::sleep(PROBE_DEADLINE).await;
            false
        })
        .await;
        assert_eq!(got, Wait::Lost(Duration::from_secs(35)));
        assert_eq!(start.elapsed(), Duration::from_secs(35));
    }

    #[tokio::test(start_paused = true)]
    async fn the_deadline_ends_the_wait_even_during_a_probe() {
        let start = Instant::now();
        let mut s = silent();
        let deadline = Some(start + Duration::from_secs(32));
        let got = next_or_probe(&mut s, deadline, Duration::from_secs(30), || async {
            tokio::time::sleep(PROBE_DEADLINE).await;
            false
        })
        .await;
        assert_eq!(got, Wait::Deadline);
        assert_eq!(start.elapsed(), Duration::from_secs(32));
    }

    #[tokio::test(start_paused = true)]
    async fn output_arriving_during_a_probe_is_taken() {
        let mut s = late(Duration::from_secs(31), 1);
        let got = next_or_probe(&mut s, None, Duration::from_secs(30), || async {
            tokio::time::sleep(PROBE_DEADLINE).await;
            false
        })
        .await;
        assert_eq!(got, Wait::Item(Some(1)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_ends_is_an_end_not_a_hang() {
        let mut s = futures_util::stream::empty::<u8>();
        let got = next_or_probe(&mut s, None, Duration::from_secs(1), || async { false }).await;
        assert_eq!(got, Wait::Item(None));
    }
}

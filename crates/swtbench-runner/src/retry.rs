//! Transient infrastructure failures are tried again a bounded number of times with a growing
//! pause before they become an instance's error: an engine answering 5xx or dropping the
//! connection ([`BackendError::is_transient`]), and an image build that could not reach the
//! network. Refusals (4xx), hangs and a lost engine are not retried.

use std::future::Future;
use std::time::Duration;

use swtbench_backend::BackendError;

/// Pauses before the second, third and fourth attempt of an engine request.
pub const ENGINE_BACKOFF: [Duration; 3] = [
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];

/// Pause before an image build that failed for the network is tried once more.
pub const BUILD_NETWORK_BACKOFF: Duration = Duration::from_secs(10);

/// Runs `attempt` until it succeeds, fails for good, or [`ENGINE_BACKOFF`] is used up; `note`
/// hears of every retry (the failure and the pause).
pub async fn engine_request<T, F, Fut>(
    mut attempt: F,
    mut note: impl FnMut(&BackendError, Duration),
) -> Result<T, BackendError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, BackendError>>,
{
    let mut pauses = ENGINE_BACKOFF.iter();
    loop {
        match attempt().await {
            Err(e) if e.is_transient() => match pauses.next() {
                Some(pause) => {
                    note(&e, *pause);
                    tokio::time::sleep(*pause).await;
                }
                None => return Err(e),
            },
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn server_error() -> BackendError {
        BackendError::Engine {
            operation: "creating a container".into(),
            message: "boom (HTTP 500)".into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn transient_failures_are_retried_with_backoff_then_given_up() {
        let calls = AtomicUsize::new(0);
        let mut pauses = Vec::new();
        let r: Result<(), _> = engine_request(
            || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(server_error())
            },
            |_, p| pauses.push(p),
        )
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 4);
        assert_eq!(pauses, ENGINE_BACKOFF.to_vec());

        let calls = AtomicUsize::new(0);
        let r = engine_request(
            || async {
                if calls.fetch_add(1, Ordering::SeqCst) < 2 {
                    Err(server_error())
                } else {
                    Ok(7)
                }
            },
            |_, _| {},
        )
        .await;
        assert_eq!(r.ok(), Some(7));

        let calls = AtomicUsize::new(0);
        let r: Result<(), _> = engine_request(
            || async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(BackendError::ImageNotFound("x".into()))
            },
            |_, _| {},
        )
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1, "a refusal is not retried");
    }
}

//! One flight per content key: runs with the same key, in one instance or across instances,
//! execute once. The first to get there runs it; the others wait for it and copy its output.
//!
//! A success is kept for the whole evaluation (outputs already on disk are entered at the start);
//! a failure is not shared: the run that failed forgets its flight, so the next instance that
//! needs the run tries again instead of inheriting the failure.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use crate::lock::Locked;
use crate::outcome::ExecError;
use swtbench_plan::keys::RunResult;
use swtbench_plan::plan::{Plan, RunAction};

/// A run whose output is complete somewhere: its directory and result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Done {
    pub dir: PathBuf,
    pub result: RunResult,
}

/// Why a flight has no output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum NoOutput {
    /// The execution failed.
    Failed(ExecError),
    /// The run that took the flight did not start: another run of its instance failed while it
    /// waited for a container slot. A waiter takes the next flight.
    NotStarted,
}

/// The one execution of a key.
pub(super) type Flight = Arc<OnceCell<Result<Done, NoOutput>>>;

#[derive(Debug, Default)]
pub(super) struct Flights {
    by_key: Mutex<HashMap<String, Flight>>,
}

impl Flights {
    /// Enters the outputs the plan reuses, so that later runs with the same key copy them.
    pub fn seed(&self, plan: &Plan) {
        for ip in &plan.instances {
            for r in ip.runs.iter().filter(|r| r.action == RunAction::Reuse) {
                if let Some(record) = crate::keys::read_key_file(&r.dir) {
                    let _ = self.get(&r.key).set(Ok(Done {
                        dir: r.dir.clone(),
                        result: record.result,
                    }));
                }
            }
        }
    }

    /// The flight of `key` (a new one when there is none, or the last one failed).
    pub fn get(&self, key: &str) -> Flight {
        self.by_key
            .locked()
            .entry(key.to_string())
            .or_default()
            .clone()
    }

    /// Forgets `flight` after it failed, unless it was replaced meanwhile.
    pub fn forget(&self, key: &str, flight: &Flight) {
        let mut by_key = self.by_key.locked();
        if by_key.get(key).is_some_and(|c| Arc::ptr_eq(c, flight)) {
            by_key.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(dir: &str) -> Result<Done, NoOutput> {
        Ok(Done {
            dir: PathBuf::from(dir),
            result: RunResult {
                exit_code: Some(0),
                test_exit_code: Some(0),
                timed_out: false,
                omitted_bytes: 0,
                duration_ms: 1,
                limit: None,
            },
        })
    }

    #[test]
    fn a_success_is_shared_and_a_failure_is_forgotten() {
        let flights = Flights::default();
        let first = flights.get("k");
        assert!(first.set(done("a")).is_ok());
        assert_eq!(flights.get("k").get(), Some(&done("a")));

        let failing = flights.get("f");
        let _ = failing.set(Err(NoOutput::Failed(ExecError::Output(
            crate::outcome::OutputError::Inconsistent { dir: "d".into() },
        ))));
        flights.forget("f", &failing);
        assert!(flights.get("f").get().is_none(), "the next one tries again");

        // A stale handle does not forget the flight that replaced it.
        let newer = flights.get("f");
        flights.forget("f", &failing);
        assert!(Arc::ptr_eq(&newer, &flights.get("f")));
    }
}

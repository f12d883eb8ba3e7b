//! When the step images of a failed build may be removed.
//!
//! The classic builder leaves the images of a failed build's finished steps behind, untagged. They
//! are also the build cache: another build running at the same time on the same engine can have
//! found one of them as the cached result of a step it shares (the same base and the same first
//! instructions) and be about to commit its next step on top of it. Removing the image in that
//! moment makes the other build fail with `failed to set parent sha256:…: unknown parent image ID`:
//! one bad environment takes a good one down with it. So the step images of failed builds are only
//! collected while other builds run, and handed out for removal when the last running build of the
//! connection has ended.

use std::sync::{Arc, Mutex, PoisonError};

/// The builds running on one engine connection and the step images waiting for all of them to end.
#[derive(Debug, Default)]
pub struct StepReaper {
    running: usize,
    pending: Vec<String>,
}

impl StepReaper {
    /// Step images waiting for removal.
    pub fn pending(&self) -> &[String] {
        &self.pending
    }

    /// Builds running now.
    pub fn running(&self) -> usize {
        self.running
    }
}

/// A shared [`StepReaper`]; cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct SharedReaper(Arc<Mutex<StepReaper>>);

impl SharedReaper {
    /// A build starts; the ticket must be [finished](BuildTicket::finish) (dropping it counts as
    /// an end with no step images to remove).
    pub fn start(&self) -> BuildTicket {
        self.with(|r| r.running += 1);
        BuildTicket {
            reaper: self.clone(),
            done: false,
        }
    }

    /// A copy of the state, for tests and diagnostics.
    pub fn snapshot(&self) -> (usize, Vec<String>) {
        self.with(|r| (r.running, r.pending.clone()))
    }

    fn with<T>(&self, f: impl FnOnce(&mut StepReaper) -> T) -> T {
        let mut guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut guard)
    }

    /// One build ended, leaving `failed_steps`: the images to remove now, in the order to remove
    /// them (newest first), which is every pending one once no build runs and none before.
    fn end(&self, failed_steps: Vec<String>) -> Vec<String> {
        self.with(|r| {
            r.running = r.running.saturating_sub(1);
            for id in failed_steps {
                if !r.pending.contains(&id) {
                    r.pending.push(id);
                }
            }
            if r.running == 0 {
                let mut out = std::mem::take(&mut r.pending);
                out.reverse();
                out
            } else {
                Vec::new()
            }
        })
    }
}

/// One running build, counted until it ends.
#[derive(Debug)]
pub struct BuildTicket {
    reaper: SharedReaper,
    done: bool,
}

impl BuildTicket {
    /// The build ended; `failed_steps` are the step images it leaves (empty after a success). Returns
    /// the step images that may be removed now (this build's and earlier failed builds').
    pub fn finish(mut self, failed_steps: Vec<String>) -> Vec<String> {
        self.done = true;
        self.reaper.end(failed_steps)
    }
}

impl Drop for BuildTicket {
    fn drop(&mut self) {
        if !self.done {
            // A build whose future was dropped: it no longer runs. What is pending is handed out
            // when the next build ends.
            self.reaper
                .with(|r| r.running = r.running.saturating_sub(1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_failed_build_alone_removes_its_steps_at_once_newest_first() {
        let reaper = SharedReaper::default();
        let t = reaper.start();
        assert_eq!(t.finish(ids(&["a", "b", "c"])), ids(&["c", "b", "a"]));
        assert_eq!(reaper.snapshot(), (0, vec![]));
    }

    #[test]
    fn step_images_of_a_failed_build_wait_while_another_build_runs() {
        // The fault: the failing build's first step is the cached parent of the build still
        // running. Nothing may be removed before that build has ended.
        let reaper = SharedReaper::default();
        let good = reaper.start();
        let bad = reaper.start();
        assert_eq!(
            bad.finish(ids(&["shared", "bad-only"])),
            Vec::<String>::new()
        );
        assert_eq!(reaper.snapshot(), (1, ids(&["shared", "bad-only"])));
        assert_eq!(good.finish(vec![]), ids(&["bad-only", "shared"]));
        assert_eq!(reaper.snapshot(), (0, vec![]));
    }

    #[test]
    fn the_last_build_to_end_hands_out_everything_pending_once() {
        let reaper = SharedReaper::default();
        let a = reaper.start();
        let b = reaper.start();
        let c = reaper.start();
        assert!(a.finish(ids(&["a1", "s"])).is_empty());
        assert!(b.finish(ids(&["s", "b1"])).is_empty());
        assert_eq!(c.finish(ids(&["c1"])), ids(&["c1", "b1", "s", "a1"]));
        let d = reaper.start();
        assert!(d.finish(vec![]).is_empty());
    }

    #[test]
    fn a_dropped_build_stops_counting_and_its_pending_go_with_the_next_end() {
        let reaper = SharedReaper::default();
        let a = reaper.start();
        let b = reaper.start();
        assert!(b.finish(ids(&["x"])).is_empty());
        drop(a);
        assert_eq!(reaper.snapshot(), (0, ids(&["x"])));
        let c = reaper.start();
        assert_eq!(c.finish(vec![]), ids(&["x"]));
    }
}

//! The instance images this process's evaluations use (`--image-cache-size`): which are in use
//! now, and when each was last used. The times are kept in `<service dir>/image-use.json`, so a
//! restarted service or worker still evicts the least recently used first. After each job the
//! worker keeps the images within the budget (`swtbench_app::image_budget`).
//!
//! An evaluation's plan decides whether its instance image is built or reused; until the plan
//! has named its images (and they are marked in use) no eviction runs, and while one runs no
//! evaluation plans: [`ImageUse::planning`], [`ImageUse::planned`], [`ImageUse::evicting`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

/// The file of last-use times in the service's directory.
pub const USE_FILE: &str = "image-use.json";

/// Which instance images are in use, and when each was last used.
#[derive(Debug)]
pub struct ImageUse {
    path: PathBuf,
    state: Mutex<UseState>,
    /// Signalled when planning ends or an eviction ends.
    turn: Condvar,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct UseState {
    /// Seconds since the Unix epoch, by image tag.
    last_used: BTreeMap<String, i64>,
    /// How many running evaluations use each tag.
    in_use: BTreeMap<String, usize>,
    /// Evaluations between their start and their plan's images.
    planning: usize,
    /// An eviction is running.
    evicting: bool,
}

impl ImageUse {
    /// The record of the service directory `dir` (empty when the file is missing or unreadable:
    /// then only the images used from now on are the cache's).
    pub fn open(dir: &Path) -> ImageUse {
        let path = dir.join(USE_FILE);
        let last_used = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        ImageUse {
            path,
            state: Mutex::new(UseState {
                last_used,
                ..UseState::default()
            }),
            turn: Condvar::new(),
        }
    }

    /// An evaluation is about to plan: waits for a running eviction to end.
    pub fn planning(&self) {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut s = self
            .turn
            .wait_while(s, |s| s.evicting)
            .unwrap_or_else(|e| e.into_inner());
        s.planning += 1;
    }

    /// The evaluation that called [`ImageUse::planning`] has planned (its images acquired), or
    /// ended without a plan.
    pub fn planned(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.planning = s.planning.saturating_sub(1);
        drop(s);
        self.turn.notify_all();
    }

    /// Runs `evict` with the last-use times and the tags in use, once no evaluation is planning;
    /// none starts planning until it returns.
    pub fn evicting<R>(
        &self,
        evict: impl FnOnce(&BTreeMap<String, i64>, &BTreeSet<String>) -> R,
    ) -> R {
        let (last_used, in_use) = {
            let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let mut s = self
                .turn
                .wait_while(s, |s| s.planning > 0 || s.evicting)
                .unwrap_or_else(|e| e.into_inner());
            s.evicting = true;
            (s.last_used.clone(), s.in_use.keys().cloned().collect())
        };
        let out = evict(&last_used, &in_use);
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .evicting = false;
        self.turn.notify_all();
        out
    }

    /// An evaluation starts using `tags` at `now`.
    pub fn acquire(&self, tags: &[String], now: i64) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        for t in tags {
            *s.in_use.entry(t.clone()).or_default() += 1;
            s.last_used.insert(t.clone(), now);
        }
    }

    /// An evaluation stopped using `tags` at `now`; the times are written to the file.
    pub fn release(&self, tags: &[String], now: i64) -> std::io::Result<()> {
        let snapshot = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            for t in tags {
                if let Some(n) = s.in_use.get_mut(t) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        s.in_use.remove(t);
                    }
                }
                s.last_used.insert(t.clone(), now);
            }
            s.last_used.clone()
        };
        self.save(&snapshot)
    }

    /// The last-use times and the tags in use now.
    #[cfg(test)]
    fn snapshot(&self) -> (BTreeMap<String, i64>, BTreeSet<String>) {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        (s.last_used.clone(), s.in_use.keys().cloned().collect())
    }

    /// `removed` are gone from the engine: their times are dropped.
    pub fn forget(&self, removed: &[String]) -> std::io::Result<()> {
        let snapshot = {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            for t in removed {
                s.last_used.remove(t);
            }
            s.last_used.clone()
        };
        self.save(&snapshot)
    }

    /// Writes the times (a new file renamed over the old one: a kill leaves one or the other).
    fn save(&self, last_used: &BTreeMap<String, i64>) -> std::io::Result<()> {
        let Some(dir) = self.path.parent() else {
            return Ok(());
        };
        std::fs::create_dir_all(dir)?;
        let tmp = self.path.with_extension("json.partial");
        let text = serde_json::to_string_pretty(last_used).map_err(std::io::Error::other)?;
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.path)
    }
}

/// Now, in seconds since the Unix epoch.
pub fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_in_use_are_counted_per_evaluation_and_times_survive_a_restart() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let used = ImageUse::open(dir.path());
        let a = vec!["a:latest".to_string()];
        let ab = vec!["a:latest".to_string(), "b:latest".to_string()];
        used.acquire(&a, 10);
        used.acquire(&ab, 20);
        used.release(&a, 30).expect("written");
        let (times, in_use) = used.snapshot();
        assert_eq!(
            in_use,
            BTreeSet::from(["a:latest".into(), "b:latest".into()])
        );
        assert_eq!(times["a:latest"], 30);
        used.release(&ab, 40).expect("written");
        assert!(used.snapshot().1.is_empty());

        let again = ImageUse::open(dir.path());
        let (times, in_use) = again.snapshot();
        assert_eq!(times.get("b:latest"), Some(&40));
        assert!(in_use.is_empty());
        again.forget(&["b:latest".to_string()]).expect("written");
        let third = ImageUse::open(dir.path());
        assert_eq!(third.snapshot().0.keys().collect::<Vec<_>>(), ["a:latest"]);
    }

    #[test]
    fn an_eviction_waits_for_planning_and_planning_waits_for_an_eviction() {
        use std::sync::Arc;
        use std::time::Duration;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let used = Arc::new(ImageUse::open(dir.path()));
        used.planning();
        let (tx, rx) = std::sync::mpsc::channel();
        let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let evictor = {
            let (used, ended) = (used.clone(), ended.clone());
            std::thread::spawn(move || {
                used.evicting(|_, in_use| {
                    tx.send(in_use.clone()).expect("written");
                    std::thread::sleep(Duration::from_millis(300));
                    ended.store(true, std::sync::atomic::Ordering::SeqCst);
                })
            })
        };
        // Not while an evaluation plans.
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
        used.acquire(&["a:latest".to_string()], 1);
        used.planned();
        // Then it runs, and sees the image the plan acquired as in use.
        let in_use = rx.recv_timeout(Duration::from_secs(5)).expect("written");
        assert!(in_use.contains("a:latest"));
        // A new plan waits for the eviction's end.
        used.planning();
        assert!(
            ended.load(std::sync::atomic::Ordering::SeqCst),
            "planning started during the eviction"
        );
        used.planned();
        evictor.join().expect("written");
    }

    #[test]
    fn an_unreadable_record_starts_empty() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::write(dir.path().join(USE_FILE), "not json").expect("written");
        assert!(ImageUse::open(dir.path()).snapshot().0.is_empty());
    }
}

//! The time left of an evaluation, as the bar of instances shows it: from the instances that
//! finished, and only once that means something.
//!
//! indicatif's own `{eta}` extrapolates the rate of the bar, which stands at 0/N while the first
//! images build: it showed 2s, 58s, 10m, 49m, 2h, 24h, 2d, 2w, 3w in a two-minute run. [`Eta`]
//! says nothing until [`MIN_DONE`] instances have finished and [`MIN_ELAPSED`] has passed (the
//! bar's message says what is being built meanwhile); then it counts down from an estimate made
//! at each finished instance: the time between finishes (smoothed; the wait for the first one,
//! mostly image builds, left out), times the instances left.
//! Each new estimate moves at most [`MAX_STEP`]-fold from the one it replaces (as counted down;
//! upwards, from the time since that one when it is longer: a run that stalled for an hour may
//! say so), and none exceeds [`MAX_ETA`]. Pure: elapsed times come in, text goes out; the caller
//! owns the clock.

use std::time::Duration;

/// Instances that must have finished before there is an ETA.
pub const MIN_DONE: usize = 3;
/// Time that must have passed before there is an ETA.
pub const MIN_ELAPSED: Duration = Duration::from_secs(20);
/// An instance that finished quicker than this was not evaluated (reused, skipped): it takes no
/// time from the workers and says nothing about the rate.
pub const QUICK: Duration = Duration::from_secs(1);
/// How far one new estimate may move from the last one (either way).
pub const MAX_STEP: f64 = 2.0;
/// The longest ETA shown; longer ones show as `>7d`.
pub const MAX_ETA: Duration = Duration::from_secs(7 * 24 * 3600);
/// Weight of the latest time between finishes in the smoothed one.
const SMOOTHING: f64 = 0.3;
/// A countdown that ran out can grow again by at least this much per finished instance.
const FLOOR: Duration = Duration::from_secs(10);

/// The estimate of the time left, made at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Estimate {
    /// Elapsed time when it was made.
    at: Duration,
    /// Time left then.
    left: Duration,
}

/// The ETA of `total` instances, updated as they finish.
#[derive(Debug, Clone, PartialEq)]
pub struct Eta {
    total: usize,
    done: usize,
    /// Instances done that took time ([`QUICK`] or longer).
    evaluated: usize,
    /// Elapsed time at the first and the last evaluated instance's finish.
    first_finish: Option<Duration>,
    last_finish: Option<Duration>,
    /// Smoothed seconds between two evaluated finishes (the run's throughput, all workers).
    interval: Option<f64>,
    estimate: Option<Estimate>,
}

impl Eta {
    pub fn new(total: usize) -> Eta {
        Eta {
            total,
            done: 0,
            evaluated: 0,
            first_finish: None,
            last_finish: None,
            interval: None,
            estimate: None,
        }
    }

    /// An instance finished `elapsed` after the start, having taken `took`.
    pub fn finished(&mut self, elapsed: Duration, took: Duration) {
        self.done = (self.done + 1).min(self.total);
        if took >= QUICK {
            self.evaluated += 1;
            let first = *self.first_finish.get_or_insert(elapsed);
            self.interval = match (self.interval, self.last_finish) {
                (Some(smoothed), Some(last)) => {
                    let latest = elapsed.saturating_sub(last).as_secs_f64();
                    Some(SMOOTHING * latest + (1.0 - SMOOTHING) * smoothed)
                }
                // The first: the mean time between finishes so far. The wait for the first
                // finish is left out: it is mostly the first images' builds, paid once.
                _ if self.evaluated >= 2 => {
                    Some(elapsed.saturating_sub(first).as_secs_f64() / (self.evaluated - 1) as f64)
                }
                _ => None,
            };
            self.last_finish = Some(elapsed);
        }
        self.estimate = self.estimate_at(elapsed);
    }

    /// A new estimate at `elapsed`, when there is enough to make one.
    fn estimate_at(&self, elapsed: Duration) -> Option<Estimate> {
        let interval = self.interval?;
        if self.done >= self.total {
            return None;
        }
        if self.done < MIN_DONE || elapsed < MIN_ELAPSED {
            return self.estimate;
        }
        let raw = interval * (self.total - self.done) as f64;
        let left = match (self.left(elapsed), self.estimate) {
            (Some(before), Some(last)) => {
                let before = before.as_secs_f64();
                let smoothed = 0.5 * raw + 0.5 * before;
                // Up to MAX_STEP-fold either way; a countdown that ran out (or nearly) can grow
                // by as much as the time since the last estimate, which it underestimated.
                let since = elapsed.saturating_sub(last.at).as_secs_f64();
                let ceiling = before.max(since).max(FLOOR.as_secs_f64()) * MAX_STEP;
                smoothed.clamp(before / MAX_STEP, ceiling)
            }
            _ => raw,
        };
        Some(Estimate {
            at: elapsed,
            left: Duration::from_secs_f64(left.min(MAX_ETA.as_secs_f64())),
        })
    }

    /// The time left at `elapsed`: the last estimate counted down (zero when it ran out), or
    /// `None` before there is one and once every instance is done.
    pub fn left(&self, elapsed: Duration) -> Option<Duration> {
        if self.done >= self.total {
            return None;
        }
        self.estimate
            .map(|e| e.left.saturating_sub(elapsed.saturating_sub(e.at)))
    }

    /// What the bar shows at `elapsed`: `  ETA 4m 10s`, or nothing (no estimate yet, or done).
    pub fn text(&self, elapsed: Duration) -> String {
        match self.left(elapsed) {
            Some(left) => format!("  ETA {}", duration_text(left)),
            None => String::new(),
        }
    }
}

/// A time left, as the bar shows it: `45s`, `4m 10s`, `2h 05m`, `3d 4h`; `<1s` when the estimate
/// ran out, `>7d` beyond [`MAX_ETA`].
pub fn duration_text(d: Duration) -> String {
    if d >= MAX_ETA {
        return ">7d".to_string();
    }
    let s = d.as_secs();
    match s {
        0 => "<1s".to_string(),
        1..60 => format!("{s}s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        3600..86400 => format!("{}h {:02}m", s / 3600, s / 60 % 60),
        _ => format!("{}d {}h", s / 86400, s / 3600 % 24),
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn nothing_before_enough_instances_and_time() {
        let mut eta = Eta::new(10);
        // Images build: nothing has finished, at any time.
        for t in [0, 2, 30, 120, 3600] {
            assert_eq!(eta.text(secs(t)), "", "{t}");
        }
        // Three done, but too early.
        let mut early = eta.clone();
        for t in [5, 10, 15] {
            early.finished(secs(t), secs(5));
        }
        assert_eq!(early.text(secs(15)), "");
        eta.finished(secs(10), secs(5));
        eta.finished(secs(20), secs(5));
        assert_eq!(eta.text(secs(25)), "", "two done");
        // Three done after MIN_ELAPSED: 10 s between finishes, 7 left.
        eta.finished(secs(30), secs(5));
        assert_eq!(eta.left(secs(30)), Some(secs(70)));
        assert_eq!(eta.text(secs(30)), "  ETA 1m 10s");
    }

    #[test]
    fn quick_instances_count_as_done_but_not_for_the_rate() {
        let mut eta = Eta::new(10);
        // Four reused at once, then nothing for a long time: no estimate from them.
        for _ in 0..4 {
            eta.finished(secs(0), Duration::from_millis(3));
        }
        assert_eq!(eta.text(secs(600)), "");
        eta.finished(secs(660), secs(50));
        assert_eq!(eta.text(secs(660)), "", "one evaluated: no rate yet");
        // 20 s between the two evaluated finishes, four left.
        eta.finished(secs(680), secs(50));
        assert_eq!(eta.left(secs(680)), Some(secs(80)));
    }

    #[test]
    fn it_counts_down_between_finishes_and_ends_with_the_run() {
        let mut eta = Eta::new(4);
        for t in [10, 20, 30] {
            eta.finished(secs(t), secs(10));
        }
        assert_eq!(eta.left(secs(30)), Some(secs(10)));
        assert_eq!(eta.left(secs(35)), Some(secs(5)));
        assert_eq!(eta.text(secs(45)), "  ETA <1s");
        eta.finished(secs(50), secs(10));
        assert_eq!(eta.left(secs(50)), None);
        assert_eq!(eta.text(secs(50)), "");
    }

    /// The reported run: 10 instances, images built for ~100 s, then the instances in quick
    /// succession. No ETA while the images build; then one that never moves more than
    /// MAX_STEP-fold per finish (indicatif's went 2s → 58s → 10m → … → 3w).
    #[test]
    fn a_slow_start_does_not_make_the_estimate_jump() {
        let mut eta = Eta::new(10);
        for t in (0..100).step_by(5) {
            assert_eq!(eta.text(secs(t)), "", "building, {t}s");
        }
        let finishes = [100, 101, 103, 106, 110, 112, 117, 121, 124, 128];
        let mut shown = Vec::new();
        for (i, &t) in finishes.iter().enumerate() {
            let was = eta.left(secs(t));
            eta.finished(secs(t), secs(90));
            if let (Some(was), Some(now)) = (was, eta.left(secs(t))) {
                let (was, now) = (was.as_secs_f64(), now.as_secs_f64());
                assert!(
                    now <= was.max(FLOOR.as_secs_f64()) * MAX_STEP + 1e-9
                        && now >= was / MAX_STEP - 1e-9,
                    "finish {i}: {was} → {now}"
                );
            }
            shown.push(eta.text(secs(t)));
        }
        // The first estimate (at the third finish, 103 s): 1 s between the first two finishes,
        // smoothed with the 2 s to the third (1.3 s), × 7 left.
        assert_eq!(shown[..3], ["", "", "  ETA 9s"], "{shown:?}");
        // Every one after it is within a minute of the 25 s the run really had left.
        for s in &shown[3..9] {
            let secs: u64 = s
                .strip_prefix("  ETA ")
                .and_then(|r| r.strip_suffix('s'))
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("{shown:?}"));
            assert!(secs < 60, "{shown:?}");
        }
        assert_eq!(shown[9], "", "done");
    }

    #[test]
    fn a_stalled_run_grows_its_estimate_step_by_step_and_is_clamped() {
        let mut eta = Eta::new(1000);
        for t in [10, 20, 30] {
            eta.finished(secs(t), secs(10));
        }
        // 10 s per instance, 997 left.
        assert_eq!(eta.left(secs(30)), Some(secs(9970)));
        // The next one a little late: the estimate moves at most MAX_STEP-fold.
        eta.finished(secs(60), secs(10));
        let left = eta.left(secs(60)).unwrap();
        assert!(left <= secs(2 * 9940) && left >= secs(9940 / 2), "{left:?}");
        // An instance after a day: the estimate grows (at most twice the day), not to weeks.
        eta.finished(secs(86_400), secs(10));
        let left = eta.left(secs(86_400)).unwrap();
        assert!(left > secs(9970) && left <= secs(2 * 86_400), "{left:?}");
        // A run of week-long gaps never shows more than MAX_ETA.
        let mut t = 86_400;
        for _ in 0..20 {
            t += 7 * 86_400;
            eta.finished(secs(t), secs(10));
            assert!(eta.left(secs(t)).unwrap() <= MAX_ETA);
        }
        assert_eq!(eta.text(secs(t)), "  ETA >7d");
    }

    #[test]
    fn durations_read_at_a_glance() {
        for (s, want) in [
            (0, "<1s"),
            (1, "1s"),
            (59, "59s"),
            (60, "1m 00s"),
            (250, "4m 10s"),
            (3600, "1h 00m"),
            (7500, "2h 05m"),
            (86_400, "1d 0h"),
            (273_600, "3d 4h"),
            (7 * 86_400, ">7d"),
        ] {
            assert_eq!(duration_text(secs(s)), want, "{s}");
        }
    }
}

//! The orchestrator: follows a [`Plan`](swtbench_plan::Plan) on a
//! [`ContainerBackend`](swtbench_backend::ContainerBackend), at most
//! [`Concurrency::containers`](swtbench_plan::plan::Concurrency) test containers at a time, and ends with
//! the reports.
//!
//! - Instances that need no container (all runs reusable, empty patch, skipped) are graded first,
//!   in plan order. The others start in the plan's schedule order, the longest expected first
//!   ([`swtbench_plan::schedule`]), a bounded number of them under way at once.
//! - Images are ensured lazily, only for instances with something to execute, each at most once
//!   (the image builder's single flight), at most `build_workers` builds at a time, built ahead in
//!   the same order.
//! - Runs, not instances, are the unit of work: once an instance's image is ready its runs wait
//!   side by side for a container slot (`slots`), which goes to the waiting run with the longest
//!   expected duration, of whichever instance. Runs with the same content key, in the same
//!   instance or across instances, execute once: the first to get there runs it, the others copy
//!   its output (a failure is not shared: the next instance that needs the run tries again). A
//!   failing run ends the instance (runs still waiting do not start; finished ones stay on disk,
//!   keyed, for a rerun); a timeout is a result, not a failure.
//! - Each instance is graded as soon as its runs are done: `report.json` and the instance summary
//!   are written then, so an interrupted evaluation leaves the reports of finished instances.
//! - Cancellation: an interrupt stops scheduling and drops the running instances at once (an eval
//!   script in flight is not waited for: its container is killed and removed; an image build in
//!   flight is abandoned, and no waiter takes it over), then images above the cache level are
//!   removed and the reports written; a kill does the same cleanup and skips the reports.
//! - A clean-up cannot hang: a call that is slow makes the dispatcher probe the engine, and an
//!   engine that does not answer ends the clean-up at once, naming the containers left behind
//!   (`watch`); after a cancel the whole clean-up also has a time limit.
//!
//! The runner never prints; it emits [`Event`](crate::Event)s.
//!
//! The parts (private modules): `dispatch` (scheduling, joins, clean-up, the run report),
//! `instance` (one instance from start to end), `image_state` (the images of the evaluation),
//! `flights` (one execution per content key), `slots` (the container slots, longest first),
//! `shared` (what every task shares), `watch` (the bounded waits of the clean-up).

mod books;
mod dispatch;
mod flights;
mod image_state;
mod instance;
mod shared;
mod slots;
mod watch;

pub use dispatch::{run, Evaluation, RunOutput, ShardOutcomes};
pub use instance::InstanceResult;

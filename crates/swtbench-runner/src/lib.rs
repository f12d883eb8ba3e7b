//! Plans, schedules and executes SWT-Bench evaluations on a container backend.
//!
//! The flow, as data:
//!
//! 1. [`swtbench_plan::plan::plan`]: instances + predictions + rendered specs + what already
//!    exists (images, keyed run outputs, cached extractions) → a [`Plan`](swtbench_plan::Plan):
//!    per instance skip / empty patch / evaluate, per run its directory, content key and action,
//!    per image reuse or build. Pure apart from a read-only
//!    [`OutputLookup`](swtbench_plan::plan::OutputLookup). `--dry-run` prints it.
//! 2. [`runner::run`]: follows the plan on a [`swtbench_backend::ContainerBackend`]: images built
//!    lazily and once, instances in parallel, runs in fresh containers with timeouts, outputs and
//!    content keys written atomically ([`execute`], [`keys`]), each instance graded as soon as it
//!    is done ([`report`]), the run report at the end, images above the cache level removed
//!    ([`images`]). It never prints: it emits [`events::Event`]s to an [`events::EventSink`].
//!    Why an instance was skipped or failed, a run failed or the evaluation stopped early is typed
//!    ([`swtbench_plan::plan::SkipCause`], [`outcome`], [`outcome::ExecError`]); each cause
//!    renders the text the reports hold.
//! 3. Cancellation ([`cancel::Cancel`]) escalates from "stop and write partial reports" to "kill".
//!
//! Resume is a property of the keys: rerunning the same command reuses every run whose directory
//! holds an output with the same key and executes the rest, and the reports are recomputed.

pub mod cancel;
mod disk_outputs;
pub mod events;
pub mod evidence;
pub mod execute;
pub mod fsutil;
pub mod images;
pub mod keys;
pub mod leftovers;
mod lock;
pub mod offline;
pub mod outcome;
pub mod output_file;
pub mod prebuilt;
pub mod prepare;
pub mod report;
pub mod retry;
pub mod runner;
pub mod session;
pub mod shared_lock;

pub use cancel::Cancel;
pub use disk_outputs::DiskOutputs;
pub use events::{Event, EventSink};
pub use runner::{run, Evaluation, InstanceResult, RunOutput, ShardOutcomes};

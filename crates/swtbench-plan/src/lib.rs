//! What an SWT-Bench evaluation will do, decided before any side effect: the data the runner
//! follows and `--dry-run` prints.
//!
//! - [`plan::plan`]: instances + predictions + rendered specs + what already exists (images,
//!   keyed run outputs, cached extractions, read through [`plan::OutputLookup`]) → a
//!   [`plan::Plan`]: per instance skip / empty patch / evaluate, per run its directory, content
//!   key ([`keys`]) and action, per image reuse, pull or build.
//! - [`schedule`]: the order instances start in and the estimates of how long they take.
//! - [`settings`]: what a run is asked to do (the run's flags as data), with its resource
//!   [`limits`].
//! - [`prebuilt`]: which prebuilt image serves an instance and what its digest is.
//!
//! Pure: no file, process, network or clock access (checked by `scripts/lint`).

pub mod keys;
pub mod limits;
pub mod plan;
pub mod prebuilt;
pub mod schedule;
pub mod settings;

pub use plan::{plan, Plan, PlanInput};
pub use settings::{CacheLevel, ImageKind, RunSettings};

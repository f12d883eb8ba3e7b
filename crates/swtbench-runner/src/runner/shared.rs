//! What every task of one evaluation shares: the engine, the settings, the event sink, the
//! container registry, the image state, the single flights of runs, and the evaluation's
//! bookkeeping (statistics, warnings, why it stopped early).
//!
//! It holds no scheduling and no per-instance logic; it must not block: every lock here is held
//! for a few statements and never across an `.await`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use swtbench_backend::ContainerBackend;
use swtbench_core::layout::model_dir_name;
use swtbench_core::Instance;

use super::books::Books;
use super::flights::Flights;
use super::image_state::{ImageCx, ImageState};
use super::slots::Slots;
use super::watch::ping;
use crate::cancel::Cancel;
use crate::events::{CancelReason, EvaluationStats, Event, EventSink, Phase};
use crate::execute::ContainerRegistry;
use crate::lock::Locked;
use crate::outcome::AbortReason;
use crate::Evaluation;
use swtbench_plan::plan::Plan;
use swtbench_plan::settings::RunSettings;

/// How long the liveness probe after an engine error may wait for the engine's answer.
pub(super) const ENGINE_PROBE_LIMIT: Duration = Duration::from_secs(5);

/// The tracer copied into the containers when coverage is on.
#[derive(Debug, Clone)]
pub(super) struct Tracer {
    pub text: String,
    /// Goes into the content keys of the runs.
    pub sha256: String,
}

pub(super) struct Shared<B: ContainerBackend> {
    pub backend: Arc<B>,
    pub settings: RunSettings,
    pub books: Books,
    pub cancel: Cancel,
    pub registry: ContainerRegistry,
    pub images: ImageState<B>,
    pub flights: Flights,
    /// The places of the test containers (and extractions) that may run at once.
    pub slots: Arc<Slots>,
    /// Each instance's place in the plan's start order: among runs expected to take as long,
    /// the earlier instance's go first.
    pub ranks: std::collections::HashMap<String, u64>,
    /// The plan's instances by id.
    pub instances: BTreeMap<String, Instance>,
    /// `None` without coverage.
    pub tracer: Option<Tracer>,
    pub model_dir: String,
    aborted: Mutex<Option<AbortReason>>,
}

impl<B: ContainerBackend> Shared<B> {
    /// The shared state of `eval`; gives back what only the dispatcher needs: the plan and the
    /// submitted ids.
    pub fn new(
        backend: Arc<B>,
        sink: Arc<dyn EventSink>,
        cancel: Cancel,
        eval: Evaluation,
    ) -> (Shared<B>, Plan, Vec<String>) {
        let Evaluation {
            settings,
            plan,
            instances,
            images,
            tracer,
            submitted_ids,
            network,
            shard_outcomes: _,
        } = eval;
        let tracer = tracer
            .filter(|_| settings.eval.coverage)
            .map(|text| Tracer {
                sha256: swtbench_core::hash::sha256_hex(&text),
                text,
            });
        let shared = Shared {
            images: ImageState::new(
                backend.clone(),
                network,
                &settings,
                &plan,
                images,
                sink.clone(),
            ),
            backend,
            books: Books::new(sink),
            cancel,
            registry: ContainerRegistry::default(),
            flights: Flights::default(),
            slots: Slots::new(plan.concurrency.containers),
            ranks: plan
                .order
                .iter()
                .enumerate()
                .map(|(rank, id)| (id.clone(), rank as u64))
                .collect(),
            instances,
            tracer,
            model_dir: model_dir_name(&plan.model),
            aborted: Mutex::new(None),
            settings,
        };
        (shared, plan, submitted_ids)
    }

    /// Stops the evaluation because of a failure of the machine (the first reason wins): running
    /// instances are stopped as on an interrupt and the partial reports written.
    pub fn abort(&self, reason: AbortReason) {
        {
            let mut a = self.aborted.locked();
            if a.is_some() {
                return;
            }
            *a = Some(reason.clone());
        }
        self.emit(Event::EvaluationAborted { reason });
        self.cancel.request(CancelReason::Interrupt);
    }

    pub fn aborted(&self) -> Option<AbortReason> {
        self.aborted.locked().clone()
    }

    /// After an engine error: whether the engine still answers. A restarting daemon (which
    /// refuses connections) gets a few seconds; an engine that does not answer stops the
    /// evaluation instead of failing every remaining instance in turn. A ping that got no answer
    /// at all within [`ENGINE_PROBE_LIMIT`] is not retried: the engine holds the connection and
    /// stays silent, which a restarting daemon does not do.
    pub async fn check_engine(&self) {
        let mut last = None;
        for attempt in 0..3 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            match ping(self.backend.as_ref(), ENGINE_PROBE_LIMIT).await {
                Ok(()) => return,
                Err(e) if e.is_engine_lost() => {
                    last = Some(e);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        if let Some(e) = last {
            self.abort(AbortReason::EngineGone(e));
        }
    }

    /// The images' view of the evaluation: what building, pulling and removing images needs.
    pub fn images(&self) -> ImageCx<'_, B> {
        ImageCx {
            state: &self.images,
            backend: &self.backend,
            settings: &self.settings,
            registry: &self.registry,
            books: &self.books,
        }
    }

    pub fn emit(&self, e: Event) {
        self.books.emit(e);
    }

    pub fn phase(&self, id: &str, phase: Phase) {
        self.emit(Event::InstancePhase {
            instance_id: id.to_string(),
            phase,
        });
    }

    pub fn stats(&self, f: impl FnOnce(&mut EvaluationStats)) {
        self.books.stats(f);
    }

    /// The counters so far (the per-instance totals are counted by the dispatcher).
    pub fn stats_now(&self) -> EvaluationStats {
        self.books.stats_now()
    }

    pub fn warn(&self, message: String) {
        self.books.warn(message);
    }

    pub fn warnings(&self) -> Vec<String> {
        self.books.warnings()
    }
}

//! An evaluation's bookkeeping: the event sink, the statistics and the warnings. The one handle
//! every part that reports (the image state, the instances, the dispatcher) is given, so that
//! reporting needs nothing else of the shared context.

use std::sync::{Arc, Mutex};

use crate::events::{EvaluationStats, Event, EventSink};
use crate::lock::Locked;

pub(super) struct Books {
    sink: Arc<dyn EventSink>,
    stats: Mutex<EvaluationStats>,
    warnings: Mutex<Vec<String>>,
}

impl Books {
    pub fn new(sink: Arc<dyn EventSink>) -> Books {
        Books {
            sink,
            stats: Mutex::new(EvaluationStats::default()),
            warnings: Mutex::new(Vec::new()),
        }
    }

    pub fn emit(&self, e: Event) {
        self.sink.event(&e);
    }

    pub fn stats(&self, f: impl FnOnce(&mut EvaluationStats)) {
        f(&mut self.stats.locked());
    }

    /// The counters so far (the per-instance totals are counted by the dispatcher).
    pub fn stats_now(&self) -> EvaluationStats {
        *self.stats.locked()
    }

    pub fn warn(&self, message: String) {
        self.emit(Event::Warning {
            message: message.clone(),
        });
        self.warnings.locked().push(message);
    }

    pub fn warnings(&self) -> Vec<String> {
        self.warnings.locked().clone()
    }
}

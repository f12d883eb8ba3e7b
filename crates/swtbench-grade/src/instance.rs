//! Grading one instance from its six run outputs, with the integrity and evidence checks, strict
//! grading and the flaky list: the one path that `swtbench run` (outputs on disk, each checked
//! against its key), `swtbench grade` and `swtbench verify` (a run tree read back) take, so their
//! `report.json` files cannot differ for the same outputs.
//!
//! The outputs come through [`RunOutputs`]: a reader hands each run's output over piece by piece
//! (a log can be hundreds of megabytes, and no more than one is held at a time) and may start a
//! piece-by-piece read over (a concurrent writer replaced the file meanwhile).

use std::borrow::Cow;
use std::collections::BTreeSet;

use swtbench_core::{Instance, RunKind};

use crate::evidence::RunEvidence;
use crate::integrity::{apply_strict, check_instance_with, CheckContext, Integrity};
use crate::logs::{self, parse_run, ParsedRun};
use crate::report::{grade_parsed, grading_parser, GradeError, GradeOptions};
use crate::scan::RunScanner;
use crate::{InstanceReport, Parser};

/// How much of an output the integrity checks read: its last this many bytes (from a line start),
/// so that checking stays within bounded memory whatever a test prints. The runner's summary,
/// whatever follows it and the coverage dump are at the end.
pub const CHECKED_TAIL_BYTES: usize = 2 << 20;

/// A run's evidence files as read: the hook's `swtbench_evidence.json` and the runner's
/// `test_evidence.jsonl`, each where present.
pub type EvidenceFiles = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Where the six runs' outputs of one instance are read from.
pub trait RunOutputs {
    /// Why an output could not be read.
    type Error;

    /// Reads the output of `kind` piece by piece: each attempt begins with a fresh state from
    /// `start`, and `feed` takes the pieces in order. `Ok(None)`: the run left no output (graded
    /// as a run without tests, as the original does).
    fn scan<T>(
        &mut self,
        kind: RunKind,
        start: &mut dyn FnMut() -> T,
        feed: &mut dyn FnMut(&mut T, &[u8]),
    ) -> Result<Option<T>, Self::Error>;

    /// The evidence files beside the output of `kind`.
    fn evidence(&mut self, kind: RunKind) -> Result<EvidenceFiles, Self::Error>;
}

/// What grading an instance needs besides its outputs.
#[derive(Debug, Clone, Copy)]
pub struct InstanceInputs<'a> {
    pub instance: &'a Instance,
    /// The model patch as executed.
    pub model_patch: &'a str,
    /// The spec's extensions of files that are not tests (the integrity checks' selections).
    pub non_test_exts: &'a [&'a str],
    /// `--flaky-list`: the instance's tests left out of the transitions.
    pub flaky: Option<&'a BTreeSet<String>>,
    /// The unit-test log parser of the instance's repository (a spec table's `log_parser`);
    /// `None`: the original's parser of the repository.
    pub parser: Option<Parser>,
}

/// Why an instance could not be graded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstanceGradeError<E> {
    /// An output or evidence file could not be read.
    Output(E),
    /// The outputs cannot be graded (an unknown repository, a broken gold patch).
    Grade(GradeError),
}

impl<E> From<GradeError> for InstanceGradeError<E> {
    fn from(e: GradeError) -> Self {
        InstanceGradeError::Grade(e)
    }
}

/// Grades an instance from the outputs of its six runs and checks their integrity and evidence
/// (each output is read twice, one at a time: once parsed, once its tail checked). With
/// `options.strict_results` the report is the strict grade.
pub fn grade_instance_outputs<S: RunOutputs>(
    inputs: &InstanceInputs<'_>,
    options: &GradeOptions,
    source: &mut S,
) -> Result<(InstanceReport, Integrity), InstanceGradeError<S::Error>> {
    let instance = inputs.instance;
    let unit = match inputs.parser {
        Some(p) => p,
        None => logs::parser_for(&instance.repo, options.exec_mode).ok_or_else(|| {
            GradeError::UnknownRepo {
                instance_id: instance.instance_id.to_string(),
                repo: instance.repo.clone(),
                known: crate::parsers::REPO_PARSERS
                    .iter()
                    .map(|(r, _)| *r)
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })?,
    };
    let parser = grading_parser(options, unit);
    let gold_code_patch = instance.golden_code_patch.as_str();

    let mut parsed: [ParsedRun; 6] = Default::default();
    for (slot, kind) in parsed.iter_mut().zip(RunKind::ALL) {
        *slot = parse_output(source, kind, parser).map_err(InstanceGradeError::Output)?;
    }
    if let Some(tests) = inputs.flaky {
        crate::stability::leave_out(&mut parsed, tests);
    }
    let mut graded = grade_parsed(
        instance.instance_id.as_str(),
        gold_code_patch,
        parsed,
        options,
    )?;

    let ctx = CheckContext {
        repo: &instance.repo,
        parser,
        gold_code_patch,
        gold_test_patch: &instance.golden_test_patch,
        model_patch: Some(inputs.model_patch),
        non_test_exts: inputs.non_test_exts,
    };
    let mut read_error = None;
    let integrity = check_instance_with(&ctx, |kind| {
        match source.scan(kind, &mut TailWindow::default, &mut TailWindow::push) {
            Ok(window) => window.map(|w| Cow::Owned(w.text())),
            Err(e) => {
                read_error.get_or_insert(e);
                None
            }
        }
    });
    if let Some(e) = read_error {
        return Err(InstanceGradeError::Output(e));
    }

    // The runner's own results and the tracer's coverage, where they were collected.
    let mut evidence: [RunEvidence; 6] = Default::default();
    let mut found = Vec::new();
    for (slot, kind) in evidence.iter_mut().zip(RunKind::ALL) {
        let (meta, raw) = source.evidence(kind).map_err(InstanceGradeError::Output)?;
        let (ev, reason) = crate::evidence::load(kind, meta.as_deref(), raw.as_deref());
        *slot = ev;
        found.extend(reason);
    }
    let logs = graded.runs.each_ref().map(|r| r.tests.clone());
    found.extend(crate::evidence::check_instance(
        &ctx,
        &logs,
        &graded.coverage_maps,
        &evidence,
    ));
    let mut integrity = integrity.with(found);
    integrity.without_evidence = crate::evidence::without_evidence(&evidence);
    integrity.network = crate::evidence::network_use(&evidence);
    if options.strict_results {
        let maps = crate::evidence::strict_maps(parser, &logs, &evidence);
        apply_strict(
            &mut graded.report,
            &maps,
            &integrity,
            options.grading_version,
        );
    }
    Ok((graded.report, integrity))
}

/// Parses one run's output, piece by piece where the parser allows it.
fn parse_output<S: RunOutputs>(
    source: &mut S,
    kind: RunKind,
    parser: Parser,
) -> Result<ParsedRun, S::Error> {
    if RunScanner::new(parser).is_some() {
        let scanned = source.scan(
            kind,
            &mut || RunScanner::new(parser),
            &mut |s: &mut Option<RunScanner>, bytes: &[u8]| {
                if let Some(s) = s {
                    s.push(bytes);
                }
            },
        )?;
        return Ok(match scanned {
            None => parse_run(None, parser),
            Some(Some(scanner)) => match scanner.finish() {
                Some(p) => p,
                None => parse_whole(source, kind, parser)?,
            },
            Some(None) => parse_whole(source, kind, parser)?,
        });
    }
    parse_whole(source, kind, parser)
}

/// Parses one run's output read whole (parsers that need all of it at once).
fn parse_whole<S: RunOutputs>(
    source: &mut S,
    kind: RunKind,
    parser: Parser,
) -> Result<ParsedRun, S::Error> {
    let whole = source.scan(
        kind,
        &mut Vec::new,
        &mut |all: &mut Vec<u8>, piece: &[u8]| all.extend_from_slice(piece),
    )?;
    Ok(parse_run(whole.as_deref(), parser))
}

/// The last [`CHECKED_TAIL_BYTES`] of an output, read piece by piece.
#[derive(Debug, Default)]
struct TailWindow {
    bytes: Vec<u8>,
    cut: bool,
}

impl TailWindow {
    fn push(&mut self, piece: &[u8]) {
        self.bytes.extend_from_slice(piece);
        if self.bytes.len() > CHECKED_TAIL_BYTES + (1 << 20) {
            let drop = self.bytes.len() - CHECKED_TAIL_BYTES;
            self.bytes.drain(..drop);
            self.cut = true;
        }
    }

    /// The window as text, starting at a line when it was cut.
    fn text(mut self) -> String {
        if self.cut {
            let start = memchr::memchr(b'\n', &self.bytes).map_or(self.bytes.len(), |i| i + 1);
            self.bytes.drain(..start);
        }
        match String::from_utf8(self.bytes) {
            Ok(s) => s,
            Err(e) => crate::py::read_text(e.as_bytes()).0.into_owned(),
        }
    }
}

/// Six outputs and their evidence files already in memory (`None`: no output).
#[derive(Debug, Default)]
pub struct OutputsInMemory {
    pub outputs: [Option<Vec<u8>>; 6],
    pub evidence: [EvidenceFiles; 6],
}

impl RunOutputs for OutputsInMemory {
    type Error = std::convert::Infallible;

    fn scan<T>(
        &mut self,
        kind: RunKind,
        start: &mut dyn FnMut() -> T,
        feed: &mut dyn FnMut(&mut T, &[u8]),
    ) -> Result<Option<T>, Self::Error> {
        let Some(bytes) = &self.outputs[crate::report::kind_index(kind)] else {
            return Ok(None);
        };
        let mut state = start();
        feed(&mut state, bytes);
        Ok(Some(state))
    }

    fn evidence(&mut self, kind: RunKind) -> Result<EvidenceFiles, Self::Error> {
        Ok(self.evidence[crate::report::kind_index(kind)].clone())
    }
}

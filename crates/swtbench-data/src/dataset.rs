//! Loading a benchmark dataset: from an alias, a local file or directory, the Hugging Face hub,
//! or the copies embedded in the binary; then layout detection, validation, the SWT filter and
//! the `--instance-ids` selection (§2.1–§2.2).
//!
//! The result, [`LoadedDataset`], holds valid instances sorted by id, plus everything a command
//! needs to explain what happened: where the rows came from, which filter list applies, which ids
//! were excluded and why, row problems (missing fields, duplicate ids) and notes for stderr.
//! Nothing here prints; commands decide what to show and whether problems are fatal.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use swtbench_core::instance::{looks_swapped, unwrap_patch_tags};
use swtbench_core::{Instance, InstanceId, PatchLayout};

use crate::embedded::{self, EmbeddedDataset};
use crate::filters::SwtFilter;
use crate::hub::{Hub, HubError, HubProgress};
use crate::rows::{self, FileFormat, Row, RowsError};

/// A dataset the original harness knows by alias.
#[derive(Debug)]
pub struct KnownDataset {
    /// Short name: `full`, `lite`, `verified`.
    pub key: &'static str,
    /// The Hugging Face dataset the aliases stand for.
    pub canonical: &'static str,
    /// Accepted names, lower case (compared case-insensitively); the original's plus ours.
    pub aliases: &'static [&'static str],
    /// The SWT-Bench filter list of this benchmark.
    pub filter: SwtFilter,
    /// Rows of the test split, and after `--filter-swt`.
    pub test_rows: usize,
}

static KNOWN: [KnownDataset; 3] = [
    KnownDataset {
        key: "full",
        canonical: "princeton-nlp/SWE-bench",
        aliases: &[
            "swe-bench",
            "swebench",
            "swe_bench",
            "princeton-nlp/swe-bench",
            "full",
            "swe-bench/swe-bench",
        ],
        filter: SwtFilter::Full,
        test_rows: 2294,
    },
    KnownDataset {
        key: "lite",
        canonical: "princeton-nlp/SWE-bench_Lite",
        aliases: &[
            "swe-bench-lite",
            "swebench-lite",
            "swe_bench_lite",
            "swe-bench_lite",
            "lite",
            "princeton-nlp/swe-bench_lite",
            "swe-bench/swe-bench_lite",
        ],
        filter: SwtFilter::Lite,
        test_rows: 300,
    },
    KnownDataset {
        key: "verified",
        canonical: "princeton-nlp/SWE-bench_Verified",
        aliases: &[
            "swe-bench-verified",
            "swebench-verified",
            "swe_bench_verified",
            "swe-bench_verified",
            "verified",
            "princeton-nlp/swe-bench_verified",
            "swe-bench/swe-bench_verified",
        ],
        filter: SwtFilter::Verified,
        test_rows: 500,
    },
];

/// Every dataset known by alias.
pub fn known_datasets() -> &'static [KnownDataset] {
    &KNOWN
}

/// The known dataset an alias (case-insensitive) stands for.
pub fn resolve_alias(name: &str) -> Option<&'static KnownDataset> {
    let lower = name.trim().to_ascii_lowercase();
    KNOWN.iter().find(|k| k.aliases.contains(&lower.as_str()))
}

/// The alias `name` is most likely a typo of, if any: a name that cannot be a path or an
/// `owner/name` hub id (no `/` or `\\`), is no alias itself, and is within a small edit distance
/// ([`edit_distance`], case-insensitive) of an alias without `/`: 1 for aliases of up to four
/// letters (`liet`, `ful`), 2 for longer ones (`verifed`, `swebench_lite`). The closest alias wins;
/// on a tie, the first in [`known_datasets`] order.
pub fn near_alias(name: &str) -> Option<&'static str> {
    let lower = name.trim().to_ascii_lowercase();
    if lower.is_empty() || lower.contains(['/', '\\']) || resolve_alias(&lower).is_some() {
        return None;
    }
    KNOWN
        .iter()
        .flat_map(|k| k.aliases.iter().copied())
        .filter(|alias| !alias.contains('/'))
        .map(|alias| (edit_distance(&lower, alias), alias))
        .filter(|&(d, alias)| d <= if alias.chars().count() <= 4 { 1 } else { 2 })
        .min_by_key(|&(d, _)| d)
        .map(|(_, alias)| alias)
}

/// The optimal string alignment distance of `a` and `b` (over chars): the fewest insertions,
/// deletions, substitutions and swaps of two adjacent characters that turn one into the other,
/// no substring edited twice. `liet` → `lite` is 1 (one swap), `lite` → `list` is 2.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // d[i][j]: the distance of a[..i] and b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

impl KnownDataset {
    /// Rows of the test split after `--filter-swt`.
    pub fn swt_test_rows(&self) -> usize {
        self.test_rows - self.filter.len()
    }

    /// The embedded copy of `split`, if there is one.
    pub fn embedded(&self, split: &str) -> Option<&'static EmbeddedDataset> {
        embedded::find(self.canonical, split)
    }
}

/// What `--dataset` names.
#[derive(Debug, Clone)]
pub enum DatasetSource {
    /// An alias of a known benchmark.
    Known(&'static KnownDataset),
    /// A local `.json`, `.jsonl` or `.parquet` file.
    File(PathBuf),
    /// A local directory holding the split's `.parquet`/`.jsonl`/`.json` files, or a
    /// `datasets.save_to_disk` directory (`<split>/data-*.arrow`).
    Dir(PathBuf),
    /// Any other Hugging Face dataset name.
    Hub(String),
}

impl DatasetSource {
    /// Aliases first (as the original), then file extensions and existing paths, else a hub name.
    pub fn parse(name: &str) -> DatasetSource {
        if let Some(k) = resolve_alias(name) {
            return DatasetSource::Known(k);
        }
        let path = Path::new(name);
        if FileFormat::from_path(path).is_some() {
            return DatasetSource::File(path.to_path_buf());
        }
        if path.is_dir() {
            return DatasetSource::Dir(path.to_path_buf());
        }
        if path.is_file() || !is_hub_name(name.trim()) {
            // A missing local path (`./data`, `/x/y`, `~/z`) must not turn into a hub request.
            return DatasetSource::File(path.to_path_buf());
        }
        DatasetSource::Hub(name.trim().to_string())
    }

    /// The canonical name for known datasets, the path for files, the name for the hub.
    pub fn display_name(&self) -> String {
        match self {
            DatasetSource::Known(k) => k.canonical.to_string(),
            DatasetSource::File(p) | DatasetSource::Dir(p) => p.display().to_string(),
            DatasetSource::Hub(n) => n.clone(),
        }
    }
}

/// Whether `name` can be a Hugging Face dataset id: `name` or `owner/name`, each part made of
/// letters, digits, `-`, `_` and `.`, not starting or ending with `-`/`.`, without `--` or `..`
/// (the hub's own rules).
pub fn is_hub_name(name: &str) -> bool {
    let parts: Vec<&str> = name.split('/').collect();
    parts.len() <= 2
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 96
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                && !p.starts_with(['-', '.'])
                && !p.ends_with(['-', '.'])
                && !p.contains("--")
                && !p.contains("..")
        })
}

/// What to load and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// Alias, path or hub name, as the user gave it.
    pub dataset: String,
    pub split: String,
    /// Drop the instances of the SWT-Bench filter list.
    pub filter_swt: bool,
    /// Which filter list to use; `None` → the dataset's own, or inferred (see [`LoadedDataset`]).
    pub filter_list: Option<SwtFilter>,
    /// The `patch` fields are wrapped in `<patch>` tags (text/RAG or SWT datasets).
    pub is_swt: bool,
    /// Never touch the network: embedded copies and the download cache only.
    pub offline: bool,
    /// Keep only these instances (all must exist). Empty → all.
    pub instance_ids: Vec<String>,
}

impl LoadOptions {
    pub fn new(dataset: impl Into<String>) -> LoadOptions {
        LoadOptions {
            dataset: dataset.into(),
            split: "test".to_string(),
            filter_swt: false,
            filter_list: None,
            is_swt: false,
            offline: false,
            instance_ids: Vec::new(),
        }
    }
}

/// Where the rows came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatasetOrigin {
    File(PathBuf),
    /// Files in a local directory.
    Dir(PathBuf, Vec<PathBuf>),
    Hub {
        files: Vec<String>,
        /// Entirely from the download cache.
        from_cache: bool,
        /// Some of it from the cache because the hub was unreachable.
        stale: bool,
    },
    /// The copy inside the binary.
    Embedded {
        file: &'static str,
    },
}

impl fmt::Display for DatasetOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatasetOrigin::File(p) => write!(f, "file {}", p.display()),
            DatasetOrigin::Dir(p, files) => {
                write!(f, "directory {} ({} files)", p.display(), files.len())
            }
            DatasetOrigin::Hub {
                from_cache: true, ..
            } => f.write_str("Hugging Face hub (download cache)"),
            DatasetOrigin::Hub { .. } => f.write_str("Hugging Face hub"),
            DatasetOrigin::Embedded { file } => write!(f, "embedded copy ({file})"),
        }
    }
}

/// Why an instance of the dataset is not in [`LoadedDataset::instances`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exclusion {
    /// In the SWT filter list (`--filter-swt`).
    SwtFilter(SwtFilter),
    /// Not among `--instance-ids`.
    NotSelected,
    /// Its row is not a valid instance (see [`LoadedDataset::problems`]).
    InvalidRow,
}

impl fmt::Display for Exclusion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exclusion::SwtFilter(l) => write!(f, "excluded by the SWT filter list {l}"),
            Exclusion::NotSelected => f.write_str("not among --instance-ids"),
            Exclusion::InvalidRow => f.write_str("its dataset row is invalid"),
        }
    }
}

/// One invalid row or instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetProblem {
    /// File (or hub file) and row, e.g. `data.jsonl: line 4`.
    pub location: String,
    /// The instance id, when the row has one.
    pub instance: Option<String>,
    /// The field at fault, when one is.
    pub field: Option<String>,
    pub message: String,
}

impl fmt::Display for DatasetProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.instance {
            Some(id) => write!(f, "{id} ({}): {}", self.location, self.message),
            None => write!(f, "{}: {}", self.location, self.message),
        }
    }
}

/// A loaded dataset.
#[derive(Debug, Clone)]
pub struct LoadedDataset {
    /// Valid instances after the filter and the selection, sorted by id.
    pub instances: Vec<Instance>,
    /// The canonical name (known datasets), the hub name or the file path.
    pub name: String,
    pub split: String,
    /// The alias's short name (`lite`, …) when the dataset is a known one.
    pub known: Option<&'static str>,
    pub origin: DatasetOrigin,
    /// The SWT filter list belonging to this dataset (known datasets), or the one chosen for
    /// `--filter-swt` on other datasets.
    pub filter: Option<SwtFilter>,
    /// Whether the filter list was applied.
    pub filter_applied: bool,
    /// How `patch`/`test_patch` were read.
    pub layout: PatchLayout,
    /// Rows read from the source.
    pub rows: usize,
    /// Ids present in the dataset but left out, and why.
    pub excluded: BTreeMap<InstanceId, Exclusion>,
    /// Rows that are not valid instances, and instance-level problems found by checks.
    pub problems: Vec<DatasetProblem>,
    /// What a user should know (fallbacks, detections), one sentence each.
    pub notes: Vec<String>,
}

impl LoadedDataset {
    /// The instance with this id, if it is selected.
    pub fn get(&self, id: &str) -> Option<&Instance> {
        self.instances
            .binary_search_by(|i| i.instance_id.as_str().cmp(id))
            .ok()
            .map(|k| &self.instances[k])
    }

    /// Whether the id is a row of the dataset (selected or excluded).
    pub fn has_row(&self, id: &str) -> bool {
        self.get(id).is_some() || self.excluded.contains_key(id)
    }

    /// Runs a per-instance check (e.g. "is the version in the spec table?") and records each
    /// failure as a problem on `field`. Returns the number of failures.
    pub fn check(&mut self, field: &str, check: &dyn Fn(&Instance) -> Option<String>) -> usize {
        let mut found = Vec::new();
        for i in &self.instances {
            if let Some(message) = check(i) {
                found.push(DatasetProblem {
                    location: self.name.clone(),
                    instance: Some(i.instance_id.to_string()),
                    field: Some(field.to_string()),
                    message,
                });
            }
        }
        let n = found.len();
        self.problems.extend(found);
        n
    }

    /// The dataset, or an error listing its problems.
    pub fn into_valid(self) -> Result<LoadedDataset, DatasetError> {
        if self.problems.is_empty() {
            Ok(self)
        } else {
            Err(DatasetError::Invalid {
                name: self.name.clone(),
                problems: self.problems,
            })
        }
    }

    /// A short description: `princeton-nlp/SWE-bench_Lite (test, embedded copy …), 276 instances`.
    pub fn summary(&self) -> String {
        format!(
            "{} ({}, {}): {} instances",
            self.name,
            self.split,
            self.origin,
            self.instances.len()
        )
    }
}

/// Why a dataset could not be loaded at all.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error(
        "dataset {} does not exist (no such file or directory, and not a Hugging Face name such \
         as `owner/name`)",
        path.display()
    )]
    FileNotFound { path: PathBuf },
    #[error(
        "unknown dataset {name:?}: no alias, file or directory has that name; did you mean \
         {suggestion:?}?"
    )]
    NearAlias {
        name: String,
        /// The alias it is closest to ([`near_alias`]).
        suggestion: &'static str,
    },
    #[error("--instance-ids was given, but names no instance (an empty value?)")]
    NoInstanceIds,
    #[error(transparent)]
    Rows(#[from] RowsError),
    #[error("cannot load dataset {name} ({split}) from the Hugging Face hub")]
    Hub {
        name: String,
        split: String,
        #[source]
        source: Box<HubError>,
    },
    #[error(
        "dataset {name} ({split}) is not available offline: it has no embedded copy and is not in \
         the download cache ({detail})"
    )]
    NotOffline {
        name: String,
        split: String,
        detail: String,
    },
    #[error("reading the embedded copy of {name}: {detail}")]
    Embedded { name: String, detail: String },
    #[error(
        "directory {} holds no .parquet, .arrow, .jsonl or .json files for split {split:?} ({}); \
         files of a split are named after it (`{split}.jsonl`, `{split}-00000-of-00001.parquet`, \
         `{split}/…`), or pass one file with --dataset",
        path.display(),
        if found.is_empty() { "it has no data files at all".to_string() } else { format!("it has: {}", found.join(", ")) }
    )]
    EmptyDir {
        path: PathBuf,
        split: String,
        /// Data files present for other splits (relative paths, at most 10).
        found: Vec<String>,
    },
    #[error("dataset {name} ({split}) has no rows")]
    NoRows { name: String, split: String },
    #[error("instance ids not in dataset {name}: {}", describe_missing(missing))]
    UnknownInstanceIds {
        name: String,
        /// Each id with the reason it is absent (`None`: not in the dataset at all).
        missing: Vec<(String, Option<Exclusion>)>,
    },
    #[error("dataset {name} has {} invalid instance(s); first: {}", problems.len(), problems.first().map(ToString::to_string).unwrap_or_default())]
    Invalid {
        name: String,
        problems: Vec<DatasetProblem>,
    },
}

fn describe_missing(missing: &[(String, Option<Exclusion>)]) -> String {
    missing
        .iter()
        .map(|(id, why)| match why {
            Some(e) => format!("{id} ({e})"),
            None => id.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Splits `--instance-ids` values that hold several ids separated by commas or whitespace.
pub fn split_instance_ids<S: AsRef<str>>(values: &[S]) -> Vec<String> {
    values
        .iter()
        .flat_map(|v| {
            v.as_ref()
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Loads, validates, filters and selects. `hub` serves hub names (and known datasets online);
/// `progress` sees hub downloads.
pub fn load_dataset(
    options: &LoadOptions,
    hub: &Hub,
    progress: Option<HubProgress<'_>>,
) -> Result<LoadedDataset, DatasetError> {
    let source = DatasetSource::parse(&options.dataset);
    // A typo of an alias (`liet`) would go to the hub as a bare name and fail there as a network
    // error, or as a missing file; it is refused here, with the alias it is close to.
    let unresolved = match &source {
        DatasetSource::Hub(_) => true,
        DatasetSource::File(path) => !path.exists(),
        DatasetSource::Known(_) | DatasetSource::Dir(_) => false,
    };
    if let Some(suggestion) = near_alias(&options.dataset).filter(|_| unresolved) {
        return Err(DatasetError::NearAlias {
            name: options.dataset.trim().to_string(),
            suggestion,
        });
    }
    let split = options.split.clone();
    let mut notes = Vec::new();
    let (rows, origin) = read_source(&source, options, hub, progress, &mut notes)?;
    if rows.is_empty() {
        return Err(DatasetError::NoRows {
            name: source.display_name(),
            split,
        });
    }
    let mut loaded = build(source, options, rows, origin, notes)?;
    loaded
        .instances
        .sort_by(|a, b| a.instance_id.cmp(&b.instance_id));
    Ok(loaded)
}

fn read_source(
    source: &DatasetSource,
    options: &LoadOptions,
    hub: &Hub,
    progress: Option<HubProgress<'_>>,
    notes: &mut Vec<String>,
) -> Result<(Vec<Row>, DatasetOrigin), DatasetError> {
    let split = options.split.as_str();
    match source {
        DatasetSource::File(path) => {
            if !path.exists() {
                return Err(DatasetError::FileNotFound { path: path.clone() });
            }
            let (rows, mut file_notes) = rows::read_file(path, split)?;
            notes.append(&mut file_notes);
            Ok((rows, DatasetOrigin::File(path.clone())))
        }
        DatasetSource::Dir(dir) => read_dir(dir, split, notes),
        DatasetSource::Hub(name) => {
            let load = hub
                .load_split(name, split, options.offline, progress)
                .map_err(|source| hub_error(name, split, options.offline, source))?;
            if load.stale {
                notes.push(format!(
                    "the Hugging Face hub could not be reached; using the cached download of {name} ({split})"
                ));
            }
            Ok((
                load.rows,
                DatasetOrigin::Hub {
                    files: load.files,
                    from_cache: load.from_cache,
                    stale: load.stale,
                },
            ))
        }
        DatasetSource::Known(k) => {
            let embedded = k.embedded(split);
            if options.offline {
                if let Some(e) = embedded {
                    return read_embedded(e);
                }
                // No embedded copy: a previous download may still be cached.
                let load = hub
                    .load_split(k.canonical, split, true, progress)
                    .map_err(|source| hub_error(k.canonical, split, true, source))?;
                return Ok((
                    load.rows,
                    DatasetOrigin::Hub {
                        files: load.files,
                        from_cache: true,
                        stale: false,
                    },
                ));
            }
            match hub.load_split(k.canonical, split, false, progress) {
                Ok(load) => {
                    if load.stale {
                        notes.push(format!(
                            "the Hugging Face hub could not be reached; using the cached download of {} ({split})",
                            k.canonical
                        ));
                    }
                    Ok((
                        load.rows,
                        DatasetOrigin::Hub {
                            files: load.files,
                            from_cache: load.from_cache,
                            stale: load.stale,
                        },
                    ))
                }
                Err(e) if e.is_unavailable() => match embedded {
                    Some(copy) => {
                        notes.push(format!(
                            "the Hugging Face hub could not be reached ({e}); using the {}",
                            copy.label()
                        ));
                        read_embedded(copy)
                    }
                    None => Err(hub_error(k.canonical, split, false, e)),
                },
                Err(e) => Err(hub_error(k.canonical, split, false, e)),
            }
        }
    }
}

fn hub_error(name: &str, split: &str, offline: bool, source: HubError) -> DatasetError {
    match source {
        HubError::Http(crate::http::HttpError::NotCached { url }) if offline => {
            DatasetError::NotOffline {
                name: name.to_string(),
                split: split.to_string(),
                detail: format!("{url} was never downloaded"),
            }
        }
        source => DatasetError::Hub {
            name: name.to_string(),
            split: split.to_string(),
            source: Box::new(source),
        },
    }
}

fn read_embedded(
    copy: &'static EmbeddedDataset,
) -> Result<(Vec<Row>, DatasetOrigin), DatasetError> {
    let err = |detail: String| DatasetError::Embedded {
        name: copy.name.to_string(),
        detail,
    };
    let text = copy.text().map_err(|e| err(e.to_string()))?;
    let rows = rows::jsonl_rows(&copy.label(), &text).map_err(|e| err(e.to_string()))?;
    Ok((rows, DatasetOrigin::Embedded { file: copy.file }))
}

fn read_dir(
    dir: &Path,
    split: &str,
    notes: &mut Vec<String>,
) -> Result<(Vec<Row>, DatasetOrigin), DatasetError> {
    let mut files = Vec::new();
    collect_files(dir, dir, &mut files).map_err(|source| RowsError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut others: Vec<String> = files
        .iter()
        .filter(|(rel, _)| !crate::hub::file_is_split(rel, split))
        .map(|(rel, _)| rel.clone())
        .collect();
    others.sort();
    others.truncate(10);
    let mut chosen: Vec<PathBuf> = files
        .into_iter()
        .filter(|(rel, _)| crate::hub::file_is_split(rel, split))
        .map(|(_, p)| p)
        .collect();
    // A split stored in several formats is read once, from the best one.
    if let Some(best) = chosen.iter().filter_map(|p| FileFormat::from_path(p)).min() {
        chosen.retain(|p| FileFormat::from_path(p) == Some(best));
    }
    chosen.sort();
    if chosen.is_empty() {
        return Err(DatasetError::EmptyDir {
            path: dir.to_path_buf(),
            split: split.to_string(),
            found: others,
        });
    }
    let mut rows = Vec::new();
    for f in &chosen {
        let (mut r, mut n) = rows::read_file(f, split)?;
        rows.append(&mut r);
        notes.append(&mut n);
    }
    Ok((rows, DatasetOrigin::Dir(dir.to_path_buf(), chosen)))
}

fn collect_files(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_files(root, &path, out)?;
        } else if FileFormat::from_path(&path).is_some() {
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .to_string_lossy()
                .replace('\\', "/");
            out.push((rel, path));
        }
    }
    Ok(())
}

/// Decides how `patch`/`test_patch` are laid out, for the whole dataset (rows are never mixed).
fn detect_layout(rows: &[Row], is_swt: bool) -> (PatchLayout, Option<String>) {
    let pairs: Vec<(&str, &str)> = rows
        .iter()
        .filter_map(|r| {
            let p = r.value.get("patch")?.as_str()?;
            let t = r.value.get("test_patch")?.as_str()?;
            Some((p, t))
        })
        .collect();
    let unwrapped: Vec<(String, &str)> = pairs
        .iter()
        .filter_map(|(p, t)| unwrap_patch_tags(p).map(|u| (u, *t)))
        .collect();
    let total = pairs.len();
    let wrapped = unwrapped.len();
    if wrapped == 0 || wrapped * 2 <= total {
        if is_swt && total > 0 {
            return (
                PatchLayout::Swebench,
                Some(format!(
                    "--is-swt was given, but only {wrapped} of {total} rows have a `patch` wrapped \
                     in <patch> tags; reading `patch` as the gold code fix and `test_patch` as the \
                     gold tests, unchanged"
                )),
            );
        }
        return (PatchLayout::Swebench, None);
    }
    let swapped = unwrapped
        .iter()
        .filter(|(p, t)| looks_swapped(p, t))
        .count();
    if swapped * 2 > wrapped {
        return (
            PatchLayout::SwtSwapped,
            Some(format!(
                "detected the published SWT-Bench layout ({swapped} of {wrapped} rows): `patch` \
                 holds the gold tests wrapped in <patch> tags and `test_patch` the gold code fix; \
                 reading them that way round"
            )),
        );
    }
    let note = if is_swt {
        None
    } else {
        Some(format!(
            "`patch` is wrapped in <patch> tags in {wrapped} of {total} rows; reading it as a \
             text/RAG dataset, as --is-swt does"
        ))
    };
    (PatchLayout::SweText, note)
}

/// Picks the filter list for a dataset that is not a known alias: by name, then by ids.
fn infer_filter(name: &str, ids: &BTreeSet<String>) -> (SwtFilter, String) {
    // Whole words only: `SWE-bench_Lite_bm25` mentions Lite, `satellite.jsonl` does not.
    let lower = name.to_ascii_lowercase();
    let words: Vec<&str> = lower.split(|c: char| !c.is_ascii_alphanumeric()).collect();
    if words.contains(&"verified") {
        return (
            SwtFilter::Verified,
            "its name mentions Verified".to_string(),
        );
    }
    if words.contains(&"lite") {
        return (SwtFilter::Lite, "its name mentions Lite".to_string());
    }
    for (filter, copy) in [
        (
            SwtFilter::Lite,
            embedded::find("princeton-nlp/SWE-bench_Lite", "test"),
        ),
        (
            SwtFilter::Verified,
            embedded::find("princeton-nlp/SWE-bench_Verified", "test"),
        ),
    ] {
        let Some(copy) = copy else { continue };
        let Ok(text) = copy.text() else { continue };
        let known: BTreeSet<String> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v.get("instance_id")?.as_str().map(str::to_string))
            .collect();
        if ids.iter().all(|id| known.contains(id)) {
            return (
                filter,
                format!("all its instances belong to SWE-bench {}", filter.name()),
            );
        }
    }
    (
        SwtFilter::Full,
        "its instances are not all in SWE-bench Lite or Verified".to_string(),
    )
}

fn build(
    source: DatasetSource,
    options: &LoadOptions,
    rows: Vec<Row>,
    origin: DatasetOrigin,
    mut notes: Vec<String>,
) -> Result<LoadedDataset, DatasetError> {
    let (layout, note) = detect_layout(&rows, options.is_swt);
    notes.extend(note);
    let name = source.display_name();
    let row_count = rows.len();

    let (mut instances, mut problems, first_seen) = read_instances(&rows, layout);
    let filter = choose_filter(&source, options, &first_seen, &name, &mut notes);
    let mut excluded = BTreeMap::new();
    if options.filter_swt {
        if let Some(f) = filter {
            let drop = f.id_set();
            instances.retain(|i| {
                if drop.contains(i.instance_id.as_str()) {
                    excluded.insert(i.instance_id.clone(), Exclusion::SwtFilter(f));
                    false
                } else {
                    true
                }
            });
        }
    }

    select_instances(options, &name, &mut instances, &mut excluded, &mut problems)?;

    Ok(LoadedDataset {
        instances,
        known: match &source {
            DatasetSource::Known(k) => Some(k.key),
            _ => None,
        },
        name,
        split: options.split.clone(),
        origin,
        filter,
        filter_applied: options.filter_swt && filter.is_some(),
        layout,
        rows: row_count,
        excluded,
        problems,
        notes,
    })
}

/// Reads the instances of `rows` in `layout`: the valid ones, in order and the first of each id,
/// the problems of the others, and where each id was first seen.
fn read_instances(
    rows: &[Row],
    layout: PatchLayout,
) -> (Vec<Instance>, Vec<DatasetProblem>, BTreeMap<String, String>) {
    let mut problems = Vec::new();
    let mut first_seen: BTreeMap<String, String> = BTreeMap::new();
    let mut instances = Vec::with_capacity(rows.len());
    for row in rows {
        let location = format!("{}: {}", row.source, row.location);
        let id = row
            .value
            .get("instance_id")
            .and_then(|v| v.as_str())
            .map(str::to_string);
        match Instance::from_row(&row.value, layout) {
            Ok(inst) => {
                let key = inst.instance_id.to_string();
                let stray_tags = layout == PatchLayout::Swebench
                    && row
                        .value
                        .get("patch")
                        .and_then(|v| v.as_str())
                        .is_some_and(|p| unwrap_patch_tags(p).is_some());
                if stray_tags {
                    // Read as is, the tags would end up in the gold fix given to `git apply`.
                    problems.push(DatasetProblem {
                        location,
                        instance: Some(key),
                        field: Some("patch".to_string()),
                        message: "`patch` is wrapped in <patch>…</patch> tags, unlike most rows \
                                  of this dataset; remove the tags, or wrap every row's `patch`"
                            .to_string(),
                    });
                    continue;
                }
                if let Some(prev) = first_seen.get(&key) {
                    problems.push(DatasetProblem {
                        location,
                        instance: Some(key),
                        field: Some("instance_id".to_string()),
                        message: format!(
                            "duplicate instance id (first at {prev}); the first row is kept"
                        ),
                    });
                    continue;
                }
                first_seen.insert(key, location);
                instances.push(inst);
            }
            Err(e) => problems.push(DatasetProblem {
                location,
                instance: id,
                field: instance_error_field(&e),
                message: e.to_string(),
            }),
        }
    }
    (instances, problems, first_seen)
}

/// The filter list that belongs to the dataset: the one asked for, the known dataset's, or with
/// `--filter-swt` the one inferred from its instance ids (`first_seen`'s keys; saying why in
/// `notes`).
fn choose_filter(
    source: &DatasetSource,
    options: &LoadOptions,
    first_seen: &BTreeMap<String, String>,
    name: &str,
    notes: &mut Vec<String>,
) -> Option<SwtFilter> {
    // Which filter list belongs to this dataset.
    match (source, options.filter_list) {
        (_, Some(f)) => Some(f),
        (DatasetSource::Known(k), None) => Some(k.filter),
        (_, None) if options.filter_swt => {
            let ids: BTreeSet<String> = first_seen.keys().cloned().collect();
            let label = match source {
                DatasetSource::File(p) | DatasetSource::Dir(p) => p
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                _ => name.to_string(),
            };
            let (f, why) = infer_filter(&label, &ids);
            notes.push(format!(
                "--filter-swt: using the {f} filter list because {why}; choose another with \
                 --swt-filter-list"
            ));
            Some(f)
        }
        _ => None,
    }
}

/// Keeps only the instances (and problems) of `--instance-ids`, recording the others in
/// `excluded`; an error when the option names no id, or ids that are not in the dataset.
fn select_instances(
    options: &LoadOptions,
    name: &str,
    instances: &mut Vec<Instance>,
    excluded: &mut BTreeMap<InstanceId, Exclusion>,
    problems: &mut Vec<DatasetProblem>,
) -> Result<(), DatasetError> {
    let wanted = split_instance_ids(&options.instance_ids);
    if wanted.is_empty() && !options.instance_ids.is_empty() {
        // `--instance-ids "$IDS"` with an empty variable must not silently mean "all instances".
        return Err(DatasetError::NoInstanceIds);
    }
    if !wanted.is_empty() {
        let wanted_set: BTreeSet<&str> = wanted.iter().map(String::as_str).collect();
        let present: BTreeSet<&str> = instances.iter().map(|i| i.instance_id.as_str()).collect();
        let missing: Vec<(String, Option<Exclusion>)> = wanted_set
            .iter()
            .filter(|id| !present.contains(*id))
            .map(|id| (id.to_string(), excluded.get(*id).copied()))
            .collect();
        // An id whose row is invalid is reported as a problem, not as unknown.
        let missing: Vec<_> = missing
            .into_iter()
            .filter(|(id, _)| {
                !problems
                    .iter()
                    .any(|p: &DatasetProblem| p.instance.as_deref() == Some(id.as_str()))
            })
            .collect();
        if !missing.is_empty() {
            return Err(DatasetError::UnknownInstanceIds {
                name: name.to_string(),
                missing,
            });
        }
        instances.retain(|i| {
            if wanted_set.contains(i.instance_id.as_str()) {
                true
            } else {
                excluded.insert(i.instance_id.clone(), Exclusion::NotSelected);
                false
            }
        });
        problems.retain(|p| {
            p.instance
                .as_deref()
                .is_none_or(|id| wanted_set.contains(id))
        });
    }
    Ok(())
}

fn instance_error_field(e: &swtbench_core::InstanceError) -> Option<String> {
    use swtbench_core::InstanceError as E;
    match e {
        E::NotAnObject => None,
        E::BadId { .. } => Some("instance_id".to_string()),
        E::MissingField { field }
        | E::WrongType { field, .. }
        | E::BadTestList { field, .. }
        | E::NotWrapped { field } => Some(field.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_are_case_insensitive_and_complete() {
        for (name, canonical) in [
            ("lite", "princeton-nlp/SWE-bench_Lite"),
            ("SWE-bench_Lite", "princeton-nlp/SWE-bench_Lite"),
            (
                "princeton-nlp/SWE-bench_Lite",
                "princeton-nlp/SWE-bench_Lite",
            ),
            ("swe_bench_lite", "princeton-nlp/SWE-bench_Lite"),
            ("Verified", "princeton-nlp/SWE-bench_Verified"),
            ("swebench-verified", "princeton-nlp/SWE-bench_Verified"),
            (
                "princeton-nlp/SWE-bench_Verified",
                "princeton-nlp/SWE-bench_Verified",
            ),
            ("full", "princeton-nlp/SWE-bench"),
            ("SWE-bench", "princeton-nlp/SWE-bench"),
            ("princeton-nlp/SWE-bench", "princeton-nlp/SWE-bench"),
        ] {
            assert_eq!(
                resolve_alias(name).map(|k| k.canonical),
                Some(canonical),
                "{name}"
            );
        }
        assert!(resolve_alias("nmuendler/SWT-bench_Lite_bm25_27k_zsb").is_none());
        assert!(matches!(
            DatasetSource::parse("x/preds.JSONL"),
            DatasetSource::File(_)
        ));
        assert!(matches!(
            DatasetSource::parse("org/name"),
            DatasetSource::Hub(_)
        ));
        assert_eq!(resolve_alias("lite").unwrap().swt_test_rows(), 276);
        assert_eq!(resolve_alias("verified").unwrap().swt_test_rows(), 433);
        assert_eq!(resolve_alias("full").unwrap().swt_test_rows(), 1983);
    }

    #[test]
    fn hub_names_and_local_paths() {
        for name in [
            "acme/bench",
            "SWE-bench/SWE-smith",
            "nmuendler/SWT-bench_Lite_bm25_27k_zsb",
            "squad",
            "a.b/c_d-1",
        ] {
            assert!(is_hub_name(name), "{name}");
            assert!(
                matches!(DatasetSource::parse(name), DatasetSource::Hub(_)),
                "{name}"
            );
        }
        for name in [
            "./data",
            "../x/y",
            "/abs/dir",
            "~/d",
            "a/b/c",
            "a//b",
            "",
            "x/.hidden",
            "a--b/c",
            "a/b..c",
            "my data",
        ] {
            assert!(!is_hub_name(name), "{name}");
            assert!(
                matches!(DatasetSource::parse(name), DatasetSource::File(_)),
                "{name}"
            );
        }
    }

    #[test]
    fn edit_distance_counts_edits_and_adjacent_swaps() {
        for (a, b, want) in [
            ("", "", 0),
            ("lite", "lite", 0),
            ("", "lite", 4),
            ("lite", "", 4),
            ("liet", "lite", 1),
            ("ilte", "lite", 1),
            ("lit", "lite", 1),
            ("litee", "lite", 1),
            ("lxte", "lite", 1),
            ("list", "lite", 2),
            ("verifed", "verified", 1),
            ("vreified", "verified", 1),
            ("kitten", "sitting", 3),
            // Optimal string alignment: a swapped pair is not edited again.
            ("ca", "abc", 3),
            ("lïte", "lite", 1),
        ] {
            assert_eq!(edit_distance(a, b), want, "{a:?} → {b:?}");
            assert_eq!(edit_distance(b, a), want, "{b:?} → {a:?}");
        }
    }

    #[test]
    fn near_alias_catches_typos_of_aliases_only() {
        for (name, want) in [
            ("liet", "lite"),
            ("LIET", "lite"),
            (" lite2 ", "lite"),
            ("ful", "full"),
            ("verifed", "verified"),
            ("verfiied", "verified"),
            ("swebench_lite", "swebench-lite"),
            ("swe-bench-verifed", "swe-bench-verified"),
        ] {
            assert_eq!(near_alias(name), Some(want), "{name}");
        }
        for name in [
            // Aliases themselves.
            "lite",
            "Verified",
            "SWE-bench_Lite",
            // Too far from any alias.
            "list",
            "squad",
            "lightning",
            "my-bench",
            "",
            // A `/` is a hub name (`owner/name`) or a path: not ours to refuse.
            "acme/lite",
            "princeton-nlp/swe-bench_lit",
            "./liet",
            "data/lite.jsonl",
            ".\\liet",
        ] {
            assert_eq!(near_alias(name), None, "{name}");
        }
    }

    #[test]
    fn a_typo_of_an_alias_is_refused_before_any_hub_request() {
        let dir = tempfile::tempdir().unwrap();
        // An endpoint that cannot be reached: a request would fail as a network error.
        let hub = Hub::new(
            crate::hub::HubConfig {
                endpoint: "http://127.0.0.1:9".to_string(),
                token: None,
                cache_dir: dir.path().to_path_buf(),
            },
            crate::http::HttpConfig {
                retries: 0,
                ..crate::http::HttpConfig::default()
            },
        )
        .unwrap();
        let err = load_dataset(&LoadOptions::new("liet"), &hub, None).unwrap_err();
        assert!(
            matches!(
                err,
                DatasetError::NearAlias {
                    suggestion: "lite",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("did you mean \"lite\"?"), "{err}");
    }

    #[test]
    fn filter_list_from_the_name_uses_whole_words() {
        let none = BTreeSet::from(["nobody__nothing-1".to_string()]);
        for (name, want) in [
            ("nmuendler/SWT-bench_Lite_bm25_27k_zsb", SwtFilter::Lite),
            ("swebench_verified_test.jsonl", SwtFilter::Verified),
            ("SWE-bench-Verified.parquet", SwtFilter::Verified),
            ("satellite_tasks.jsonl", SwtFilter::Full),
            ("unverified.jsonl", SwtFilter::Full),
        ] {
            assert_eq!(infer_filter(name, &none).0, want, "{name}");
        }
        // By ids when the name says nothing: Lite ids give the Lite list.
        let lite = BTreeSet::from(["django__django-11099".to_string()]);
        assert_eq!(infer_filter("mine.jsonl", &lite).0, SwtFilter::Lite);
    }

    #[test]
    fn instance_id_lists_are_split() {
        assert_eq!(
            split_instance_ids(&["a,b", "c  d", ""]),
            vec!["a", "b", "c", "d"]
        );
    }
}

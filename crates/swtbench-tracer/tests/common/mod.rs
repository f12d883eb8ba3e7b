//! Shared helpers for the tracer's integration tests: host Pythons, sandboxes, running commands
//! with a deadline, and reading cover files.
//!
//! The tests run the embedded tracer (`TRACER_PY`) with every CPython found under
//! `$(pyenv root)/versions`; a version that is not installed is skipped with a printed note. On
//! Python 3.5–3.11 the tracer counts with its native line counter, built for each interpreter by
//! the build script the environment images run (`native_module`), unless a test says otherwise.
#![allow(dead_code, clippy::print_stdout, clippy::print_stderr)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use swtbench_tracer::{
    PythonVersion, MIN_PYTHON, NATIVE_BUILD_SH, NATIVE_BUILD_SH_NAME, NATIVE_C, NATIVE_C_NAME,
    TRACER_PY,
};

/// `{file: {line: hits}}`, duplicate entries for one file summed as the grading side does.
pub type Hits = BTreeMap<String, BTreeMap<u32, u64>>;

#[derive(Debug, Clone)]
pub struct HostPython {
    pub version: PythonVersion,
    /// Directory name under `versions/`, e.g. `3.11.7`.
    pub name: String,
    pub exe: PathBuf,
}

pub fn pyenv_root() -> Option<PathBuf> {
    if let Ok(out) = Command::new("pyenv").arg("root").output() {
        if out.status.success() {
            let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !text.is_empty() && Path::new(&text).is_dir() {
                return Some(PathBuf::from(text));
            }
        }
    }
    if let Some(root) = std::env::var_os("PYENV_ROOT") {
        let root = PathBuf::from(root);
        if root.is_dir() {
            return Some(root);
        }
    }
    let home = PathBuf::from(std::env::var_os("HOME")?).join(".pyenv");
    home.is_dir().then_some(home)
}

/// Every CPython under the pyenv root, oldest first (including unsupported ones).
pub fn all_host_pythons() -> Vec<HostPython> {
    let Some(root) = pyenv_root() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(root.join("versions")) else {
        return Vec::new();
    };
    let mut found: Vec<HostPython> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().to_string();
            let version = PythonVersion::parse(&name)?;
            let exe = entry.path().join("bin").join("python");
            exe.exists().then_some(HostPython { version, name, exe })
        })
        .collect();
    found.sort_by(|a, b| a.version.cmp(&b.version).then(a.name.cmp(&b.name)));
    found
}

/// The Pythons the tracer supports.
pub fn host_pythons() -> Vec<HostPython> {
    all_host_pythons()
        .into_iter()
        .filter(|p| p.version >= MIN_PYTHON)
        .collect()
}

/// The host Python `3.<minor>`, or None after printing a skip note.
pub fn python(minor: u32) -> Option<HostPython> {
    let found = host_pythons()
        .into_iter()
        .rev()
        .find(|p| p.version == PythonVersion { major: 3, minor });
    if found.is_none() {
        println!(
            "SKIPPED: no Python 3.{minor} under {}/versions",
            pyenv_root()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "<no pyenv root>".into())
        );
    }
    found
}

/// Generates one `#[test]` per Python 3.6–3.13 calling `$scenario(&HostPython)`.
#[allow(unused_macros)]
macro_rules! per_python {
    ($scenario:ident) => {
        mod $scenario {
            fn run(minor: u32) {
                if let Some(py) = $crate::common::python(minor) {
                    super::$scenario(&py);
                }
            }
            #[test]
            fn py3_6() {
                run(6)
            }
            #[test]
            fn py3_7() {
                run(7)
            }
            #[test]
            fn py3_8() {
                run(8)
            }
            #[test]
            fn py3_9() {
                run(9)
            }
            #[test]
            fn py3_10() {
                run(10)
            }
            #[test]
            fn py3_11() {
                run(11)
            }
            #[test]
            fn py3_12() {
                run(12)
            }
            #[test]
            fn py3_13() {
                run(13)
            }
        }
    };
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("fixtures")
}

/// A temporary directory holding `trace.py` (the embedded text) and copies of fixture trees.
pub struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("swtbench-tracer-")
            .tempdir()
            .expect("create a temporary directory");
        std::fs::write(dir.path().join("trace.py"), TRACER_PY).expect("write trace.py");
        Sandbox { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn tracer(&self) -> PathBuf {
        self.path().join("trace.py")
    }

    /// Copies `tests/fixtures/<name>` (a file or a tree) into the sandbox; returns its new path.
    pub fn copy_fixture(&self, name: &str) -> PathBuf {
        let from = fixtures().join(name);
        let to = self.path().join(name);
        copy_tree(&from, &to);
        to
    }

    pub fn cover(&self) -> PathBuf {
        self.path().join("coverage.cover")
    }

    /// Puts the native line counter built for `py` next to `trace.py`, where the tracer looks
    /// first; false when there is none for it (3.12+, or it cannot be built here).
    pub fn install_native(&self, py: &Path) -> bool {
        let Some(module) = native_module(py) else {
            return false;
        };
        let name = module.file_name().expect("module file name");
        let target = self.path().join(name);
        if !target.exists() {
            std::fs::copy(&module, &target)
                .unwrap_or_else(|e| panic!("copy {}: {e}", module.display()));
        }
        true
    }
}

/// True when a component a test needs (a C compiler for the native counter) must be there: CI
/// sets SWTBENCH_REQUIRE_ENGINE=1, and the test then fails instead of skipping.
pub fn components_required() -> bool {
    std::env::var("SWTBENCH_REQUIRE_ENGINE").as_deref() == Ok("1")
}

/// Whether the tracer has a native counter for this Python version (3.5–3.11).
pub fn has_native(version: PythonVersion) -> bool {
    version >= MIN_PYTHON && version < swtbench_tracer::MONITORING_PYTHON
}

/// The native line counter for the interpreter `py`, built by `build-native.sh` (the script
/// environment images run) and kept under the target directory per interpreter and source
/// digest. None for versions without one, and, after a printed note, when this machine cannot
/// build it (no compiler): then the tests count with the Python trace functions, unless
/// `components_required()`, which makes it a failure.
pub fn native_module(py: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(py).unwrap_or_else(|e| panic!("{}: {e}", py.display()));
    // versions/<name>/bin/pythonX.Y; a virtualenv's interpreter links there.
    let install = real
        .parent()
        .and_then(Path::parent)
        .expect("interpreter in a bin directory");
    let version = PythonVersion::parse(&install.file_name()?.to_string_lossy())?;
    if !has_native(version) {
        return None;
    }
    let digest = swtbench_tracer::native_digest();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("swtbench-tracer-native")
        .join(format!(
            "{}-{}",
            install.file_name()?.to_string_lossy(),
            &digest[..16]
        ));
    if let Some(found) = module_in(&dir) {
        return Some(found);
    }
    // Built beside the final directory and renamed into place: tests run in parallel.
    let parent = dir.parent().expect("cache parent");
    std::fs::create_dir_all(parent).expect("create the native module cache");
    let work = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(parent)
        .expect("temporary build directory");
    std::fs::write(work.path().join(NATIVE_C_NAME), NATIVE_C).expect("write the C source");
    std::fs::write(work.path().join(NATIVE_BUILD_SH_NAME), NATIVE_BUILD_SH)
        .expect("write the build script");
    let out = Command::new("sh")
        .arg(work.path().join(NATIVE_BUILD_SH_NAME))
        .arg(&real)
        .output()
        .expect("run sh build-native.sh");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "build-native.sh failed: {said}");
    if module_in(work.path()).is_none() {
        assert!(
            !components_required(),
            "no native line counter for {}: {said}",
            real.display()
        );
        println!(
            "SKIPPED: native line counter for {}: {said}",
            real.display()
        );
        return None;
    }
    let built = work.keep();
    if std::fs::rename(&built, &dir).is_err() {
        // Another test put its build there first.
        let _ = std::fs::remove_dir_all(&built);
    }
    module_in(&dir)
}

fn module_in(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .find_map(|entry| {
            let name = entry.file_name().to_string_lossy().to_string();
            (name.starts_with("_swtbench_lines") && name.ends_with(".so")).then(|| entry.path())
        })
}

fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).expect("create fixture directory");
        for entry in std::fs::read_dir(from).expect("read fixture directory") {
            let entry = entry.expect("fixture entry");
            let name = entry.file_name();
            if name == "__pycache__" {
                continue;
            }
            copy_tree(&entry.path(), &to.join(name));
        }
    } else {
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).expect("create fixture parent");
        }
        std::fs::copy(from, to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
    }
}

#[derive(Debug)]
pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Outcome {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn describe(&self) -> String {
        format!(
            "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// Runs `cmd` with piped output; kills it and panics when it outlives `deadline`.
pub fn run(mut cmd: Command, deadline: Duration) -> Outcome {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONHASHSEED", "0");
    // The host's own settings must not leak in; a test that wants them sets them itself.
    for name in [
        "PYTHONPATH",
        swtbench_tracer::BACKEND_ENV,
        swtbench_tracer::COMPAT_ENV,
        swtbench_tracer::NATIVE_ENV,
    ] {
        if !cmd.get_envs().any(|(key, _)| key == name) {
            cmd.env_remove(name);
        }
    }
    let described = format!("{cmd:?}");
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("start {described}: {e}"));
    let out_reader = read_in_background(child.stdout.take().expect("stdout pipe"));
    let err_reader = read_in_background(child.stderr.take().expect("stderr pipe"));
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for child") {
            break status;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{described} did not finish within {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    // A process the program left behind may still hold the pipes open: wait a little, not forever.
    let grace = Duration::from_secs(10);
    let stdout = out_reader.recv_timeout(grace).unwrap_or_else(|_| {
        panic!("{described}: stdout still open {grace:?} after exit (a leftover child?)")
    });
    let stderr = err_reader.recv_timeout(grace).unwrap_or_else(|_| {
        panic!("{described}: stderr still open {grace:?} after exit (a leftover child?)")
    });
    Outcome {
        status,
        stdout,
        stderr,
        elapsed,
    }
}

fn read_in_background(mut pipe: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        let _ = send.send(String::from_utf8_lossy(&bytes).to_string());
    });
    receive
}

/// `python trace.py --count -C <cover> --include-pattern <pattern> <program...>` in `cwd`, with
/// the native line counter beside `trace.py` where there is one for `py`.
pub fn tracer_command(
    py: &Path,
    sandbox: &Sandbox,
    cover: &Path,
    pattern: &str,
    program: &[&str],
    cwd: &Path,
) -> Command {
    sandbox.install_native(py);
    tracer_command_without_native(py, sandbox, cover, pattern, program, cwd)
}

/// [`tracer_command`] without putting the native counter beside `trace.py`.
pub fn tracer_command_without_native(
    py: &Path,
    sandbox: &Sandbox,
    cover: &Path,
    pattern: &str,
    program: &[&str],
    cwd: &Path,
) -> Command {
    let mut cmd = Command::new(py);
    cmd.arg(sandbox.tracer())
        .args(["--count", "-C"])
        .arg(cover)
        .args(["--include-pattern", pattern])
        .args(program)
        .current_dir(cwd);
    cmd
}

/// Switches a tracer command to the fixed process behaviour (`SWTBENCH_TRACE_COMPAT=0`):
/// traced processes behave as they would untraced.
pub fn fixed(mut cmd: Command) -> Command {
    cmd.env(swtbench_tracer::COMPAT_ENV, "0");
    cmd
}

/// Python's `repr` of an ASCII string (what `print` of a list shows for each item).
pub fn py_repr(text: &str) -> String {
    assert!(
        text.chars().all(|c| c.is_ascii() && !c.is_ascii_control()),
        "py_repr handles printable ASCII only: {text:?}"
    );
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::from(quote);
    for c in text.chars() {
        if c == '\\' || c == quote {
            out.push('\\');
        }
        out.push(c);
    }
    out.push(quote);
    out
}

/// The line the tracer prints first in its default mode, as the original did: its own options
/// (those `tracer_command` passes) as a Python list.
pub fn options_line(cover: &Path, pattern: &str) -> String {
    let words = [
        "--count",
        "-C",
        cover.to_str().expect("UTF-8 cover path"),
        "--include-pattern",
        pattern,
    ];
    let items: Vec<String> = words.iter().map(|w| py_repr(w)).collect();
    format!("[{}]", items.join(", "))
}

/// The program's own stdout in the default mode: checks that the first line is the tracer's
/// option list and returns what follows it.
pub fn program_stdout<'a>(outcome: &'a Outcome, cover: &Path, pattern: &str) -> &'a str {
    let want = options_line(cover, pattern);
    let (first, rest) = outcome
        .stdout
        .split_once('\n')
        .unwrap_or((outcome.stdout.as_str(), ""));
    assert_eq!(
        first,
        want,
        "the first stdout line is the tracer's option list\n{}",
        outcome.describe()
    );
    rest
}

/// The plain `sys.settrace` counter from the fixtures, with the same pattern and program.
pub fn reference_command(
    py: &Path,
    out: &Path,
    pattern: &str,
    program: &[&str],
    cwd: &Path,
) -> Command {
    let mut cmd = Command::new(py);
    cmd.arg(fixtures().join("ref_counter.py"))
        .arg("-C")
        .arg(out)
        .args(["--include-pattern", pattern])
        .args(program)
        .current_dir(cwd);
    cmd
}

/// Reads a cover file, checking the line format the grading side relies on.
pub fn read_cover(path: &Path) -> Hits {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read cover file {}: {e}", path.display()));
    parse_cover(&text)
}

pub fn parse_cover(text: &str) -> Hits {
    let mut hits = Hits::new();
    for (index, line) in text.lines().enumerate() {
        assert!(
            line.starts_with("{\""),
            "cover line {} does not start with {{\": {line}",
            index + 1
        );
        let value: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("cover line {} is not JSON ({e}): {line}", index + 1));
        let object = value.as_object().expect("cover line is an object");
        assert_eq!(object.len(), 1, "one file per cover line: {line}");
        for (file, lines) in object {
            let entry = hits.entry(file.clone()).or_default();
            for (number, count) in lines.as_object().expect("line map is an object") {
                let number: u32 = number.parse().expect("line numbers are integers");
                *entry.entry(number).or_default() += count.as_u64().expect("hits are integers");
            }
        }
    }
    hits
}

/// Reads the reference counter's output.
pub fn read_reference(path: &Path) -> Hits {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read reference output {}: {e}", path.display()));
    let value: serde_json::Value = serde_json::from_str(&text).expect("reference output is JSON");
    let mut hits = Hits::new();
    for (file, lines) in value.as_object().expect("reference output is an object") {
        let entry = hits.entry(file.clone()).or_default();
        for (number, count) in lines.as_object().expect("line map") {
            entry.insert(
                number.parse().expect("line number"),
                count.as_u64().expect("hits"),
            );
        }
    }
    hits
}

/// Asserts that the tracer's hits equal the reference counter's on every listed line, that every
/// line the reference saw run in a traced file is either listed with the same count or not an
/// executable line, and that both saw the same files.
pub fn assert_same_hits(ours: &Hits, reference: &Hits, context: &str) {
    let our_files: BTreeSet<&String> = ours.keys().collect();
    let reference_files: BTreeSet<&String> = reference
        .keys()
        .filter(|f| !(f.starts_with('<') && f.ends_with('>')))
        .collect();
    assert_eq!(our_files, reference_files, "{context}: traced files differ");
    for (file, lines) in ours {
        let expected = &reference[file];
        for (line, hits) in lines {
            let want = expected.get(line).copied().unwrap_or(0);
            assert_eq!(
                *hits, want,
                "{context}: {file}:{line} has {hits} hits, the settrace counter saw {want}"
            );
        }
        let hit_lines = lines.iter().filter(|(_, h)| **h > 0).count();
        assert!(
            hit_lines > 0,
            "{context}: {file} is listed without any hit line"
        );
    }
}

/// Markers written in fixture comments: `+exec` (listed), `-exec` (not listed), `hits=N`.
#[derive(Debug, Default)]
pub struct Markers {
    pub listed: BTreeSet<u32>,
    pub unlisted: BTreeSet<u32>,
    pub hits: BTreeMap<u32, u64>,
}

pub fn markers(source: &Path) -> Markers {
    let text = std::fs::read_to_string(source).expect("read fixture source");
    let mut markers = Markers::default();
    for (index, line) in text.lines().enumerate() {
        let number = index as u32 + 1;
        if line.contains("+exec") {
            markers.listed.insert(number);
        }
        if line.contains("-exec") {
            markers.unlisted.insert(number);
        }
        if let Some(pos) = line.find("hits=") {
            let digits: String = line[pos + 5..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            markers
                .hits
                .insert(number, digits.parse().expect("hits=N marker"));
        }
    }
    markers
}

pub fn assert_markers(hits: &Hits, source: &Path, context: &str) {
    let key = source.to_string_lossy().to_string();
    let lines = hits.get(&key).unwrap_or_else(|| {
        panic!(
            "{context}: no cover entry for {key}; have {:?}",
            hits.keys()
        )
    });
    let markers = markers(source);
    assert!(
        !markers.listed.is_empty(),
        "{context}: {key} has no markers"
    );
    for line in &markers.listed {
        assert!(
            lines.contains_key(line),
            "{context}: {key}:{line} is marked +exec but not listed"
        );
    }
    for line in &markers.unlisted {
        assert!(
            !lines.contains_key(line),
            "{context}: {key}:{line} is marked -exec but listed with {:?} hits",
            lines.get(line)
        );
    }
    for (line, want) in &markers.hits {
        assert_eq!(
            lines.get(line),
            Some(want),
            "{context}: {key}:{line} hit count"
        );
    }
}

/// Line number (1-based) of the first line of `source` containing `needle`.
pub fn line_of(source: &Path, needle: &str) -> u32 {
    let text = std::fs::read_to_string(source).expect("read source");
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not in {}", source.display())) as u32
        + 1
}

pub fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.^$|?*+()[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Include pattern matching every file under `dir`.
pub fn everything_under(dir: &Path) -> String {
    format!("{}/.*", regex_escape(&dir.to_string_lossy()))
}

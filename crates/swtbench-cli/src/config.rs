//! The configuration file: the flags people repeat, written once. `swtbench.toml` (or the table
//! `[tool.swtbench]` of a `pyproject.toml`) holds flag values by their long names, at the top
//! for every command that has the flag, or in a table named after a command for that command only:
//!
//! ```toml
//! no-network = true              # every command with --no-network
//! repo-mirror = "mirrors"        # relative paths: relative to this file's directory
//!
//! [run]
//! max-workers = 4
//! timeout = "20m"
//! instance-ids = ["a-1", "b-2"]  # a flag given several times
//!
//! [images.build]                 # a subcommand's subcommand
//! max-workers = 2
//! ```
//!
//! A value from the file becomes the flag's default, so the precedence is the usual one: the
//! command line, then the flag's environment variable, then the file, then the built-in default.
//! Unknown keys, values of the wrong kind and values the flag rejects are errors that name the
//! file and the key (with the closest flag name when there is one): a typo never goes unnoticed.
//!
//! This module only turns a parsed table into defaults on a `clap::Command`; finding and reading
//! the file is the binary's.

use std::path::{Path, PathBuf};

use clap::builder::OsStr as ClapOsStr;
use clap::error::{ContextKind, ContextValue};
use clap::{Arg, ArgAction, Command};

/// The file looked for in the current directory.
pub const FILE_NAME: &str = "swtbench.toml";
/// The file whose `[tool.swtbench]` table is read when there is no [`FILE_NAME`].
pub const PYPROJECT: &str = "pyproject.toml";
/// The environment variable naming a configuration file (as `--config` does).
pub const CONFIG_ENV: &str = "SWTBENCH_CONFIG";

/// A configuration read from a file: its table of settings and where it came from.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file, as shown in messages.
    pub path: PathBuf,
    /// The settings: `swtbench.toml`'s whole table, or `pyproject.toml`'s `tool.swtbench`.
    pub table: toml::Table,
}

/// One flag whose default the file set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The command it applies to: `["images", "build"]`; empty for `swtbench` itself.
    pub command: Vec<String>,
    /// The argument's id (for `ArgMatches::value_source`).
    pub id: String,
    /// The key as the file writes it (`run.max-workers`).
    pub key: String,
    /// Its long name, without the dashes.
    pub long: String,
    /// The values given to the flag, as the command line would have them.
    pub values: Vec<String>,
}

impl Applied {
    /// `run --timeout`.
    pub fn flag(&self) -> String {
        let mut words = self.command.clone();
        words.push(format!("--{}", self.long));
        words.join(" ")
    }
}

/// What is wrong with a configuration file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: not valid TOML: {message}")]
    Syntax { path: PathBuf, message: String },
    #[error("{path}: `tool.swtbench` must be a table of settings")]
    NotATable { path: PathBuf },
    #[error("{path}: `{key}` is not a flag of {scope}{}", suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default())]
    UnknownKey {
        path: PathBuf,
        key: String,
        /// `swtbench run`, or "any command" for a top-level key.
        scope: String,
        suggestion: Option<String>,
    },
    #[error("{path}: `{key}`: {message}")]
    BadValue {
        path: PathBuf,
        key: String,
        message: String,
    },
}

impl ConfigError {
    /// What to do about it.
    pub fn hint(&self) -> &'static str {
        match self {
            ConfigError::UnknownKey { .. } => {
                "keys are the long flag names of `swtbench <command> --help` (without the dashes), at the top for every command or in a table named after the command ([run], [images.build]); pass --no-config to ignore the file"
            }
            _ => "fix the file, or pass --no-config to ignore it (docs/configuration.md)",
        }
    }
}

/// Parses a configuration file's text. For a `pyproject.toml` (`pyproject` true) the settings are
/// its `[tool.swtbench]` table, and a file without one gives `None`.
pub fn parse(text: &str, path: &Path, pyproject: bool) -> Result<Option<Config>, ConfigError> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigError::Syntax {
            path: path.to_path_buf(),
            message: e.message().to_string() + &line_of(text, e.span()),
        })?;
    let table = if pyproject {
        match table.get("tool").and_then(|t| t.get("swtbench")) {
            None => return Ok(None),
            Some(toml::Value::Table(t)) => t.clone(),
            Some(_) => {
                return Err(ConfigError::NotATable {
                    path: path.to_path_buf(),
                })
            }
        }
    } else {
        table
    };
    Ok(Some(Config {
        path: path.to_path_buf(),
        table,
    }))
}

fn line_of(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(r) => {
            let line = text[..r.start.min(text.len())].matches('\n').count() + 1;
            format!(" (line {line})")
        }
        None => String::new(),
    }
}

/// The configuration file named on the command line (`--config FILE`, `--config=FILE`) and
/// whether `--no-config` was given, from the raw arguments (before clap parses them, since the
/// file changes what clap is given). Arguments after `--` are not looked at.
pub fn requested(argv: &[std::ffi::OsString]) -> (Option<PathBuf>, bool) {
    let mut file = None;
    let mut none = false;
    let mut it = argv.iter().skip(1);
    while let Some(a) = it.next() {
        let Some(s) = a.to_str() else { continue };
        if s == "--" {
            break;
        } else if s == "--no-config" {
            none = true;
        } else if s == "--config" {
            file = it.next().map(PathBuf::from);
        } else if let Some(v) = s.strip_prefix("--config=") {
            file = Some(PathBuf::from(v));
        }
    }
    (file, none)
}

/// Sets the defaults `config` gives on `cmd` (the whole `swtbench` command). Returns the command
/// and the flags it set, in the file's order.
pub fn apply(cmd: Command, config: &Config) -> Result<(Command, Vec<Applied>), ConfigError> {
    let base = config
        .path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut applied = Vec::new();
    let mut cmd = cmd;
    // Top-level plain keys: every command (at any depth) with the flag.
    for (key, value) in &config.table {
        if value.is_table() && cmd.find_subcommand(key).is_some() {
            continue;
        }
        let mut hits = 0;
        cmd = set_everywhere(cmd, &[], key, value, config, &base, &mut hits, &mut applied)?;
        if hits == 0 {
            return Err(unknown(config, key, "any command", &all_flags(&cmd)));
        }
    }
    // Tables named after a command.
    for (key, value) in &config.table {
        if let (toml::Value::Table(t), Some(_)) = (value, cmd.find_subcommand(key)) {
            cmd = apply_table(
                cmd,
                std::slice::from_ref(key),
                t,
                config,
                &base,
                &mut applied,
            )?;
        }
    }
    Ok((cmd, applied))
}

/// The part of `config` that applies to `swtbench <name>`: the top-level keys that are flags of
/// that command and its own table (`whole` is the whole `swtbench` command). Applied to a command
/// line made of that command only, as `serve` and `worker` parse the run flags after `--`, it
/// gives the flags the defaults `swtbench <name>` would get from the file. `None` when
/// `whole` has no such command.
pub fn for_command(config: &Config, whole: &Command, name: &str) -> Option<Config> {
    let sub = whole.find_subcommand(name)?;
    let table = config
        .table
        .iter()
        .filter(|(key, value)| match value {
            toml::Value::Table(_) => key.as_str() == name,
            _ => whole.find_subcommand(key.as_str()).is_none() && arg_id(sub, key).is_some(),
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Some(Config {
        path: config.path.clone(),
        table,
    })
}

fn apply_table(
    root: Command,
    path: &[String],
    table: &toml::Table,
    config: &Config,
    base: &Path,
    applied: &mut Vec<Applied>,
) -> Result<Command, ConfigError> {
    let mut root = root;
    for (key, value) in table {
        let sub = find(&root, path).expect("the path names existing subcommands");
        if let (toml::Value::Table(t), true) = (value, sub.find_subcommand(key).is_some()) {
            let mut deeper = path.to_vec();
            deeper.push(key.clone());
            root = apply_table(root, &deeper, t, config, base, applied)?;
            continue;
        }
        let scope = format!("swtbench {}", path.join(" "));
        let Some(id) = arg_id(sub, key) else {
            let names: Vec<String> = sub.get_arguments().filter_map(long_name).collect();
            return Err(unknown(
                config,
                &format!("{}.{key}", path.join(".")),
                &scope,
                &names,
            ));
        };
        let values = values_for(sub, &id, key, value, config, base)?;
        applied.push(Applied {
            command: path.to_vec(),
            id: id.clone(),
            key: format!("{}.{key}", path.join(".")),
            long: long_of(sub, &id),
            values: values.clone(),
        });
        root = with_default(root, path, &id, &values);
    }
    Ok(root)
}

#[allow(clippy::too_many_arguments)]
fn set_everywhere(
    root: Command,
    path: &[String],
    key: &str,
    value: &toml::Value,
    config: &Config,
    base: &Path,
    hits: &mut usize,
    applied: &mut Vec<Applied>,
) -> Result<Command, ConfigError> {
    let mut root = root;
    let here = find(&root, path).expect("the path names existing subcommands");
    if let Some(id) = arg_id(here, key) {
        let values = values_for(here, &id, key, value, config, base)?;
        applied.push(Applied {
            command: path.to_vec(),
            id: id.clone(),
            key: key.to_string(),
            long: long_of(here, &id),
            values: values.clone(),
        });
        root = with_default(root, path, &id, &values);
        *hits += 1;
    }
    let subs: Vec<String> = find(&root, path)
        .expect("the path names existing subcommands")
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for s in subs {
        let mut deeper = path.to_vec();
        deeper.push(s);
        root = set_everywhere(root, &deeper, key, value, config, base, hits, applied)?;
    }
    Ok(root)
}

fn find<'a>(root: &'a Command, path: &[String]) -> Option<&'a Command> {
    let mut c = root;
    for p in path {
        c = c.find_subcommand(p)?;
    }
    Some(c)
}

fn with_default(root: Command, path: &[String], id: &str, values: &[String]) -> Command {
    match path.split_first() {
        None => {
            let owned: Vec<ClapOsStr> = values
                .iter()
                .map(|v| ClapOsStr::from(clap::builder::Str::from(v.clone())))
                .collect();
            // A required flag the file gives is no longer required on the command line.
            root.mut_arg(id, |a| a.default_values(owned).required(false))
        }
        Some((first, rest)) => {
            root.mut_subcommand(first, |sub| with_default(sub, rest, id, values))
        }
    }
}

/// The id of the argument `key` names: its long name, one of its long aliases, or its id
/// (`max_workers`), with `_` and `-` taken as the same. Positional and global-only help flags
/// are not settable.
fn arg_id(cmd: &Command, key: &str) -> Option<String> {
    let norm = |s: &str| s.replace('_', "-");
    let want = norm(key);
    if want == "help" || want == "version" || want == "config" || want == "no-config" {
        return None;
    }
    cmd.get_arguments()
        .filter(|a| a.get_long().is_some())
        .find(|a| {
            a.get_long().is_some_and(|l| norm(l) == want)
                || norm(a.get_id().as_str()) == want
                || a.get_all_aliases()
                    .into_iter()
                    .flatten()
                    .any(|al| norm(al) == want)
        })
        .map(|a| a.get_id().to_string())
}

fn long_name(a: &Arg) -> Option<String> {
    let l = a.get_long()?;
    (l != "help" && l != "version").then(|| l.to_string())
}

fn long_of(cmd: &Command, id: &str) -> String {
    cmd.get_arguments()
        .find(|a| a.get_id() == id)
        .and_then(|a| a.get_long())
        .unwrap_or(id)
        .to_string()
}

fn all_flags(cmd: &Command) -> Vec<String> {
    let mut out: Vec<String> = cmd.get_arguments().filter_map(long_name).collect();
    for s in cmd.get_subcommands() {
        out.extend(all_flags(s));
    }
    out.sort();
    out.dedup();
    out
}

fn unknown(config: &Config, key: &str, scope: &str, names: &[String]) -> ConfigError {
    let last = key.rsplit('.').next().unwrap_or(key).replace('_', "-");
    let suggestion = names
        .iter()
        .map(|n| (swtbench_data::dataset::edit_distance(&last, n), n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n.clone());
    ConfigError::UnknownKey {
        path: config.path.clone(),
        key: key.to_string(),
        scope: scope.to_string(),
        suggestion,
    }
}

/// The error of a value from the file that the flag's own parser rejected (clap checks the
/// defaults when it parses the command line), naming the file and the key; `None` when the error
/// is not about a value from the file.
pub fn blame(err: &clap::Error, applied: &[Applied], config: &Config) -> Option<ConfigError> {
    let text = |kind| match err.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let arg = text(ContextKind::InvalidArg)?;
    let value = text(ContextKind::InvalidValue)?;
    let long = arg.trim_start_matches("--").split([' ', '=']).next()?;
    let a = applied
        .iter()
        .find(|a| a.long == long && a.values.contains(&value))?;
    let rendered = err.render().to_string();
    let first = rendered.lines().next().unwrap_or_default();
    Some(ConfigError::BadValue {
        path: config.path.clone(),
        key: a.key.clone(),
        message: first.trim_start_matches("error: ").to_string(),
    })
}

/// The values `value` gives the flag `id` of `cmd`, as command-line words (clap's parser checks
/// them when the command line is parsed: [`blame`]).
fn values_for(
    cmd: &Command,
    id: &str,
    key: &str,
    value: &toml::Value,
    config: &Config,
    base: &Path,
) -> Result<Vec<String>, ConfigError> {
    let arg = cmd
        .get_arguments()
        .find(|a| a.get_id() == id)
        .expect("arg_id found it");
    let bad = |message: String| ConfigError::BadValue {
        path: config.path.clone(),
        key: key.to_string(),
        message,
    };
    let many = matches!(arg.get_action(), ArgAction::Append)
        || arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    let words: Vec<String> = match value {
        toml::Value::Array(items) if many => items
            .iter()
            .map(|v| scalar(v).ok_or_else(|| bad("a list of plain values is expected".into())))
            .collect::<Result<_, _>>()?,
        toml::Value::Array(_) => {
            return Err(bad(format!(
                "--{} takes one value, not a list",
                long_of(cmd, id)
            )))
        }
        toml::Value::Table(_) => {
            return Err(bad(format!(
                "--{} takes a value, not a table",
                long_of(cmd, id)
            )))
        }
        v => vec![scalar(v).expect("not an array or a table")],
    };
    if matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse)
        && !matches!(value, toml::Value::Boolean(_))
    {
        return Err(bad(format!(
            "--{} is a switch: write true or false",
            long_of(cmd, id)
        )));
    }
    let words: Vec<String> = words
        .into_iter()
        .map(|w| relative_to(arg, w, base))
        .collect();
    Ok(words)
}

fn scalar(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        toml::Value::Datetime(d) => Some(d.to_string()),
        toml::Value::Array(_) | toml::Value::Table(_) => None,
    }
}

/// A relative path of a path-valued flag made relative to the file's directory, so a file named
/// with `--config` means the same from wherever it is used. Flags whose value may be a name as
/// well as a path (`--predictions gold`, `--dataset lite`) are resolved only when the value looks
/// like a path (a `/` or a file extension).
fn relative_to(arg: &Arg, word: String, base: &Path) -> String {
    if base.as_os_str().is_empty() || Path::new(&word).is_absolute() {
        return word;
    }
    let names: Vec<String> = arg
        .get_value_names()
        .map(|n| n.iter().map(|s| s.to_string()).collect())
        .unwrap_or_default();
    let pathish = names
        .iter()
        .any(|n| matches!(n.as_str(), "FILE" | "DIR" | "PATH"));
    let maybe = names.iter().any(|n| n.contains("FILE") || n == "DATASET");
    let looks_like_path = word.contains('/')
        || Path::new(&word)
            .extension()
            .is_some_and(|e| matches!(e.to_str(), Some("json" | "jsonl" | "parquet" | "toml")));
    if pathish || (maybe && looks_like_path) {
        base.join(word).to_string_lossy().into_owned()
    } else {
        word
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, FromArgMatches};

    fn config(text: &str) -> Config {
        parse(text, Path::new("/cfg/swtbench.toml"), false)
            .expect("valid")
            .expect("a table")
    }

    /// Why [`cli_with`] could not make a command line.
    #[derive(Debug, thiserror::Error)]
    enum CliWithError {
        #[error(transparent)]
        Config(ConfigError),
        #[error(transparent)]
        Args(clap::Error),
    }

    fn cli_with(text: &str, argv: &[&str]) -> Result<crate::Cli, CliWithError> {
        let (cmd, _) = apply(crate::Cli::command(), &config(text)).map_err(CliWithError::Config)?;
        let m = cmd.try_get_matches_from(argv).map_err(CliWithError::Args)?;
        crate::Cli::from_arg_matches(&m).map_err(CliWithError::Args)
    }

    fn run_args(cli: crate::Cli) -> crate::args::RunArgs {
        match cli.command {
            crate::Command::Run(r) => *r,
            other => panic!("not run: {other:?}"),
        }
    }

    const RUN: [&str; 6] = ["swtbench", "run", "--predictions", "gold", "--run-id", "x"];

    #[test]
    fn the_run_part_of_a_file_is_its_top_level_run_flags_and_its_run_table() {
        let c = config(
            "no-network = true\ntoken-file = \"t\"\n[run]\nmax-workers = 3\n[serve]\nlisten = \"127.0.0.1:1\"\n",
        );
        let part = for_command(&c, &crate::Cli::command(), "run").expect("run exists");
        let keys: Vec<&String> = part.table.keys().collect();
        assert_eq!(keys, ["no-network", "run"], "{part:?}");
        assert!(for_command(&c, &crate::Cli::command(), "no-such-command").is_none());
    }

    #[test]
    fn a_command_table_sets_defaults_and_the_command_line_wins() {
        let text = "[run]\nmax-workers = 5\ntimeout = 77\n";
        let r = run_args(cli_with(text, &RUN).expect("parses"));
        assert_eq!(r.max_workers, 5);
        let mut argv = RUN.to_vec();
        argv.extend(["--max-workers", "2"]);
        let r = run_args(cli_with(text, &argv).expect("parses"));
        assert_eq!(r.max_workers, 2, "the command line wins over the file");
    }

    #[test]
    fn top_level_keys_reach_every_command_with_the_flag() {
        let (cmd, applied) =
            apply(crate::Cli::command(), &config("max-workers = 6\n")).expect("applies");
        assert!(applied.len() > 1, "{applied:?}");
        assert!(
            applied.iter().any(|a| a.flag() == "run --max-workers"),
            "{applied:?}"
        );
        let m = cmd.try_get_matches_from(RUN).expect("parses");
        let r = run_args(crate::Cli::from_arg_matches(&m).expect("builds"));
        assert_eq!(r.max_workers, 6);
    }

    #[test]
    fn snake_case_keys_are_the_same_flags() {
        let r = run_args(cli_with("[run]\nmax_workers = 3\n", &RUN).expect("parses"));
        assert_eq!(r.max_workers, 3);
    }

    #[test]
    fn lists_give_a_flag_several_values() {
        let r =
            run_args(cli_with("[run]\ninstance-ids = [\"a-1\", \"b-2\"]\n", &RUN).expect("parses"));
        assert_eq!(
            r.dataset.instance_ids,
            vec!["a-1".to_string(), "b-2".to_string()]
        );
    }

    #[test]
    fn relative_paths_are_relative_to_the_file() {
        let r = run_args(cli_with("[run]\nrepo-mirror = \"mirrors\"\n", &RUN).expect("parses"));
        assert_eq!(r.mirror.repo_mirror, Some(PathBuf::from("/cfg/mirrors")));
        // A name that is not a path stays a name.
        let r = run_args(cli_with("[run]\ndataset = \"lite\"\n", &RUN).expect("parses"));
        assert_eq!(r.dataset.dataset, "lite");
    }

    #[test]
    fn an_unknown_key_is_an_error_with_the_closest_flag() {
        let err =
            apply(crate::Cli::command(), &config("[run]\nmax-worker = 3\n")).expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "/cfg/swtbench.toml: `run.max-worker` is not a flag of swtbench run; did you mean `max-workers`?"
        );
        let err = apply(crate::Cli::command(), &config("no-netwrk = true\n")).expect_err("unknown");
        assert!(
            err.to_string().contains("did you mean `no-network`?"),
            "{err}"
        );
    }

    #[test]
    fn a_value_the_flag_rejects_names_the_key() {
        let c = config("[run]\nmax-workers = \"many\"\n");
        let (cmd, applied) = apply(crate::Cli::command(), &c).expect("applies");
        let err = cmd
            .try_get_matches_from(RUN)
            .expect_err("clap checks the default");
        match blame(&err, &applied, &c) {
            Some(ConfigError::BadValue { key, message, .. }) => {
                assert_eq!(key, "run.max-workers");
                assert!(message.contains("many"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        // An error of the command line itself is not the file's.
        let c = config("[run]\ntimeout = 30\n");
        let (cmd, applied) = apply(crate::Cli::command(), &c).expect("applies");
        let mut argv = RUN.to_vec();
        argv.extend(["--timeout", "soon"]);
        let err = cmd.try_get_matches_from(argv).expect_err("bad flag");
        assert!(blame(&err, &applied, &c).is_none(), "{err}");
        let err = apply(
            crate::Cli::command(),
            &config("[run]\nno-network = \"yes\"\n"),
        )
        .expect_err("a switch takes a boolean");
        assert!(err.to_string().contains("is a switch"), "{err}");
        let err = apply(crate::Cli::command(), &config("[run]\ntimeout = [1, 2]\n"))
            .expect_err("one value");
        assert!(err.to_string().contains("takes one value"), "{err}");
    }

    #[test]
    fn pyproject_reads_only_its_tool_table() {
        let p = Path::new("/p/pyproject.toml");
        assert!(parse("[project]\nname = \"x\"\n", p, true)
            .expect("valid")
            .is_none());
        let c = parse("[tool.swtbench.run]\nmax-workers = 4\n", p, true)
            .expect("valid")
            .expect("a table");
        assert!(c.table.contains_key("run"));
        let err = parse("x = [", p, false).expect_err("syntax");
        assert!(
            err.to_string()
                .starts_with("/p/pyproject.toml: not valid TOML"),
            "{err}"
        );
    }

    #[test]
    fn config_flags_are_found_before_parsing() {
        let argv = |v: &[&str]| v.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        assert_eq!(
            requested(&argv(&["swtbench", "run", "--config", "a.toml"])),
            (Some(PathBuf::from("a.toml")), false)
        );
        assert_eq!(
            requested(&argv(&[
                "swtbench",
                "--config=b.toml",
                "run",
                "--no-config"
            ])),
            (Some(PathBuf::from("b.toml")), true)
        );
        assert_eq!(
            requested(&argv(&["swtbench", "serve", "--", "--config", "c"])),
            (None, false)
        );
    }
}

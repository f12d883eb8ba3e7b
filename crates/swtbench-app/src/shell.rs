//! Words for a POSIX shell: the commands the cluster scripts and manifests run, and the run flags
//! the cluster commands (`slurm submit`, `k8s manifest`) repeat in each shard's command: `swtbench
//! run`'s flags as they were given, with the cluster command's own flags left out.

use std::ffi::OsString;

/// Quotes `s` for a POSIX shell when it needs it (single quotes; a `'` inside becomes `'\''`).
pub fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A flag of a cluster command that is not a run flag (left out of the shard command).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnFlag {
    /// The long name without the dashes.
    pub long: String,
    /// Whether it takes a value (`--name VALUE` or `--name=VALUE`).
    pub value: bool,
}

/// Run flags a cluster command sets itself and so refuses from the user.
pub const SET_BY_CLUSTER: [&str; 4] = ["shard", "merge", "dry-run", "json"];

/// The arguments after the subcommand `path` (e.g. `["slurm", "submit"]`) in `argv` (the
/// process's arguments, program name first). Global flags before the subcommand (`-q`) take no
/// value, so the first occurrence of the path is the subcommand.
pub fn after_subcommand(argv: &[OsString], path: &[&str]) -> Vec<String> {
    let strings: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let start = (0..strings.len())
        .find(|&i| {
            path.iter()
                .enumerate()
                .all(|(j, p)| strings.get(i + j).is_some_and(|s| s == p))
        })
        .map_or(strings.len(), |i| i + path.len());
    strings[start..].to_vec()
}

/// The run flags among `args` (what followed the cluster subcommand), in the order given, with
/// the cluster command's `own` flags and their values left out. Everything after a `--` is kept
/// as it is.
pub fn run_flags(args: &[String], own: &[OwnFlag]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            out.extend(args[i..].iter().cloned());
            break;
        }
        let name = a
            .strip_prefix("--")
            .map(|n| n.split('=').next().unwrap_or(n));
        match name.and_then(|n| own.iter().find(|f| f.long == n)) {
            Some(flag) => {
                let inline = a.contains('=');
                i += if flag.value && !inline { 2 } else { 1 };
            }
            None => {
                out.push(a.clone());
                i += 1;
            }
        }
    }
    out
}

/// The first run flag among `flags` that the cluster command sets itself, if any.
pub fn refused(flags: &[String]) -> Option<String> {
    flags.iter().find_map(|a| {
        let name = a.strip_prefix("--")?.split('=').next()?;
        SET_BY_CLUSTER.contains(&name).then(|| format!("--{name}"))
    })
}

impl OwnFlag {
    /// An own flag that takes a value.
    pub fn with_value(long: &str) -> Self {
        OwnFlag {
            long: long.to_string(),
            value: true,
        }
    }

    /// An own flag without a value.
    pub fn switch(long: &str) -> Self {
        OwnFlag {
            long: long.to_string(),
            value: false,
        }
    }
}

/// The run flags the cluster command `path` (e.g. `["slurm", "submit"]`) was given in `argv`
/// (the process's arguments), as given, its `own` flags left out: flags the cluster sets itself,
/// or `--repeat` (`repeat` above 1), are refused; `unit` names what runs a shard in the message
/// ("task", "pod").
pub fn cluster_run_flags(
    argv: &[OsString],
    path: &[&str],
    own: &[OwnFlag],
    unit: &str,
    repeat: usize,
) -> crate::Result<Vec<String>> {
    let flags = run_flags(&after_subcommand(argv, path), own);
    let command = path.join(" ");
    if let Some(flag) = refused(&flags) {
        return Err(crate::Error::input(anyhow::anyhow!(
            "{flag} is set by `{command}` itself (each {unit} runs its --shard, the merge --merge)"
        ))
        .with_hint("leave it out"));
    }
    if repeat > 1 {
        return Err(crate::Error::input(anyhow::anyhow!(
            "--repeat {repeat} does not combine with shards (each repeat is a whole evaluation of its own)"
        ))
        .with_hint("submit one cluster job per repeat (another --run-id each), or leave --repeat out"));
    }
    Ok(flags)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(quote("--dataset=/a/b.jsonl"), "--dataset=/a/b.jsonl");
        assert_eq!(quote("two words"), "'two words'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("$HOME"), "'$HOME'");
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn own() -> [OwnFlag; 3] {
        [
            OwnFlag::with_value("shards"),
            OwnFlag::with_value("partition"),
            OwnFlag::switch("print"),
        ]
    }

    #[test]
    fn own_flags_and_their_values_are_left_out_in_both_spellings() {
        let args = strings(&[
            "--dataset",
            "d.jsonl",
            "--shards",
            "3",
            "--predictions=gold",
            "--partition=debug",
            "--print",
            "--run-id",
            "r1",
            "-q",
        ]);
        assert_eq!(
            run_flags(&args, &own()),
            strings(&[
                "--dataset",
                "d.jsonl",
                "--predictions=gold",
                "--run-id",
                "r1",
                "-q"
            ])
        );
    }

    #[test]
    fn a_flag_that_only_starts_like_an_own_flag_is_kept() {
        let args = strings(&["--shard", "1/2", "--printer", "--shards-x", "v"]);
        assert_eq!(run_flags(&args, &own()), args);
        assert_eq!(refused(&args).as_deref(), Some("--shard"));
        assert_eq!(
            refused(&strings(&["--dry-run=true"])).as_deref(),
            Some("--dry-run")
        );
        assert_eq!(refused(&strings(&["--run-id", "shard"])), None);
    }

    #[test]
    fn the_arguments_after_the_subcommand_path() {
        let argv: Vec<OsString> = ["swtbench", "-q", "slurm", "submit", "--shards", "2"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(
            after_subcommand(&argv, &["slurm", "submit"]),
            strings(&["--shards", "2"])
        );
        assert!(after_subcommand(&argv, &["k8s", "manifest"]).is_empty());
    }
}

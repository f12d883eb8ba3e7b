//! Building an image by committing one container, for Dockerfiles of a simple shape.
//!
//! The classic builder commits a layer for every instruction, and on slow storage drivers
//! (fuse-overlayfs) each commit costs seconds whatever its size: an instance image of ten
//! instructions spent about 50 of its 63 s committing. Files copied in stay in their own layer
//! even when a later step removes them (a repository mirror, say). A *commit build* runs the same
//! instructions in one container of the `FROM` image instead — files put in with the engine's
//! copy API, `RUN` steps executed in order with the build's arguments — and commits that container
//! once, with the image settings (`WORKDIR`, `ENV`, `LABEL`) applied as commit changes. The image
//! holds the same files and configuration as the Dockerfile's build, in one layer that has only
//! what the steps left behind.
//!
//! This module turns a Dockerfile into that plan; it is pure. The engine backend executes it
//! (`DockerBackend`). The shapes it takes: `FROM [--platform=…] image` once and first, `ARG`,
//! `COPY src… dest` (sources from the build context, no flags), `RUN` in shell form, `WORKDIR`
//! (absolute), `ENV key=value…` and `LABEL …`. Anything else is refused with the instruction named,
//! and the caller builds with the Dockerfile builder instead.

use std::collections::BTreeMap;

use crate::context::BuildContext;
use crate::context::ContainerFile;

/// Build arguments that reach every `RUN` without being declared: the engine's predefined proxy
/// arguments.
const PREDEFINED_ARGS: &[&str] = crate::network::PROXY_VARIABLES;

/// One step executed in the build container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitStep {
    /// Put context files into the container (their directories first, empty ones included).
    Copy {
        /// The instruction as written, for the log.
        instruction: String,
        dirs: Vec<String>,
        files: Vec<ContainerFile>,
    },
    /// `/bin/sh -c <script>` with the declared arguments' values in its environment.
    Run {
        instruction: String,
        script: String,
        env: Vec<(String, String)>,
        working_dir: Option<String>,
    },
    /// A setting of the image (`WORKDIR`, `ENV`, `LABEL`), applied when committing, or an `ARG`
    /// (nothing to do in the container); a `WORKDIR` is also made as a directory, as the builder
    /// does.
    Setting {
        instruction: String,
        make_dir: Option<String>,
    },
}

impl CommitStep {
    pub fn instruction(&self) -> &str {
        match self {
            CommitStep::Copy { instruction, .. }
            | CommitStep::Run { instruction, .. }
            | CommitStep::Setting { instruction, .. } => instruction,
        }
    }
}

/// What a commit build does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitPlan {
    /// The `FROM` image.
    pub from: String,
    /// The `FROM` instruction as written, for the log.
    pub from_instruction: String,
    pub steps: Vec<CommitStep>,
    /// Dockerfile instructions for the commit (`WORKDIR`, `ENV`, `LABEL`), in their order.
    pub changes: Vec<String>,
}

/// Why a Dockerfile cannot be built by a commit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} of the Dockerfile: {message}")]
pub struct PlanError {
    pub line: usize,
    pub message: String,
}

/// The instructions of a Dockerfile: continuation lines joined, comments and blank lines left out;
/// each with the line it starts on.
fn instructions(dockerfile: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, raw) in dockerfile.lines().enumerate() {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        if current.is_none() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if current.is_some() && trimmed.starts_with('#') {
            // A comment line inside a continued instruction is dropped by the builder.
            continue;
        }
        let (text, continues) = match line.strip_suffix('\\') {
            Some(head) => (head, true),
            None => (line, false),
        };
        // The builder joins continued lines without the backslash and the newline.
        let entry = current.get_or_insert_with(|| (i + 1, String::new()));
        entry.1.push_str(if entry.1.is_empty() {
            text.trim_start()
        } else {
            text
        });
        if !continues {
            out.extend(current.take());
        }
    }
    out.extend(current);
    out
}

/// The plan of a commit build of `context`'s Dockerfile with `build_args`.
pub fn plan(
    context: &BuildContext,
    build_args: &BTreeMap<String, String>,
) -> Result<CommitPlan, PlanError> {
    let Some(dockerfile) = context.dockerfile() else {
        return Err(PlanError {
            line: 0,
            message: "the build context has no UTF-8 Dockerfile".into(),
        });
    };
    let mut from: Option<(String, String)> = None;
    let mut steps = Vec::new();
    let mut changes = Vec::new();
    // Declared arguments and their values, in declaration order.
    let mut args: Vec<(String, String)> = Vec::new();
    let mut env: Vec<(String, String)> = Vec::new();
    let mut workdir: Option<String> = None;
    for (line, text) in instructions(dockerfile) {
        let err = |message: String| PlanError { line, message };
        let (keyword, rest) = split_instruction(&text);
        if from.is_none() && keyword != "FROM" && keyword != "ARG" {
            return Err(err(format!("{keyword} before FROM")));
        }
        match keyword.as_str() {
            "FROM" => {
                if from.is_some() {
                    return Err(err(
                        "a second FROM (multi-stage builds are not built by commit)".into(),
                    ));
                }
                from = Some((from_image(&rest).map_err(|e| err(e.0))?, text.clone()));
            }
            "ARG" => {
                declare_args(&rest, build_args, &mut args);
                if from.is_some() {
                    // A step of its own in the log, numbered as the builder numbers it.
                    steps.push(CommitStep::Setting {
                        instruction: text.clone(),
                        make_dir: None,
                    });
                }
            }
            "COPY" => {
                let step =
                    copy_step(context, &rest, &text, workdir.as_deref()).map_err(|e| err(e.0))?;
                steps.push(step);
            }
            "RUN" => {
                if rest.starts_with('[') {
                    return Err(err("RUN in exec form is not built by commit".into()));
                }
                steps.push(CommitStep::Run {
                    instruction: text.clone(),
                    script: rest,
                    env: run_env(build_args, &args, &env),
                    working_dir: workdir.clone(),
                });
            }
            "WORKDIR" => {
                let dir = absolute(&rest, workdir.as_deref())
                    .ok_or_else(|| err(format!("WORKDIR {rest}: relative without a WORKDIR")))?;
                workdir = Some(dir.clone());
                changes.push(format!("WORKDIR {dir}"));
                steps.push(CommitStep::Setting {
                    instruction: text.clone(),
                    make_dir: Some(dir),
                });
            }
            "ENV" => {
                set_env(&rest, &mut env).map_err(|e| err(e.0))?;
                changes.push(text.clone());
                steps.push(CommitStep::Setting {
                    instruction: text.clone(),
                    make_dir: None,
                });
            }
            "LABEL" => {
                changes.push(text.clone());
                steps.push(CommitStep::Setting {
                    instruction: text.clone(),
                    make_dir: None,
                });
            }
            other => return Err(err(format!("{other} is not built by commit"))),
        }
    }
    let Some((from, from_instruction)) = from else {
        return Err(PlanError {
            line: 0,
            message: "no FROM instruction".into(),
        });
    };
    Ok(CommitPlan {
        from,
        from_instruction,
        steps,
        changes,
    })
}

/// Why one instruction cannot be built by commit; [`plan`] adds its line ([`PlanError`]).
#[derive(Debug)]
struct InstructionError(String);

impl From<String> for InstructionError {
    fn from(message: String) -> Self {
        InstructionError(message)
    }
}

impl From<&str> for InstructionError {
    fn from(message: &str) -> Self {
        InstructionError(message.to_string())
    }
}

/// The keyword of the instruction `text` (upper case) and its arguments (trimmed).
fn split_instruction(text: &str) -> (String, String) {
    match text.split_once(char::is_whitespace) {
        Some((k, r)) => (k.to_ascii_uppercase(), r.trim().to_string()),
        None => (text.to_ascii_uppercase(), String::new()),
    }
}

/// The image of a `FROM` instruction's arguments `rest` (a `--platform=` flag dropped); an error
/// message unless it names one image and no stage.
fn from_image(rest: &str) -> Result<String, InstructionError> {
    let words: Vec<&str> = rest
        .split_whitespace()
        .filter(|w| !w.starts_with("--platform="))
        .collect();
    match words.as_slice() {
        [image] => Ok(image.to_string()),
        _ => Err(format!("FROM {rest}: one image, no stage name").into()),
    }
}

/// Declares the arguments of an `ARG` instruction's `rest` in `args` (name and value, in
/// declaration order), each with its value from `build_args` or else its default; one with
/// neither stays undeclared.
fn declare_args(
    rest: &str,
    build_args: &BTreeMap<String, String>,
    args: &mut Vec<(String, String)>,
) {
    for word in rest.split_whitespace() {
        let (name, default) = match word.split_once('=') {
            Some((n, d)) => (n, Some(unquote(d))),
            None => (word, None),
        };
        if let Some(value) = build_args.get(name).cloned().or(default) {
            args.retain(|(n, _)| n != name);
            args.push((name.to_string(), value));
        }
    }
}

/// The step of the `COPY` instruction `text` (arguments `rest`) from `context`, its destination
/// relative to `workdir`; an error message for flags, a missing source or destination, or a
/// relative destination without a WORKDIR.
fn copy_step(
    context: &BuildContext,
    rest: &str,
    text: &str,
    workdir: Option<&str>,
) -> Result<CommitStep, InstructionError> {
    if rest.starts_with("--") {
        return Err(format!("COPY {rest}: flags are not built by commit").into());
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let [sources @ .., dest] = words.as_slice() else {
        return Err("COPY needs a source and a destination".into());
    };
    if sources.is_empty() {
        return Err("COPY needs a source and a destination".into());
    }
    let dest = absolute(dest, workdir)
        .ok_or_else(|| format!("COPY to {dest}: a relative destination without a WORKDIR"))?;
    let (dirs, files) = copy_entries(context, sources, &dest).map_err(|e| e.to_string())?;
    Ok(CommitStep::Copy {
        instruction: text.to_string(),
        dirs,
        files,
    })
}

/// The environment of a `RUN` step: the predefined arguments given in `build_args`, then the
/// declared `args` and the `env` so far (an ENV of the same name wins over an argument, as in the
/// builder).
fn run_env(
    build_args: &BTreeMap<String, String>,
    args: &[(String, String)],
    env: &[(String, String)],
) -> Vec<(String, String)> {
    let mut run_env: Vec<(String, String)> = Vec::new();
    for name in PREDEFINED_ARGS {
        if let Some(v) = build_args.get(*name) {
            run_env.push((name.to_string(), v.clone()));
        }
    }
    // An ENV of the same name wins over an argument, as in the builder.
    for (n, v) in args.iter().chain(env.iter()) {
        run_env.retain(|(k, _)| k != n);
        run_env.push((n.clone(), v.clone()));
    }
    run_env
}

/// Sets the variables of an `ENV` instruction's `rest` in `env`; an error message for a word
/// that is not `key=value`.
fn set_env(rest: &str, env: &mut Vec<(String, String)>) -> Result<(), InstructionError> {
    for word in rest.split_whitespace() {
        let Some((k, v)) = word.split_once('=') else {
            return Err(InstructionError(format!(
                "ENV {rest}: only the key=value form is built by commit"
            )));
        };
        env.retain(|(n, _)| n != k);
        env.push((k.to_string(), unquote(v)));
    }
    Ok(())
}

fn unquote(v: &str) -> String {
    v.strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(v)
        .to_string()
}

/// `path` made absolute against the working directory; `None` when it is relative and there is
/// none. A trailing `/` is kept (it means "into this directory" for COPY).
fn absolute(path: &str, workdir: Option<&str>) -> Option<String> {
    if path.starts_with('/') {
        return Some(path.to_string());
    }
    let base = workdir?;
    let rel = path.strip_prefix("./").unwrap_or(path);
    Some(format!("{}/{}", base.trim_end_matches('/'), rel))
}

/// A `COPY` source a commit build cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum CopySourceError {
    #[error("COPY {0}: only paths inside the context are built by commit")]
    OutsideContext(String),
    #[error("COPY {0}: not in the build context")]
    Missing(String),
}

/// The directories and files a `COPY sources… dest` puts into the container, with Docker's
/// rules: a file to `dest` (or into it, when `dest` ends with `/` or there are several sources),
/// a directory's contents into `dest`.
fn copy_entries(
    context: &BuildContext,
    sources: &[&str],
    dest: &str,
) -> Result<(Vec<String>, Vec<ContainerFile>), CopySourceError> {
    let into_dir = dest.ends_with('/') || sources.len() > 1;
    let dest_dir = dest.trim_end_matches('/');
    let dest_dir = if dest_dir.is_empty() { "/" } else { dest_dir };
    let join = |dir: &str, rel: &str| {
        if dir == "/" {
            format!("/{rel}")
        } else {
            format!("{dir}/{rel}")
        }
    };
    let mut dirs = Vec::new();
    let mut files = Vec::new();
    for source in sources {
        let src = source.trim_start_matches("./").trim_end_matches('/');
        if src.is_empty() || src == "." || src.split('/').any(|p| p == "..") {
            return Err(CopySourceError::OutsideContext(source.to_string()));
        }
        if let Some(f) = context.entry(src) {
            let path = if into_dir {
                join(dest_dir, src.rsplit('/').next().unwrap_or(src))
            } else {
                dest.to_string()
            };
            files.push(ContainerFile::new(path, f.contents.clone()).mode(f.mode));
            continue;
        }
        let prefix = format!("{src}/");
        let mut found = false;
        dirs.push(dest_dir.to_string());
        for dir in context.dirs_under(&prefix) {
            found = true;
            dirs.push(join(dest_dir, &dir[prefix.len()..]));
        }
        for (path, f) in context.entries_under(&prefix) {
            found = true;
            files.push(
                ContainerFile::new(join(dest_dir, &path[prefix.len()..]), f.contents.clone())
                    .mode(f.mode),
            );
        }
        if !found {
            return Err(CopySourceError::Missing(source.to_string()));
        }
    }
    dirs.sort();
    dirs.dedup();
    Ok((dirs, files))
}

/// The commit change that gives the image `cmd` as its command again (the build container ran
/// its own), or `None` when the `FROM` image had none.
pub fn cmd_change(cmd: Option<&[String]>) -> Option<String> {
    let cmd = cmd?;
    Some(format!(
        "CMD {}",
        serde_json::to_string(cmd).unwrap_or_else(|_| "[]".into())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(dockerfile: &str) -> BuildContext {
        let mut c = BuildContext::new(dockerfile);
        c.add_file("setup_repo.sh", "echo hi\n", 0o755)
            .expect("test data");
        c.add_bulk_dir("m.git/refs").expect("test data");
        c.add_bulk_file("m.git/HEAD", "ref: x\n", 0o644)
            .expect("test data");
        c.add_bulk_file("m.git/objects/pack/p.pack", vec![1, 2, 3], 0o444)
            .expect("test data");
        c
    }

    #[test]
    fn an_instance_dockerfile_becomes_copies_runs_and_settings() {
        let df = "FROM --platform=linux/x86_64 env:latest\n\nCOPY ./m.git /root/m.git\nRUN a \\\n && b\n# note\nCOPY ./setup_repo.sh /root/\nRUN /bin/bash /root/setup_repo.sh\nWORKDIR /testbed/\n";
        let p = plan(&ctx(df), &BTreeMap::new()).expect("test data");
        assert_eq!(p.from, "env:latest");
        assert_eq!(p.changes, vec!["WORKDIR /testbed/".to_string()]);
        assert_eq!(p.steps.len(), 5);
        let CommitStep::Copy { dirs, files, .. } = &p.steps[0] else {
            panic!("{:?}", p.steps[0])
        };
        assert_eq!(dirs, &["/root/m.git", "/root/m.git/refs"]);
        let paths: Vec<(&str, u32)> = files.iter().map(|f| (f.path.as_str(), f.mode)).collect();
        assert_eq!(
            paths,
            [
                ("/root/m.git/HEAD", 0o644),
                ("/root/m.git/objects/pack/p.pack", 0o444)
            ]
        );
        let CommitStep::Run { script, .. } = &p.steps[1] else {
            panic!("not the step expected")
        };
        assert_eq!(script, "a  && b");
        let CommitStep::Copy { files, dirs, .. } = &p.steps[2] else {
            panic!("not the step expected")
        };
        assert!(dirs.is_empty());
        assert_eq!(files[0].path, "/root/setup_repo.sh");
        assert_eq!(files[0].mode, 0o755);
        assert_eq!(files[0].contents, b"echo hi\n");
        assert_eq!(
            p.steps[4],
            CommitStep::Setting {
                instruction: "WORKDIR /testbed/".into(),
                make_dir: Some("/testbed/".into())
            }
        );
    }

    #[test]
    fn declared_and_predefined_arguments_reach_the_runs_after_them() {
        let df = "FROM x\nRUN one\nARG A B=dflt C\nRUN two\nENV E=1\nRUN three\n";
        let args = BTreeMap::from([
            ("A".to_string(), "a".to_string()),
            ("HTTPS_PROXY".to_string(), "http://p:3128".to_string()),
            ("UNDECLARED".to_string(), "u".to_string()),
        ]);
        let p = plan(&ctx(df), &args).expect("test data");
        let envs: Vec<Vec<(String, String)>> = p
            .steps
            .iter()
            .filter_map(|s| match s {
                CommitStep::Run { env, .. } => Some(env.clone()),
                _ => None,
            })
            .collect();
        let proxy = ("HTTPS_PROXY".to_string(), "http://p:3128".to_string());
        assert_eq!(envs[0], vec![proxy.clone()]);
        assert_eq!(
            envs[1],
            vec![
                proxy.clone(),
                ("A".into(), "a".into()),
                ("B".into(), "dflt".into())
            ]
        );
        assert_eq!(
            envs[2],
            vec![
                proxy,
                ("A".into(), "a".into()),
                ("B".into(), "dflt".into()),
                ("E".into(), "1".into())
            ]
        );
        assert_eq!(p.changes, vec!["ENV E=1".to_string()]);
    }

    #[test]
    fn shapes_it_does_not_build_are_refused_with_their_line() {
        for (df, line, what) in [
            ("FROM a AS b\nFROM b\n", 1, "one image"),
            ("FROM a\nFROM b\n", 2, "second FROM"),
            ("FROM a\nUSER nobody\n", 2, "USER is not"),
            ("FROM a\nCOPY --chown=1 x /y\n", 2, "flags"),
            ("FROM a\nRUN [\"true\"]\n", 2, "exec form"),
            ("FROM a\nCOPY missing /y\n", 2, "not in the build context"),
            ("FROM a\nCOPY ../x /y\n", 2, "inside the context"),
            ("RUN true\n", 1, "before FROM"),
            ("# nothing\n", 0, "no FROM"),
        ] {
            let e = plan(&ctx(df), &BTreeMap::new()).expect_err(df);
            assert_eq!(e.line, line, "{df}: {e}");
            assert!(e.message.contains(what), "{df}: {e}");
        }
    }

    #[test]
    fn a_file_copied_into_a_directory_keeps_its_name() {
        let c = ctx(
            "FROM a\nCOPY setup_repo.sh ./m.git/HEAD /opt/\nWORKDIR /w\nCOPY setup_repo.sh s.sh\n",
        );
        let p = plan(&c, &BTreeMap::new()).expect("test data");
        let CommitStep::Copy { files, .. } = &p.steps[0] else {
            panic!("not the step expected")
        };
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["/opt/setup_repo.sh", "/opt/HEAD"]);
        let CommitStep::Copy { files, .. } = &p.steps[2] else {
            panic!("not the step expected")
        };
        assert_eq!(files[0].path, "/w/s.sh");
    }

    #[test]
    fn the_from_images_command_is_given_back() {
        assert_eq!(
            cmd_change(Some(&["python3".to_string()])).as_deref(),
            Some("CMD [\"python3\"]")
        );
        assert_eq!(cmd_change(None), None);
    }
}

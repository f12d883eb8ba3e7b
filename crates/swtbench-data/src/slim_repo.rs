//! A small bare repository made from a mirror for one instance image: what `setup_repo.sh`'s
//! clone needs to look, to the tests, like a full clone reset to `base_commit`.
//!
//! It holds
//! - every commit reachable from `base_commit` (so `git log`, `git describe`'s count and the
//!   version setuptools-scm computes are the same),
//! - the tags whose commit is one of those, with their tag objects,
//! - the trees and blobs of `base_commit` only, and
//! - the mirror's `HEAD` branch name, pointing at `base_commit` (so the clone checks out the same
//!   branch name and the tree the reset asks for).
//!
//! Not in it: the trees and blobs of older commits (`git show <old commit>`, `git log -p`,
//! `git blame` and `git fsck` fail on them), commits and tags not reachable from `base_commit`,
//! and the other branches (which a full clone's `git remote remove origin` drops anyway).
//!
//! Git picks the length of abbreviated hashes (`git describe`'s `g<hash>`, and so the version
//! setuptools-scm computes) from the number of objects in the repository, so the much smaller
//! clone would abbreviate shorter. [`SlimRepo::abbrev`] is the length a full clone gives
//! `base_commit` (from the number of objects a clone of the mirror's branches and tags holds); it
//! is written as `core.abbrev` into the slim repository's config for the image build to apply.
//!
//! The clone must be a local-path clone (`git clone /path`): it copies the object files without
//! walking the history, where `file://` or a network fetch would stop at the first missing tree.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::git_mirror::{GitError, GitMirror};

/// What [`GitMirror::write_slim_repo`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlimRepo {
    /// The full hash of the commit the repository is for.
    pub commit: String,
    /// `refs/heads/<name>` the repository's `HEAD` names, or `None` when the mirror's `HEAD` is
    /// detached (the slim `HEAD` is then detached at `commit`).
    pub head_branch: Option<String>,
    /// The tags kept (full ref names), sorted.
    pub tags: Vec<String>,
    /// How many objects the pack holds.
    pub objects: usize,
    /// The abbreviated-hash length a full clone gives `commit`.
    pub abbrev: usize,
}

/// The lines of `packed-refs` for `refs` (name → object), sorted by name as git writes them.
pub fn packed_refs(refs: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = refs.iter().collect();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut s = String::from("# pack-refs with: sorted \n");
    for (name, oid) in sorted {
        s.push_str(oid);
        s.push(' ');
        s.push_str(name);
        s.push('\n');
    }
    s
}

/// One line of `for-each-ref --format=%(objectname):%(objecttype):%(*objectname):%(*objecttype):%(refname)`
/// (ref names cannot contain `:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagRef {
    pub name: String,
    pub object: String,
    pub kind: String,
    pub peeled: String,
    pub peeled_kind: String,
}

pub fn parse_tag_refs(text: &str) -> Vec<TagRef> {
    text.lines()
        .filter_map(|l| {
            let mut p = l.splitn(5, ':');
            Some(TagRef {
                object: p.next()?.to_string(),
                kind: p.next()?.to_string(),
                peeled: p.next()?.to_string(),
                peeled_kind: p.next()?.to_string(),
                name: p.next()?.to_string(),
            })
        })
        .filter(|t| !t.name.is_empty())
        .collect()
}

/// The number of objects a clone of each mirror's branches and tags holds, by mirror and the state
/// of its refs: counting walks the whole history once, and every instance of a repository asks.
fn clone_count_cache() -> &'static Mutex<HashMap<(PathBuf, u64), u64>> {
    static CACHE: OnceLock<Mutex<HashMap<(PathBuf, u64), u64>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

impl GitMirror {
    /// Writes the slim repository of `commit` into the empty or missing directory `dest` (see the
    /// module documentation). The mirror is only read.
    pub fn write_slim_repo(&self, commit: &str, dest: &Path) -> Result<SlimRepo, GitError> {
        let full = self.resolve_slim_commit(commit)?;

        // A local clone of a shallow repository falls back to fetching, which walks every object.
        if self.path().join("shallow").is_file() {
            return Err(GitError::Shallow {
                mirror: self.path().to_path_buf(),
            });
        }

        // The branch a full clone checks out (and `reset --hard` then moves to the commit).
        let head_branch = self
            .run(&["symbolic-ref", "-q", "HEAD"])
            .ok()
            .map(|o| String::from_utf8_lossy(&o).trim().to_string())
            .filter(|s| s.starts_with("refs/heads/"));

        let (objects, kept_refs, tags) = self.history_and_tags(&full)?;
        let (pack_input, seen) = self.slim_pack_input(&full, objects)?;
        let abbrev =
            self.write_slim_files(dest, &full, head_branch.as_deref(), kept_refs, &pack_input)?;
        Ok(SlimRepo {
            commit: full,
            head_branch,
            tags,
            objects: seen.len(),
            abbrev,
        })
    }

    /// The full hash of `commit` in the mirror; an error saying it is not there when it names
    /// no commit.
    fn resolve_slim_commit(&self, commit: &str) -> Result<String, GitError> {
        self.check_name("commit", commit)?;
        if commit.starts_with('-') {
            return Err(self.commit_not_found(commit));
        }
        self.run(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{commit}^{{commit}}"),
        ])
        .ok()
        .map(|o| String::from_utf8_lossy(&o).trim().to_string())
        .filter(|s| !s.is_empty())
        .ok_or_else(|| self.commit_not_found(commit))
    }

    /// The commits reachable from `full` (the slim repository's objects so far, with the tag
    /// objects of the tags kept), the refs of the tags kept (name, object) and their names, sorted.
    #[allow(clippy::type_complexity)]
    fn history_and_tags(
        &self,
        full: &str,
    ) -> Result<(Vec<String>, Vec<(String, String)>, Vec<String>), GitError> {
        let history_out = self.run(&["rev-list", full])?;
        let history: Vec<String> = String::from_utf8_lossy(&history_out)
            .lines()
            .map(str::to_string)
            .collect();
        let in_history: HashSet<&str> = history.iter().map(String::as_str).collect();

        let mut objects: Vec<String> = history.clone();
        let mut kept_refs: Vec<(String, String)> = Vec::new();
        let mut tags = Vec::new();
        let tag_out = self.run(&[
            "for-each-ref",
            "--format=%(objectname):%(objecttype):%(*objectname):%(*objecttype):%(refname)",
            "refs/tags",
        ])?;
        for t in parse_tag_refs(&String::from_utf8_lossy(&tag_out)) {
            let (target, chain) = match (t.kind.as_str(), t.peeled_kind.as_str()) {
                ("commit", _) => (t.object.clone(), Vec::new()),
                ("tag", "commit") => (t.peeled.clone(), vec![t.object.clone()]),
                ("tag", "tag") => match self.peel_tag_chain(&t.object)? {
                    Some(peeled) => peeled,
                    None => continue,
                },
                // Tags of trees or blobs point into no history.
                _ => continue,
            };
            if in_history.contains(target.as_str()) {
                objects.extend(chain);
                kept_refs.push((t.name.clone(), t.object.clone()));
                tags.push(t.name);
            }
        }
        tags.sort();

        Ok((objects, kept_refs, tags))
    }

    /// The input of `pack-objects` for the slim repository: `objects`, then the trees and blobs
    /// of `full` and of its parents (with their paths), each once; and the set of them all.
    fn slim_pack_input(
        &self,
        full: &str,
        mut objects: Vec<String>,
    ) -> Result<(String, HashSet<String>), GitError> {
        // The trees and blobs of the commit (gitlinks name commits of other repositories).
        let tree = self.run(&["rev-parse", "--verify", &format!("{full}^{{tree}}")])?;
        objects.push(String::from_utf8_lossy(&tree).trim().to_string());
        let mut seen: HashSet<String> = HashSet::new();
        let mut pack_input = String::new();
        for o in objects {
            if seen.insert(o.clone()) {
                pack_input.push_str(&o);
                pack_input.push('\n');
            }
        }
        // The trees and blobs of the commit, and of its parents: `git show HEAD` compares the
        // commit with them (versioneer's `git show -s --format=%ci HEAD` reads the parent's tree
        // on git 2.39, and failed with "unable to read tree" without it). Mostly the same objects
        // as the commit's own, so only the files it changed add to the pack.
        let parents_out = self.run(&["rev-list", "--parents", "-n", "1", full])?;
        let mut trees_of = vec![full.to_string()];
        trees_of.extend(
            String::from_utf8_lossy(&parents_out)
                .split_whitespace()
                .skip(1)
                .map(str::to_string),
        );
        for commit in &trees_of {
            let root = self.run(&["rev-parse", "--verify", &format!("{commit}^{{tree}}")])?;
            let root = String::from_utf8_lossy(&root).trim().to_string();
            if seen.insert(root.clone()) {
                pack_input.push_str(&root);
                pack_input.push('\n');
            }
            let ls = self.run(&["ls-tree", "-r", "-t", "-z", "--full-tree", commit])?;
            for entry in ls.split(|b| *b == 0).filter(|e| !e.is_empty()) {
                // `<mode> SP <type> SP <object> TAB <path>`; the path helps pack-objects find
                // deltas.
                let Some(tab) = entry.iter().position(|b| *b == b'\t') else {
                    continue;
                };
                let meta = String::from_utf8_lossy(&entry[..tab]);
                let mut parts = meta.split(' ');
                let (kind, oid) = (parts.nth(1), parts.next());
                if let (Some("blob" | "tree"), Some(oid)) = (kind, oid) {
                    if !seen.insert(oid.to_string()) {
                        continue;
                    }
                    let path = String::from_utf8_lossy(&entry[tab + 1..]).replace('\n', " ");
                    pack_input.push_str(oid);
                    pack_input.push(' ');
                    pack_input.push_str(&path);
                    pack_input.push('\n');
                }
            }
        }

        Ok((pack_input, seen))
    }

    /// Writes the slim repository into `dest`: its directories, the pack of `pack_input`
    /// (indexed there), `HEAD` (on `head_branch`, else detached at `full`), its config and
    /// `packed-refs` (`kept_refs` and the branch); returns the abbreviated-hash length written
    /// as `core.abbrev`.
    fn write_slim_files(
        &self,
        dest: &Path,
        full: &str,
        head_branch: Option<&str>,
        mut kept_refs: Vec<(String, String)>,
        pack_input: &str,
    ) -> Result<usize, GitError> {
        let io = |what: &str, e: std::io::Error| {
            self.command_error(what, format!("writing {}: {e}", dest.display()))
        };
        let pack_dir = dest.join("objects").join("pack");
        std::fs::create_dir_all(&pack_dir).map_err(|e| io("slim repository", e))?;
        for d in ["refs/heads", "refs/tags", "objects/info"] {
            std::fs::create_dir_all(dest.join(d)).map_err(|e| io("slim repository", e))?;
        }
        // The pack comes out on stdout and is indexed inside `dest`: pack-objects writing into
        // `dest` itself would make its temporary file in the mirror (read-only mirrors fail) and
        // rename it across file systems (a mirror on a disk, `dest` on a tmpfs or another mount:
        // "Invalid cross-device link").
        //
        // `--window=0`: no search for new deltas. The objects whose delta bases are in the pack
        // keep the mirror's deltas; the others are stored whole. The same objects, a pack a few
        // per cent larger, made in a third of the time (Django: 17.2 → 17.3 MB, 2.3 → 0.8 s).
        let pack = match self.run_with_input(
            &["pack-objects", "--quiet", "--window=0", "--stdout"],
            pack_input.as_bytes().to_vec(),
        ) {
            Ok(pack) => pack,
            Err(e) => return Err(self.missing_objects(full, pack_input).unwrap_or(e)),
        };

        if let Some(b) = head_branch {
            kept_refs.push((b.to_string(), full.to_string()));
        }
        let head = match head_branch {
            Some(b) => format!("ref: {b}\n"),
            None => format!("{full}\n"),
        };
        let abbrev = self.clone_abbrev(full)?;
        let config =
            format!("[core]\n\trepositoryformatversion = 0\n\tbare = true\n\tabbrev = {abbrev}\n");
        for (name, text) in [
            ("HEAD", head),
            ("config", config),
            ("packed-refs", packed_refs(&kept_refs)),
        ] {
            std::fs::write(dest.join(name), text).map_err(|e| io("slim repository", e))?;
        }
        let slim = GitMirror::open(dest)?;
        slim.run_with_input(&["index-pack", "--stdin"], pack)?;
        // The clone must find the commit and its tree; a failure here is a bug, not the mirror's.
        slim.run(&["cat-file", "-e", &format!("{full}^{{tree}}")])?;
        Ok(abbrev)
    }

    /// For a tag of a tag: every tag object down to the commit, and the commit; `None` when the
    /// chain ends at a tree or a blob.
    fn peel_tag_chain(&self, tag: &str) -> Result<Option<(String, Vec<String>)>, GitError> {
        let mut chain = Vec::new();
        let mut current = tag.to_string();
        // A chain longer than this is a loop or an attack, not a release tag.
        for _ in 0..32 {
            let text = self.run(&["cat-file", "tag", &current])?;
            let text = String::from_utf8_lossy(&text);
            let field = |k: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(k))
                    .map(|v| v.trim().to_string())
            };
            chain.push(current.clone());
            match (field("object "), field("type ").as_deref()) {
                (Some(o), Some("commit")) => return Ok(Some((o, chain))),
                (Some(o), Some("tag")) => current = o,
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// After a failed pack: the objects of `pack_input` (`<id>[ <path>]` lines) that the mirror
    /// does not have, as [`GitError::MissingObjects`]; `None` when it has them all (the failure
    /// was something else).
    fn missing_objects(&self, commit: &str, pack_input: &str) -> Option<GitError> {
        let ids: String = pack_input
            .lines()
            .filter_map(|l| l.split(' ').next())
            .map(|id| format!("{id}\n"))
            .collect();
        let answer = self
            .run_with_input(&["cat-file", "--batch-check"], ids.into_bytes())
            .ok()?;
        let absent: HashSet<String> = String::from_utf8_lossy(&answer)
            .lines()
            .filter_map(|l| l.strip_suffix(" missing"))
            .map(str::to_string)
            .collect();
        let missing: Vec<String> = pack_input
            .lines()
            .filter_map(|l| {
                let (id, path) = l.split_once(' ').unwrap_or((l, ""));
                absent.contains(id).then(|| match path {
                    "" => id.to_string(),
                    p => format!("{p} ({id})"),
                })
            })
            .collect();
        (!missing.is_empty()).then(|| GitError::MissingObjects {
            mirror: self.path().to_path_buf(),
            commit: commit.to_string(),
            missing,
        })
    }

    /// The abbreviated length of `commit` in a full clone: git's default for the number of
    /// objects such a clone holds, lengthened while it is ambiguous in the mirror.
    fn clone_abbrev(&self, commit: &str) -> Result<usize, GitError> {
        let refs = self.run(&["for-each-ref", "--format=%(objectname) %(refname)"])?;
        let head = self
            .run(&["rev-parse", "-q", "--verify", "HEAD"])
            .unwrap_or_default();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        refs.hash(&mut h);
        head.hash(&mut h);
        let key = (self.path().to_path_buf(), h.finish());
        let cached = clone_count_cache()
            .lock()
            .ok()
            .and_then(|c| c.get(&key).copied());
        let count = match cached {
            Some(n) => n,
            None => {
                // What `git clone` fetches: the branches, the tags and a detached HEAD. A mirror
                // may lack some objects (a snapshot without its largest files): they are counted
                // as a full clone would hold them (`--missing=print` lists them with a `?`).
                let mut args = vec![
                    "rev-list",
                    "--objects",
                    "--missing=print",
                    "--branches",
                    "--tags",
                ];
                let detached = self.run(&["symbolic-ref", "-q", "HEAD"]).is_err();
                if detached && !head.is_empty() {
                    args.push("HEAD");
                }
                let out = self.run(&args)?;
                let n = out.split(|b| *b == b'\n').filter(|l| !l.is_empty()).count() as u64;
                if let Ok(mut c) = clone_count_cache().lock() {
                    c.insert(key, n);
                }
                n
            }
        };
        let len = swtbench_patch::gitdiff::abbrev_len(count);
        let short = self.run(&["rev-parse", &format!("--short={len}"), commit])?;
        Ok(String::from_utf8_lossy(&short).trim().len().max(len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_refs_parse_annotated_and_lightweight() {
        let t = parse_tag_refs(
            "aa:commit:::refs/tags/v1\nbb:tag:cc:commit:refs/tags/v2\n\ndd:tag:ee:tag:refs/tags/n\n",
        );
        assert_eq!(t.len(), 3);
        assert_eq!((t[0].kind.as_str(), t[0].peeled.as_str()), ("commit", ""));
        assert_eq!((t[1].object.as_str(), t[1].peeled.as_str()), ("bb", "cc"));
        assert_eq!(t[2].peeled_kind, "tag");
    }

    #[test]
    fn packed_refs_are_sorted_bytewise() {
        let s = packed_refs(&[
            ("refs/tags/v2".into(), "b".into()),
            ("refs/heads/main".into(), "a".into()),
            ("refs/tags/V1".into(), "c".into()),
        ]);
        assert_eq!(
            s,
            "# pack-refs with: sorted \na refs/heads/main\nc refs/tags/V1\nb refs/tags/v2\n"
        );
    }
}

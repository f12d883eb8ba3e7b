//! The repository as the extraction attempts see it: the base commit's files (read once, shared by
//! every attempt) plus the edits made so far. [`crate::extract`] keeps one [`Workspace`] across
//! its attempts and puts back a copy taken before an attempt to drop that attempt's edits (the
//! fixed styles); in the parity styles a failed attempt's edits stay, as in the original's work
//! tree. Pure apart from the reads it delegates.

use std::cell::RefCell;
use std::collections::BTreeMap;

use crate::error::AttemptError;
use crate::gitdiff::FileChange;
use crate::source::{FileSource, SourceErrorKind};

/// The base commit's files, read on demand and remembered.
pub(crate) struct BaseFiles<'s> {
    source: &'s dyn FileSource,
    cache: RefCell<BTreeMap<String, Option<String>>>,
}

impl<'s> BaseFiles<'s> {
    pub(crate) fn new(source: &'s dyn FileSource) -> Self {
        BaseFiles {
            source,
            cache: RefCell::new(BTreeMap::new()),
        }
    }

    pub(crate) fn get(&self, path: &str) -> Result<Option<String>, AttemptError> {
        if let Some(hit) = self.cache.borrow().get(path) {
            return Ok(hit.clone());
        }
        let content = self.source.read(path).map_err(|e| match e.kind {
            SourceErrorKind::Unavailable => AttemptError::Source {
                path: e.path,
                detail: e.detail,
            },
            SourceErrorKind::NotAFile | SourceErrorKind::NotText => AttemptError::NotReadable {
                path: e.path,
                detail: e.detail,
            },
        })?;
        self.cache
            .borrow_mut()
            .insert(path.to_string(), content.clone());
        Ok(content)
    }
}

/// One attempt's view: base files plus edits.
#[derive(Clone)]
pub(crate) struct Workspace<'b> {
    base: &'b BaseFiles<'b>,
    edits: BTreeMap<String, String>,
}

impl<'b> Workspace<'b> {
    pub(crate) fn new(base: &'b BaseFiles<'b>) -> Self {
        Workspace {
            base,
            edits: BTreeMap::new(),
        }
    }

    pub(crate) fn read(&self, path: &str) -> Result<Option<String>, AttemptError> {
        match self.edits.get(path) {
            Some(c) => Ok(Some(c.clone())),
            None => self.base.get(path),
        }
    }

    /// Whether the file exists at the base commit (edits do not count).
    pub(crate) fn exists_at_base(&self, path: &str) -> Result<bool, AttemptError> {
        Ok(self.base.get(path)?.is_some())
    }

    /// The files whose content differs from what `before` (an earlier copy) had, sorted.
    pub(crate) fn edited_since(&self, before: &Workspace<'_>) -> Vec<String> {
        self.edits
            .iter()
            .filter(|(path, new)| before.read(path).ok().flatten().as_deref() != Some(new.as_str()))
            .map(|(path, _)| path.clone())
            .collect()
    }

    pub(crate) fn write(&mut self, path: &str, content: String) {
        self.edits.insert(path.to_string(), content);
    }

    /// Every file whose content differs from the base commit, sorted by path.
    pub(crate) fn changes(&self) -> Result<Vec<FileChange>, AttemptError> {
        let mut out = Vec::new();
        for (path, new) in &self.edits {
            let old = self.base.get(path)?;
            if old.as_deref() != Some(new.as_str()) {
                out.push(FileChange {
                    path: path.clone(),
                    old,
                    new: new.clone(),
                });
            }
        }
        Ok(out)
    }
}

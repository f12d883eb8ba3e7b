//! A disk budget for the instance images a long-running process keeps warm (`swtbench serve
//! --image-cache-size`, `swtbench worker --image-cache-size`): when the own layers of the
//! instance images its evaluations used take more than the budget, the least recently used ones
//! are removed until they fit. Images it never used (other runs') are not counted or touched;
//! images an evaluation of this process is using are never chosen; base and environment images
//! (a few, shared by many instances, minutes to build) are kept. An instance image removed here
//! is built again (from its kept environment image) by the next prediction that needs it.
//!
//! [`choose`] decides from data; [`Engine::keep_images_within`] lists the engine's images and
//! removes what it chose.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::anyhow;
use swtbench_backend::labels::{owned_tag, LabelFilter, KIND};
use swtbench_backend::ContainerBackend;

use swtbench_plan::limits::human_bytes;

use crate::evaluate::Engine;
use crate::{Error, Result};

/// An instance image as the budget sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedImage {
    pub tag: String,
    /// The bytes it holds of its own (its layers that no other image shares).
    pub bytes: u64,
    /// When an evaluation last used it (seconds since the Unix epoch).
    pub last_used: i64,
}

/// The images to remove so that the rest fit in `budget` bytes: least recently used first
/// (ties by tag), never one of `in_use`. When the images in use alone exceed the budget, every
/// other image is chosen and the budget stays exceeded until they are released.
pub fn choose<'a>(
    images: &'a [CachedImage],
    in_use: &BTreeSet<String>,
    budget: u64,
) -> Vec<&'a CachedImage> {
    let mut total: u64 = images.iter().map(|i| i.bytes).sum();
    let mut oldest_first: Vec<&CachedImage> = images.iter().collect();
    oldest_first.sort_by(|a, b| a.last_used.cmp(&b.last_used).then(a.tag.cmp(&b.tag)));
    let mut out = Vec::new();
    for image in oldest_first {
        if total <= budget {
            break;
        }
        if in_use.contains(&image.tag) {
            continue;
        }
        total -= image.bytes;
        out.push(image);
    }
    out
}

/// What [`Engine::keep_images_within`] found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Evicted {
    /// The instance images' own bytes before and after.
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// The instance images of the record there were.
    pub images: usize,
    /// The images removed, with their own bytes.
    pub removed: Vec<(String, u64)>,
    /// Chosen but not removed (the engine refused, e.g. a container of another process uses it),
    /// with why.
    pub kept: Vec<(String, String)>,
}

impl Evicted {
    /// One line for the log, when anything was removed or refused.
    pub fn summary(&self, budget: u64) -> Option<String> {
        if self.removed.is_empty() && self.kept.is_empty() {
            return None;
        }
        let mut line = format!(
            "image cache: {} instance image(s) took {}, over the budget of {}; removed the {} \
             least recently used ({}), {} left",
            self.images,
            human_bytes(self.bytes_before),
            human_bytes(budget),
            self.removed.len(),
            self.removed
                .iter()
                .map(|(t, _)| t.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            human_bytes(self.bytes_after),
        );
        for (tag, why) in &self.kept {
            line.push_str(&format!("; kept {tag}: {why}"));
        }
        Some(line)
    }
}

impl Engine {
    /// Removes the least recently used instance images until their own layers fit in `budget`
    /// bytes ([`choose`]). `last_used` says when each tag was last used: only those tags are
    /// counted and may be removed; `in_use` are never removed. Without an engine, nothing to do.
    pub fn keep_images_within(
        &self,
        budget: u64,
        last_used: &BTreeMap<String, i64>,
        in_use: &BTreeSet<String>,
    ) -> Result<Evicted> {
        let Some(backend) = self.backend() else {
            return Ok(Evicted::default());
        };
        self.block_on(async {
            let filter = LabelFilter::managed().and(KIND, "instance");
            let listed = backend.images_with_own_size(&filter).await.map_err(|e| {
                Error::environment(anyhow!(
                    "listing the instance images for the cache budget: {e}"
                ))
            })?;
            let images: Vec<CachedImage> = listed
                .into_iter()
                .filter_map(|(info, bytes)| {
                    let listed = owned_tag(&info.labels, &info.tags)?;
                    // Only the images this process's evaluations used are its cache: those of
                    // other runs on the engine are theirs. Their plans name them as they are
                    // built (Podman lists them under `localhost/`).
                    let tag = [listed.as_str(), listed.trim_start_matches("localhost/")]
                        .into_iter()
                        .find(|t| last_used.contains_key(*t))?
                        .to_string();
                    let last_used = last_used[&tag];
                    Some(CachedImage {
                        tag,
                        bytes,
                        last_used,
                    })
                })
                .collect();
            let bytes_before: u64 = images.iter().map(|i| i.bytes).sum();
            let mut out = Evicted {
                bytes_before,
                bytes_after: bytes_before,
                images: images.len(),
                ..Evicted::default()
            };
            for image in choose(&images, in_use, budget) {
                // Not forced: an image a container still uses (another process's evaluation)
                // stays.
                match backend.image_remove(&image.tag, false).await {
                    Ok(_) => {
                        out.bytes_after -= image.bytes;
                        out.removed.push((image.tag.clone(), image.bytes));
                    }
                    Err(e) => out.kept.push((image.tag.clone(), e.to_string())),
                }
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(tag: &str, bytes: u64, last_used: i64) -> CachedImage {
        CachedImage {
            tag: tag.into(),
            bytes,
            last_used,
        }
    }

    fn tags(chosen: Vec<&CachedImage>) -> Vec<&str> {
        chosen.into_iter().map(|i| i.tag.as_str()).collect()
    }

    #[test]
    fn the_least_recently_used_go_first_until_the_rest_fit() {
        let images = [image("a", 40, 30), image("b", 40, 10), image("c", 40, 20)];
        let none = BTreeSet::new();
        assert_eq!(tags(choose(&images, &none, 120)), Vec::<&str>::new());
        assert_eq!(tags(choose(&images, &none, 80)), ["b"]);
        assert_eq!(tags(choose(&images, &none, 79)), ["b", "c"]);
        assert_eq!(tags(choose(&images, &none, 0)), ["b", "c", "a"]);
    }

    #[test]
    fn images_in_use_are_never_chosen_even_over_budget() {
        let images = [image("a", 40, 30), image("b", 40, 10), image("c", 40, 20)];
        let in_use = BTreeSet::from(["b".to_string()]);
        assert_eq!(tags(choose(&images, &in_use, 80)), ["c"]);
        let all = BTreeSet::from(["a".to_string(), "b".to_string(), "c".to_string()]);
        assert_eq!(tags(choose(&images, &all, 0)), Vec::<&str>::new());
    }

    #[test]
    fn ties_of_last_use_go_by_tag() {
        let images = [image("z", 10, 5), image("m", 10, 5)];
        assert_eq!(tags(choose(&images, &BTreeSet::new(), 10)), ["m"]);
    }

    #[test]
    fn the_summary_names_what_went_and_what_stayed() {
        let e = Evicted {
            bytes_before: 3 << 30,
            bytes_after: 1 << 30,
            images: 3,
            removed: vec![("i1:latest".into(), 1 << 30), ("i2:latest".into(), 1 << 30)],
            kept: vec![("i3:latest".into(), "in use".into())],
        };
        let line = e.summary(1 << 30).expect("a line");
        assert!(line.contains("3 instance image(s)"), "{line}");
        assert!(line.contains("i1:latest, i2:latest"), "{line}");
        assert!(line.contains("kept i3:latest: in use"), "{line}");
        assert_eq!(Evicted::default().summary(1), None);
    }
}

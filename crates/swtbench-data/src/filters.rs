//! The SWT-Bench filter lists: instance ids removed from SWE-bench to form SWT-Bench (§2.1).
//!
//! Embedded from `assets/swt-filters/`; `--filter-swt` drops the ids of the list that belongs to
//! the dataset. Lite 300 − 24 = 276, Verified 500 − 67 = 433, Full 2294 − 311 = 1983.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

const LITE: &str = include_str!("../../../assets/swt-filters/lite.txt");
const VERIFIED: &str = include_str!("../../../assets/swt-filters/verified.txt");
const FULL: &str = include_str!("../../../assets/swt-filters/full.txt");

/// Which benchmark's filter list applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SwtFilter {
    Lite,
    Verified,
    Full,
}

impl SwtFilter {
    pub const ALL: [SwtFilter; 3] = [SwtFilter::Lite, SwtFilter::Verified, SwtFilter::Full];

    /// `lite`, `verified` or `full`.
    pub fn name(self) -> &'static str {
        match self {
            SwtFilter::Lite => "lite",
            SwtFilter::Verified => "verified",
            SwtFilter::Full => "full",
        }
    }

    /// The ids this list removes, in file order.
    pub fn ids(self) -> impl Iterator<Item = &'static str> {
        let text = match self {
            SwtFilter::Lite => LITE,
            SwtFilter::Verified => VERIFIED,
            SwtFilter::Full => FULL,
        };
        text.lines().map(str::trim).filter(|l| !l.is_empty())
    }

    pub fn id_set(self) -> BTreeSet<&'static str> {
        self.ids().collect()
    }

    pub fn len(self) -> usize {
        self.ids().count()
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    pub fn contains(self, id: &str) -> bool {
        self.ids().any(|x| x == id)
    }
}

impl fmt::Display for SwtFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of the SWT filter lists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown SWT filter list {name:?} (expected lite, verified or full)")]
pub struct UnknownFilterList {
    /// The name as given, lower-cased.
    pub name: String,
}

impl FromStr for SwtFilter {
    type Err = UnknownFilterList;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "lite" => Ok(SwtFilter::Lite),
            "verified" => Ok(SwtFilter::Verified),
            "full" => Ok(SwtFilter::Full),
            other => Err(UnknownFilterList {
                name: other.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_lists_have_the_published_sizes() {
        assert_eq!(SwtFilter::Lite.len(), 24);
        assert_eq!(SwtFilter::Verified.len(), 67);
        assert_eq!(SwtFilter::Full.len(), 311);
        for f in SwtFilter::ALL {
            assert_eq!(f.id_set().len(), f.len(), "{f} has duplicates");
            assert!(f.ids().all(|id| id.contains("__")), "{f}");
        }
        assert!(SwtFilter::Lite.contains("django__django-13658"));
        assert!(!SwtFilter::Lite.contains("django__django-11099"));
        assert_eq!("Verified".parse::<SwtFilter>(), Ok(SwtFilter::Verified));
        assert!("x".parse::<SwtFilter>().is_err());
    }
}

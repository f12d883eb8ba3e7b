//! Frozen environments as pip pins: for every SWE-bench Verified instance, the exact package set of
//! its official conda environment, turned into `NAME==VERSION` pins on PyPI for the `uv` provider.
//!
//! The data is `assets/environments/frozen-pins.json.gz`, made by `scripts/frozen-pins.py` from
//! the SWE-bench repository's frozen `environment.yml` files (the rules of the conversion are in
//! that script and in `docs/environments.md`). This module only decompresses and answers lookups;
//! which pins an instance gets when it has none of its own (borrowed from a Verified instance of
//! the same repository and version, or none) is decided here too, as data ([`PinChoice`]).

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::OnceLock;

use serde::Deserialize;

/// The compressed table compiled into the binary.
pub const EMBEDDED_PINS: &[u8] = include_bytes!("../../../assets/environments/frozen-pins.json.gz");

/// One frozen environment.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FrozenEnv {
    /// The exact Python version of the frozen environment (`3.9.20`).
    pub python: String,
    /// `name==version`, sorted; the project's own distribution is not among them.
    pub pins: Vec<String>,
    /// What the conversion left out and why (`conda-only: libgcc-ng`, …).
    pub dropped: Vec<String>,
}

/// Which Verified instance an environment belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FrozenInstance {
    pub repo: String,
    pub version: String,
    /// Key into [`FrozenPins::environments`].
    pub env: String,
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FrozenPins {
    pub format: u32,
    /// Where the data comes from.
    pub source: String,
    pub environments: BTreeMap<String, FrozenEnv>,
    pub instances: BTreeMap<String, FrozenInstance>,
}

/// What an instance gets, and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinChoice<'a> {
    /// The instance's own frozen environment.
    Own { env: &'a FrozenEnv },
    /// No frozen environment of its own: the one of `from`, a Verified instance of the same
    /// repository and version (the environment most of them share; ties go to the first id).
    Borrowed { from: &'a str, env: &'a FrozenEnv },
    /// No Verified instance of this repository and version: the spec's packages, unpinned.
    None,
}

impl<'a> PinChoice<'a> {
    pub fn env(&self) -> Option<&'a FrozenEnv> {
        match self {
            PinChoice::Own { env } | PinChoice::Borrowed { env, .. } => Some(env),
            PinChoice::None => None,
        }
    }

    /// One line saying where the pins come from, for people.
    pub fn describe(&self, instance_id: &str) -> String {
        match self {
            PinChoice::Own { .. } => {
                format!("frozen environment of {instance_id} (SWE-bench Verified)")
            }
            PinChoice::Borrowed { from, .. } => format!(
                "no frozen environment of its own: borrowed from {from} (same repository and version)"
            ),
            PinChoice::None => "no frozen environment for this repository and version: the spec's packages, unpinned".to_string(),
        }
    }
}

/// Why the table could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the frozen pin table {origin} is unreadable: {message}")]
pub struct PinsError {
    pub origin: String,
    pub message: String,
}

impl FrozenPins {
    /// The embedded table, decompressed and parsed once.
    pub fn embedded() -> &'static FrozenPins {
        static PINS: OnceLock<FrozenPins> = OnceLock::new();
        PINS.get_or_init(|| {
            // Checked by this crate's tests; failing here is a build defect.
            FrozenPins::from_gzip(EMBEDDED_PINS, "assets/environments/frozen-pins.json.gz")
                .expect("the embedded frozen pin table parses")
        })
    }

    /// Parses gzip-compressed JSON in the format `scripts/frozen-pins.py` writes.
    pub fn from_gzip(bytes: &[u8], origin: &str) -> Result<FrozenPins, PinsError> {
        let err = |message: String| PinsError {
            origin: origin.to_string(),
            message,
        };
        let mut text = String::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_string(&mut text)
            .map_err(|e| err(format!("not gzip-compressed UTF-8: {e}")))?;
        let pins: FrozenPins =
            serde_json::from_str(&text).map_err(|e| err(format!("not the expected JSON: {e}")))?;
        if pins.format != 1 {
            return Err(err(format!(
                "format {} (this swtbench reads 1)",
                pins.format
            )));
        }
        if let Some((id, i)) = pins
            .instances
            .iter()
            .find(|(_, i)| !pins.environments.contains_key(&i.env))
        {
            return Err(err(format!(
                "{id} names environment {} which is missing",
                i.env
            )));
        }
        Ok(pins)
    }

    /// The pins for an instance (see [`PinChoice`]).
    pub fn for_instance(&self, instance_id: &str, repo: &str, version: &str) -> PinChoice<'_> {
        if let Some(i) = self.instances.get(instance_id) {
            if i.repo == repo && i.version == version {
                if let Some(env) = self.environments.get(&i.env) {
                    return PinChoice::Own { env };
                }
            }
        }
        // The environment most Verified instances of (repo, version) share; ties: the first id.
        let mut count: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
        for (id, i) in &self.instances {
            if i.repo == repo && i.version == version {
                count.entry(i.env.as_str()).or_insert((0, id.as_str())).0 += 1;
            }
        }
        let best = count
            .values()
            .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(a.1)))
            .copied();
        match best {
            Some((_, from)) => match self
                .instances
                .get(from)
                .and_then(|i| self.environments.get(&i.env))
            {
                Some(env) => PinChoice::Borrowed { from, env },
                None => PinChoice::None,
            },
            None => PinChoice::None,
        }
    }
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use super::*;

    fn names(env: &FrozenEnv) -> Vec<&str> {
        env.pins
            .iter()
            .map(|p| p.split("==").next().unwrap())
            .collect()
    }

    /// The instance's own frozen environment (the test fails when it has none).
    fn own<'a>(t: &'a FrozenPins, id: &str, repo: &str, version: &str) -> &'a FrozenEnv {
        match t.for_instance(id, repo, version) {
            PinChoice::Own { env } => env,
            other => panic!("{id} has its own frozen environment, not {other:?}"),
        }
    }

    #[test]
    fn embedded_table_covers_verified() {
        let t = FrozenPins::embedded();
        assert_eq!(t.instances.len(), 500);
        assert!(t.source.contains("SWE-bench"), "{}", t.source);
        for env in t.environments.values() {
            for pin in &env.pins {
                let (name, version) = pin.split_once("==").unwrap();
                assert!(!name.is_empty() && !version.is_empty(), "{pin}");
            }
        }
    }

    #[test]
    fn astropy_12907_keeps_pip_pins_and_drops_conda_only_packages() {
        let t = FrozenPins::embedded();
        let env = own(t, "astropy__astropy-12907", "astropy/astropy", "4.3");
        assert_eq!(env.python, "3.9.20");
        // pip section, as written
        assert!(env.pins.contains(&"pytest==7.4.0".to_string()));
        assert!(env.pins.contains(&"numpy==1.25.2".to_string()));
        // conda Python packages become pins of the same version (pip=24.2=py39h06a4308_0)
        assert!(env.pins.contains(&"pip==24.2".to_string()));
        assert!(env.pins.contains(&"wheel==0.44.0".to_string()));
        // setuptools: the pip pin (68.0.0) wins over nothing else here
        assert!(env.pins.contains(&"setuptools==68.0.0".to_string()));
        let n = names(env);
        for conda_only in [
            "python",
            "libgcc-ng",
            "openssl",
            "ca-certificates",
            "_libgcc_mutex",
            "ncurses",
            "readline",
            "sqlite",
            "tk",
            "xz",
            "zlib",
            "libffi",
            "ld_impl_linux-64",
            "tzdata",
        ] {
            assert!(!n.contains(&conda_only), "{conda_only} in {n:?}");
        }
        assert!(env.dropped.contains(&"conda-only: libgcc-ng".to_string()));
        // the project itself is installed from the checkout
        assert!(!n.contains(&"astropy"), "{n:?}");
    }

    #[test]
    fn builds_without_a_wheel_for_the_python_take_the_nearest_release_with_one() {
        // scikit-learn 1.3's 25747 (Python 3.9): conda's NumPy 1.19.2 and SciPy 1.5.2 have no cp39
        // wheel on PyPI, and SciPy's sources do not build on a slim image.
        let t = FrozenPins::embedded();
        let env = own(
            t,
            "scikit-learn__scikit-learn-25747",
            "scikit-learn/scikit-learn",
            "1.3",
        );
        assert!(env.python.starts_with("3.9"), "{}", env.python);
        for pin in ["numpy==1.19.3", "scipy==1.5.4"] {
            assert!(
                env.pins.contains(&pin.to_string()),
                "{pin} in {:?}",
                env.pins
            );
        }
        assert!(
            env.dropped
                .iter()
                .any(|d| d.ends_with("numpy==1.19.2 -> 1.19.3")),
            "{:?}",
            env.dropped
        );
        // On Python 3.6, where PyPI has the wheels, the frozen versions stay.
        let env = own(
            t,
            "scikit-learn__scikit-learn-10297",
            "scikit-learn/scikit-learn",
            "0.20",
        );
        assert!(env.pins.contains(&"numpy==1.19.2".to_string()));
        assert!(env.pins.contains(&"scipy==1.5.2".to_string()));
    }

    #[test]
    fn standard_library_backports_are_dropped_where_python_has_the_module() {
        // xarray 0.12's frozen environment (Python 3.10) had conda-forge's empty
        // backports.zoneinfo; PyPI serves only its sources, which do not build on 3.10.
        let t = FrozenPins::embedded();
        let env = own(t, "pydata__xarray-3095", "pydata/xarray", "0.12");
        assert!(env.python.starts_with("3.10"), "{}", env.python);
        assert!(
            !names(env).contains(&"backports.zoneinfo"),
            "{:?}",
            names(env)
        );
        assert!(
            env.dropped.contains(
                &"in the standard library from Python 3.9 (zoneinfo): backports.zoneinfo==0.2.1"
                    .to_string()
            ),
            "{:?}",
            env.dropped
        );
    }

    #[test]
    fn conda_names_are_mapped_to_pypi_names() {
        let t = FrozenPins::embedded();
        // xarray environments have conda's matplotlib-base: it becomes the PyPI matplotlib pin
        // (the xarray project itself is left out).
        let (id, _) = t
            .instances
            .iter()
            .find(|(_, i)| {
                i.repo == "pydata/xarray"
                    && t.environments[&i.env]
                        .pins
                        .iter()
                        .any(|p| p.starts_with("matplotlib=="))
            })
            .expect("an xarray instance with matplotlib");
        let i = &t.instances[id];
        let env = t.environments[&i.env].clone();
        let n = names(&env);
        assert!(n.contains(&"matplotlib"), "{id}: {n:?}");
        assert!(
            !n.contains(&"matplotlib-base") && !n.contains(&"numpy-base"),
            "{n:?}"
        );
        assert!(!n.contains(&"xarray"), "{n:?}");
        // One pin per normalised name.
        let mut norm: Vec<String> = n
            .iter()
            .map(|s| s.to_lowercase().replace(['_', '.'], "-"))
            .collect();
        let len = norm.len();
        norm.sort();
        norm.dedup();
        assert_eq!(norm.len(), len, "{id}: duplicate names in {n:?}");
    }

    #[test]
    fn unknown_instances_borrow_from_the_same_repo_and_version() {
        let t = FrozenPins::embedded();
        match t.for_instance("django__django-99999", "django/django", "3.0") {
            PinChoice::Borrowed { from, env } => {
                assert!(from.starts_with("django__django-"), "{from}");
                assert_eq!(t.instances[from].version, "3.0");
                assert!(env.pins.iter().any(|p| p.starts_with("asgiref==")));
                assert!(!names(env).contains(&"django"));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            t.for_instance("acme__w-1", "acme/w", "1.0"),
            PinChoice::None
        );
        // A known id with another version is not its own environment.
        assert!(matches!(
            t.for_instance("django__django-11099", "django/django", "9.9"),
            PinChoice::None
        ));
    }

    #[test]
    fn corrupt_tables_are_refused_with_their_origin() {
        let e = FrozenPins::from_gzip(b"not gzip", "x.json.gz")
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.json.gz") && e.contains("gzip"), "{e}");
    }
}

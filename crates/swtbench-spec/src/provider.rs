//! The ways an image's Python environment is made (a spec entry's `provider`).

/// How the Python environment of an image is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Provider {
    /// Miniconda in `/opt/miniconda3`, environment `testbed` (the original's only way).
    #[default]
    Conda,
    /// `python3 -m venv /opt/swtbench-venv` with an interpreter already in the base image, then pip.
    Venv,
    /// uv from PyPI on a Python image (`python:<version>-slim-bookworm` by default): `uv venv`
    /// into `/opt/swtbench-venv`, then `uv pip install` (the frozen pins, when the entry asks).
    Uv,
}

impl Provider {
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::Conda => "conda",
            Provider::Venv => "venv",
            Provider::Uv => "uv",
        }
    }

    /// Parses `conda`, `venv` or `uv`.
    pub fn parse(s: &str) -> Option<Provider> {
        match s {
            "conda" => Some(Provider::Conda),
            "venv" => Some(Provider::Venv),
            "uv" => Some(Provider::Uv),
            _ => None,
        }
    }
}

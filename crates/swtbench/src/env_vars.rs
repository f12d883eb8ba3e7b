//! Every environment variable swtbench reads is named in [`swtbench_app::env_vars`].

pub use swtbench_app::env_vars::*;

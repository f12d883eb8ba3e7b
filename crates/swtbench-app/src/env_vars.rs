//! Every environment variable swtbench reads, in one place, and the one reader of the process
//! environment: the library crates take the values as parameters ([`var`] is the lookup handed to
//! them), so that what the environment says is read here and nowhere else.

/// Hugging Face hub endpoint (default `https://huggingface.co`).
// Read by `swtbench_data::hub::HubConfig::from_env`; listed so every variable is named here
pub const HF_ENDPOINT: &str = "HF_ENDPOINT";
/// Hugging Face home; the dataset cache lives under `$HF_HOME/swtbench/hub` (default
/// `~/.cache/huggingface`); a token saved by `huggingface-cli login` in `$HF_HOME/token` is used
/// when `HF_TOKEN` is unset.
// Read by `swtbench_data::hub::HubConfig::from_env`; listed so every variable is named here
pub const HF_HOME: &str = "HF_HOME";
/// Hugging Face access token for gated or private datasets.
pub const HF_TOKEN: &str = "HF_TOKEN";
/// Directory of bare git mirrors `<owner>__<name>.git` (same as `--repo-mirror`).
pub const SWTBENCH_REPO_MIRROR: &str = "SWTBENCH_REPO_MIRROR";
/// Cache directory for downloads (default `~/.cache/swtbench`).
pub const SWTBENCH_CACHE_DIR: &str = "SWTBENCH_CACHE_DIR";
/// CA bundle passed into image builds and containers (same as `--ca-bundle`).
pub const SSL_CERT_FILE: &str = "SSL_CERT_FILE";
/// Set to 1/true to forbid network use for datasets (same as `--offline`).
pub const SWTBENCH_OFFLINE: &str = "SWTBENCH_OFFLINE";
/// The Hugging Face convention for offline mode; 1/true implies `--offline`.
pub const HF_HUB_OFFLINE: &str = "HF_HUB_OFFLINE";
/// Base URL used instead of `https://raw.githubusercontent.com/` for requirement files (a local
/// server or a caching proxy); files are fetched as `<base><owner>/<name>/<commit>/<path>`.
pub const SWTBENCH_GITHUB_RAW: &str = "SWTBENCH_GITHUB_RAW";
/// Container engine endpoint (`unix:///…`, `tcp://…`); unset: `/var/run/docker.sock`, then the
/// Podman sockets. Read by `swtbench_backend::DockerBackend::connect`.
// Read inside the backend library; listed so every variable is named here
pub const DOCKER_HOST: &str = "DOCKER_HOST";
/// Seconds the container engine has to answer each short call (create, start, copy, inspect,
/// kill, remove, list; default 60). A call without an answer makes swtbench ping the engine; no
/// answer to that within 5 s ends the run as an environment fault (exit code 3).
pub const SWTBENCH_ENGINE_DEADLINE_SECS: &str = "SWTBENCH_ENGINE_DEADLINE_SECS";
/// Seconds a command's output or a build log may stay silent before swtbench pings the engine to
/// tell a quiet test from a hung engine (default 30).
pub const SWTBENCH_ENGINE_QUIET_SECS: &str = "SWTBENCH_ENGINE_QUIET_SECS";
/// Seconds the engine has to answer a liveness ping before it counts as lost and the run stops
/// (default 5). Raise it on a machine whose engine stalls under load (slow storage drivers such as
/// fuse-overlayfs while large layers are committed), where a busy engine would otherwise end a
/// long evaluation.
pub const SWTBENCH_ENGINE_PROBE_SECS: &str = "SWTBENCH_ENGINE_PROBE_SECS";
/// `1`: `run --no-network` (test containers on an isolated network that drops every packet).
/// The test suite sets it (`.cargo/config.toml`), so that no fixture evaluation reaches the
/// internet.
pub const SWTBENCH_NO_NETWORK: &str = "SWTBENCH_NO_NETWORK";
/// Proxy variables passed into image builds as build arguments when set (either case):
/// `HTTP_PROXY`, `HTTPS_PROXY`, `FTP_PROXY`, `NO_PROXY`, `ALL_PROXY`. The full list is
/// `swtbench_backend::network::PROXY_VARIABLES` (read through [`var`]). swtbench's own downloads
/// (datasets, requirement files) go through the first of [`DOWNLOAD_PROXY_VARIABLES`] that is set,
/// except for the hosts of [`NO_PROXY_VARIABLES`] ([`http_config`]).
pub const HTTPS_PROXY: &str = "HTTPS_PROXY";
/// The proxy of swtbench's own downloads: the first of these that is set and not empty.
pub const DOWNLOAD_PROXY_VARIABLES: [&str; 6] = [
    "ALL_PROXY",
    "all_proxy",
    HTTPS_PROXY,
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
];
/// The hosts swtbench's own downloads reach directly (comma-separated): the first of these that
/// is set.
pub const NO_PROXY_VARIABLES: [&str; 2] = ["NO_PROXY", "no_proxy"];
/// Directory of Docker's `config.json` (default `~/.docker`): registry credentials for
/// `--registry` (`auths`, `credHelpers`, `credsStore`).
pub const DOCKER_CONFIG: &str = "DOCKER_CONFIG";
/// The home directory, for `~/.docker/config.json`.
pub const HOME: &str = "HOME";
/// Set and not empty: no colours in the progress display (<https://no-color.org>).
pub const NO_COLOR: &str = "NO_COLOR";
/// `$XDG_CACHE_HOME`, the base of `~/.cache` when set.
pub const XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";

/// The value of the environment variable `name` (none when unset or not Unicode).
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The value of the environment variable `name`, as the OS gives it.
pub fn var_os(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name)
}

/// What the environment says of the cache directories.
#[derive(Debug, Clone, Default)]
pub struct CacheEnv {
    /// `SWTBENCH_CACHE_DIR`.
    pub swtbench_cache_dir: Option<std::ffi::OsString>,
    /// `XDG_CACHE_HOME`.
    pub xdg_cache_home: Option<std::ffi::OsString>,
    /// `HOME`.
    pub home: Option<std::ffi::OsString>,
}

/// The variables of the cache directories (`SWTBENCH_CACHE_DIR`, `XDG_CACHE_HOME`, `HOME`).
pub fn cache_env() -> CacheEnv {
    CacheEnv {
        swtbench_cache_dir: var_os(SWTBENCH_CACHE_DIR),
        xdg_cache_home: var_os(XDG_CACHE_HOME),
        home: var_os(HOME),
    }
}

/// The build network of image builds: the CA bundle (`ca_bundle`, else `$SSL_CERT_FILE` when it
/// names a file) and the proxy variables (see `swtbench_backend::BuildNetwork::from_vars`).
pub fn build_network(
    ca_bundle: Option<&std::path::Path>,
) -> Result<swtbench_backend::BuildNetwork, swtbench_backend::BackendError> {
    swtbench_backend::BuildNetwork::from_vars(ca_bundle, var)
}

/// [`build_network`], a CA bundle that cannot be read being an input error (`--ca-bundle`).
pub fn checked_build_network(
    ca_bundle: Option<&std::path::Path>,
) -> crate::Result<swtbench_backend::BuildNetwork> {
    build_network(ca_bundle)
        .map_err(|e| crate::Error::input(e).with_hint("--ca-bundle must name a readable file"))
}

/// The HTTP client settings of downloads (datasets, requirement files): the defaults, with the CA
/// bundle `$SSL_CERT_FILE` names when it is set (else the system's bundle).
pub fn http_config() -> swtbench_data::http::HttpConfig {
    let ca_bundle = match var_os(SSL_CERT_FILE).filter(|v| !v.is_empty()) {
        Some(path) => swtbench_data::http::CaBundle::File(path.into()),
        None => swtbench_data::http::CaBundle::System,
    };
    swtbench_data::http::HttpConfig {
        ca_bundle,
        proxy: download_proxy(var),
        ..Default::default()
    }
}

/// The proxy of swtbench's own downloads from the variables `lookup` gives (the environment's in
/// [`http_config`]): the first of [`DOWNLOAD_PROXY_VARIABLES`] that is set, with the hosts of the
/// first of [`NO_PROXY_VARIABLES`] that is set; direct when none is.
pub fn download_proxy(
    lookup: impl Fn(&str) -> Option<String>,
) -> swtbench_data::http::ProxySetting {
    let set = |name: &&str| lookup(name).filter(|v| !v.trim().is_empty());
    let Some(url) = DOWNLOAD_PROXY_VARIABLES.iter().find_map(set) else {
        return swtbench_data::http::ProxySetting::Direct;
    };
    let no_proxy = NO_PROXY_VARIABLES
        .iter()
        .find_map(|n| lookup(n))
        .map(|list| {
            list.split(',')
                .map(str::trim)
                .filter(|h| !h.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    swtbench_data::http::ProxySetting::Url {
        url: url.trim().to_string(),
        no_proxy,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use swtbench_data::http::ProxySetting;

    fn lookup<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn downloads_take_the_first_proxy_variable_set_with_its_exceptions() {
        assert_eq!(download_proxy(lookup(&[])), ProxySetting::Direct);
        assert_eq!(
            download_proxy(lookup(&[("HTTP_PROXY", " "), ("NO_PROXY", "x")])),
            ProxySetting::Direct,
            "a blank proxy variable is unset"
        );
        assert_eq!(
            download_proxy(lookup(&[
                ("http_proxy", "http://low:3128"),
                ("HTTPS_PROXY", "http://user:pw@proxy:8080"),
                ("no_proxy", "localhost, .internal,,127.0.0.1"),
            ])),
            ProxySetting::Url {
                url: "http://user:pw@proxy:8080".into(),
                no_proxy: vec!["localhost".into(), ".internal".into(), "127.0.0.1".into()],
            },
            "HTTPS_PROXY comes before http_proxy; NO_PROXY's hosts are kept, trimmed"
        );
        assert_eq!(
            download_proxy(lookup(&[
                ("all_proxy", "socks5://s:1080"),
                ("HTTP_PROXY", "http://h:1")
            ])),
            ProxySetting::Url {
                url: "socks5://s:1080".into(),
                no_proxy: vec![],
            }
        );
    }
}

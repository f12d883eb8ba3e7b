//! Carrying the host's network setup into image builds: a CA bundle (for TLS-intercepting proxies)
//! and proxy variables.
//!
//! Proxy variables need no Dockerfile change: `HTTP_PROXY`, `HTTPS_PROXY`, `FTP_PROXY`, `NO_PROXY`
//! and `ALL_PROXY` (either case) are predefined build arguments that reach every `RUN` without being
//! declared and are not kept in the image's history. A CA bundle cannot get into a build without
//! touching the Dockerfile that is built: the file has to be copied in and the variables that point
//! tools at it (`SSL_CERT_FILE`, `PIP_CERT`, …) have to be declared as `ARG`s. So, only when a
//! bundle is configured, a fixed block is inserted right after every `FROM` instruction of the
//! Dockerfile *sent to the engine*. The rendered Dockerfile (image keys, `image_build_logs/`) stays
//! byte-identical; the block is recorded in the build log. The `ARG`s are build-time only: the
//! images' runtime environment is unchanged, and the only trace left in an image is the bundle file
//! at [`CA_IMAGE_PATH`].
//!
//! The transformation is pure; reading the bundle file happens in [`BuildNetwork::from_vars`],
//! reading the environment in its caller (which hands it a variable lookup).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::{BackendError, Result};
use crate::model::BuildRequest;

/// Where the bundle sits in the build context.
pub const CA_CONTEXT_PATH: &str = ".swtbench/ca-bundle.crt";
/// Where the bundle is copied inside the image.
pub const CA_IMAGE_PATH: &str = "/usr/local/share/swtbench/ca-bundle.crt";
/// Variables pointed at the bundle during `RUN` steps (OpenSSL, pip, requests, curl, git, node,
/// conda).
pub const CA_VARIABLES: &[&str] = &[
    "SSL_CERT_FILE",
    "PIP_CERT",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "NODE_EXTRA_CA_CERTS",
    "CONDA_SSL_VERIFY",
];
/// Proxy variables passed through (the engine predefines them as build arguments).
pub const PROXY_VARIABLES: &[&str] = &[
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "FTP_PROXY",
    "ftp_proxy",
    "NO_PROXY",
    "no_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// The host's CA bundle and proxy settings, to be applied to builds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuildNetwork {
    ca_bundle: Option<Vec<u8>>,
    proxies: BTreeMap<String, String>,
}

impl BuildNetwork {
    /// Nothing to pass: builds go out unchanged.
    pub fn none() -> Self {
        BuildNetwork::default()
    }

    /// Reads the CA bundle from `ca_bundle`, or else from `$SSL_CERT_FILE` when that file exists,
    /// and the proxy variables; `var` looks a variable up (the caller reads the environment).
    pub fn from_vars(
        ca_bundle: Option<&Path>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self> {
        let path = match ca_bundle {
            Some(p) => Some(p.to_path_buf()),
            None => var("SSL_CERT_FILE")
                .map(std::path::PathBuf::from)
                .filter(|p| p.is_file()),
        };
        let bundle = match path {
            Some(p) => Some(std::fs::read(&p).map_err(|e| {
                BackendError::io(format!("reading the CA bundle {}", p.display()), &e)
            })?),
            None => None,
        };
        Ok(Self::from_parts(bundle, var))
    }

    /// From a bundle's bytes and a variable lookup (the environment, or a map in tests).
    pub fn from_parts(ca_bundle: Option<Vec<u8>>, var: impl Fn(&str) -> Option<String>) -> Self {
        let proxies = PROXY_VARIABLES
            .iter()
            .filter_map(|name| {
                var(name)
                    .filter(|v| !v.is_empty())
                    .map(|v| (name.to_string(), v))
            })
            .collect();
        BuildNetwork {
            ca_bundle: ca_bundle.filter(|b| !b.is_empty()),
            proxies,
        }
    }

    pub fn has_ca_bundle(&self) -> bool {
        self.ca_bundle.is_some()
    }

    /// The CA bundle's bytes, when one is configured (for containers that need the network,
    /// such as `envs lock`'s resolve containers).
    pub fn ca_bundle(&self) -> Option<&[u8]> {
        self.ca_bundle.as_deref()
    }

    pub fn proxies(&self) -> &BTreeMap<String, String> {
        &self.proxies
    }

    pub fn is_empty(&self) -> bool {
        self.ca_bundle.is_none() && self.proxies.is_empty()
    }

    /// A proxy on the host's loopback is unreachable from a build container on the default
    /// network; such builds need the host network.
    pub fn needs_host_network(&self) -> bool {
        self.proxies
            .iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("no_proxy"))
            .any(|(_, v)| {
                let rest = v.split("://").nth(1).unwrap_or(v);
                let host = rest.rsplit('@').next().unwrap_or(rest);
                host.starts_with("localhost")
                    || host.starts_with("127.")
                    || host.starts_with("[::1]")
            })
    }

    /// Adjusts a build request: proxy build arguments always; with a CA bundle, the bundle file
    /// in the context, the `ARG` block after every `FROM`, and the variables as build arguments.
    /// Returns lines describing the changes, for the build log.
    pub fn apply(&self, request: &mut BuildRequest) -> Result<Vec<String>> {
        let mut notes = Vec::new();
        for (k, v) in &self.proxies {
            request.build_args.insert(k.clone(), v.clone());
        }
        if !self.proxies.is_empty() {
            let names: Vec<&str> = self.proxies.keys().map(String::as_str).collect();
            notes.push(format!(
                "swtbench: proxy build arguments: {}",
                names.join(" ")
            ));
        }
        if self.needs_host_network() {
            request.host_network = true;
            notes.push("swtbench: building on the host network (the proxy is on loopback)".into());
        }
        if let Some(bundle) = &self.ca_bundle {
            let Some(dockerfile) = request.context.dockerfile().map(str::to_string) else {
                return Err(BackendError::Invalid(format!(
                    "the build context of {} has no UTF-8 Dockerfile",
                    request.tag
                )));
            };
            request
                .context
                .add_file(CA_CONTEXT_PATH, bundle.clone(), 0o644)?;
            request.context.set_dockerfile(inject_ca_block(&dockerfile));
            for var in CA_VARIABLES {
                request
                    .build_args
                    .insert(var.to_string(), CA_IMAGE_PATH.to_string());
            }
            notes.push(
                "swtbench: host CA bundle passed in; after every FROM the engine was sent:".into(),
            );
            notes.extend(ca_block().lines().map(|l| format!("swtbench:   {l}")));
        }
        Ok(notes)
    }
}

/// The block inserted after each `FROM`: two instructions, because with the classic builder every
/// instruction is a committed layer, which costs seconds on slow storage drivers.
pub fn ca_block() -> String {
    format!(
        "COPY {CA_CONTEXT_PATH} {CA_IMAGE_PATH}\nARG {}\n",
        CA_VARIABLES.join(" ")
    )
}

/// Inserts [`ca_block`] after every `FROM` instruction (continuation lines included), leaving every
/// other byte as it was.
pub fn inject_ca_block(dockerfile: &str) -> String {
    let block = ca_block();
    let mut out = String::with_capacity(dockerfile.len() + 4 * block.len());
    let mut in_from = false;
    let mut continued = false;
    for line in dockerfile.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let trimmed = body.trim_start();
        if !continued && !trimmed.starts_with('#') {
            let keyword = trimmed.split_whitespace().next().unwrap_or("");
            in_from = keyword.eq_ignore_ascii_case("FROM");
        }
        let is_comment_inside = continued && trimmed.starts_with('#');
        if !is_comment_inside && !trimmed.is_empty() {
            continued = body.trim_end().ends_with('\\');
        }
        out.push_str(line);
        if in_from && !continued {
            if !line.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&block);
            in_from = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::BuildContext;

    #[test]
    fn block_goes_after_each_from_and_nothing_else_changes() {
        let df = "# syntax comment\nARG X=1\nFROM --platform=linux/x86_64 ubuntu:22.04 AS a\nRUN echo a\nfrom a\nRUN echo \\\n  b\n";
        let out = inject_ca_block(df);
        let expected = format!(
            "# syntax comment\nARG X=1\nFROM --platform=linux/x86_64 ubuntu:22.04 AS a\n{b}RUN echo a\nfrom a\n{b}RUN echo \\\n  b\n",
            b = ca_block()
        );
        assert_eq!(out, expected);
        // Removing the inserted blocks gives back the original bytes.
        assert_eq!(out.replace(&ca_block(), ""), df);
    }

    #[test]
    fn continued_from_and_missing_final_newline_are_handled() {
        let out = inject_ca_block("FROM \\\n  base:1\nRUN x\nFROM y");
        assert_eq!(
            out,
            format!("FROM \\\n  base:1\n{b}RUN x\nFROM y\n{b}", b = ca_block())
        );
    }

    #[test]
    fn a_run_line_mentioning_from_is_not_an_instruction() {
        let df = "FROM a\nRUN echo \\\n FROM nothing\n";
        assert_eq!(inject_ca_block(df).matches("COPY .swtbench").count(), 1);
    }

    #[test]
    fn apply_with_a_bundle_adds_file_args_and_edited_dockerfile() {
        let vars: BTreeMap<&str, &str> = BTreeMap::from([
            ("HTTPS_PROXY", "http://proxy:3128"),
            ("no_proxy", "localhost"),
        ]);
        let net = BuildNetwork::from_parts(Some(b"CERT".to_vec()), |k| {
            vars.get(k).map(|v| v.to_string())
        });
        let mut req = BuildRequest::new("t:1", BuildContext::new("FROM base\nRUN pip install x\n"));
        let notes = net.apply(&mut req).expect("apply");
        assert_eq!(
            req.context
                .get(CA_CONTEXT_PATH)
                .map(|f| f.contents.as_slice()),
            Some(&b"CERT"[..])
        );
        assert_eq!(
            req.context.dockerfile(),
            Some(format!("FROM base\n{}RUN pip install x\n", ca_block()).as_str())
        );
        assert_eq!(
            req.build_args.get("PIP_CERT").map(String::as_str),
            Some(CA_IMAGE_PATH)
        );
        assert_eq!(
            req.build_args.get("HTTPS_PROXY").map(String::as_str),
            Some("http://proxy:3128")
        );
        assert_eq!(
            req.build_args.get("no_proxy").map(String::as_str),
            Some("localhost")
        );
        assert!(!req.host_network);
        assert!(notes.iter().any(|n| n.contains("CA bundle")));
    }

    #[test]
    fn apply_without_a_bundle_leaves_the_dockerfile_byte_identical() {
        let net = BuildNetwork::from_parts(None, |k| {
            (k == "HTTP_PROXY").then(|| "http://127.0.0.1:3128".to_string())
        });
        let df = "FROM base\nRUN true\n";
        let mut req = BuildRequest::new("t:1", BuildContext::new(df));
        net.apply(&mut req).expect("apply");
        assert_eq!(req.context.dockerfile(), Some(df));
        assert!(req.context.get(CA_CONTEXT_PATH).is_none());
        assert!(req.host_network, "a loopback proxy needs the host network");
        assert!(BuildNetwork::none().is_empty());
    }
}

//! Build files: a directory tree copied onto an instance's checkout before its install
//! (`--build-files`), for builds that download sources the machine cannot reach (matplotlib's
//! FreeType, Qhull and jQuery UI: with `build/freetype-2.6.1/` present its build does not download
//! the tarball). The files are part of the instance image, so their digest is part of
//! `setup_repo.sh` and of the instance key: the same checkout with other build files is another
//! image. Reading the directory and computing the digest is `swtbench_data::build_files`.

use std::path::PathBuf;

/// Where the build context holds the files and where the instance build copies them from.
pub const BUILD_FILES_CONTEXT_DIR: &str = "swtbench-build-files";

/// The build files of one repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildFiles {
    /// The directory whose contents go onto `/testbed` (`<root>/<owner>__<name>`).
    pub dir: PathBuf,
    /// SHA-256 (hex) over every file's relative path, executable bit and contents, in path order.
    pub digest: String,
    /// Regular files in the tree.
    pub files: usize,
    /// Their total size.
    pub bytes: u64,
}

impl BuildFiles {
    /// The `setup_repo.sh` lines that put the files onto the checkout (after the reset, before
    /// the install) and remove the copy the build context brought. The digest names the contents
    /// in the script, and so in the instance key.
    pub fn repo_script_lines(&self) -> [String; 2] {
        [
            format!(
                "cp -a /root/{BUILD_FILES_CONTEXT_DIR}/. /testbed/  # build files sha256:{}",
                self.digest
            ),
            format!("rm -rf /root/{BUILD_FILES_CONTEXT_DIR}"),
        ]
    }

    /// The instance Dockerfile line that brings the files into the image before `setup_repo.sh`.
    pub fn dockerfile_line() -> String {
        format!("COPY ./{BUILD_FILES_CONTEXT_DIR} /root/{BUILD_FILES_CONTEXT_DIR}\n")
    }
}

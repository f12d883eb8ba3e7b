//! The file-system helpers the runner uses, from the one place they live
//! ([`swtbench_data::fsutil`]): atomic writes, the writable-directory probe, and friends.

pub use swtbench_data::fsutil::{
    append_line, check_writable_dir, remove_if_exists, write_atomic, WriteError,
};

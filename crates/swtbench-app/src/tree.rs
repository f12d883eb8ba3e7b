//! The file system as a log tree: [`swtbench_data::tree::FsTree`], re-exported where the
//! application's pipelines have always found it.

pub use swtbench_data::tree::FsTree;

//! What people see on a terminal while swtbench works, as consumers of what the libraries report:
//! [`progress::Progress`] renders an evaluation's events (bars on a terminal, lines elsewhere),
//! [`download::DownloadBar`] the progress callback of dataset downloads. Both draw on stderr (or
//! write their lines into any writer) and decide nothing; every front end that runs a pipeline (the
//! `swtbench` binary today) uses the same displays. The binary's printer writes everything else.

pub mod download;
pub mod eta;
pub mod progress;

pub use download::DownloadBar;
pub use progress::Progress;

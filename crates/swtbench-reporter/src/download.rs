//! The download bar of dataset downloads: a bar on a terminal, one line per download elsewhere
//! (CI logs, pipes), nothing with `--quiet`.

use std::io::{IsTerminal, Write};

/// A progress bar for hub downloads, drawn only on a terminal and never with --quiet.
/// Not on a terminal (CI logs, pipes), each download is one line instead.
pub struct DownloadBar {
    enabled: bool,
    terminal: bool,
    bar: Option<indicatif::ProgressBar>,
    url: String,
    /// Where the lines go when not on a terminal.
    out: Box<dyn Write + Send>,
}

impl std::fmt::Debug for DownloadBar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DownloadBar")
            .field("enabled", &self.enabled)
            .field("terminal", &self.terminal)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl DownloadBar {
    /// A bar that draws unless `quiet`.
    pub fn new(quiet: bool) -> DownloadBar {
        DownloadBar {
            enabled: !quiet,
            terminal: std::io::stderr().is_terminal(),
            bar: None,
            url: String::new(),
            out: Box::new(std::io::stderr()),
        }
    }

    /// A bar as where stderr is not a terminal: one line per download into `out`, nothing when
    /// `quiet`.
    pub fn writing_to(quiet: bool, out: Box<dyn Write + Send>) -> DownloadBar {
        DownloadBar {
            enabled: !quiet,
            terminal: false,
            bar: None,
            url: String::new(),
            out,
        }
    }

    /// `done` of `total` bytes of `url` have arrived.
    pub fn update(&mut self, url: &str, done: u64, total: Option<u64>) {
        if !self.enabled {
            return;
        }
        if self.url != url && !self.terminal {
            self.url = url.to_string();
            let name = url.rsplit('/').next().unwrap_or(url);
            let size = total
                .map(|t| format!(" ({:.1} MB)", t as f64 / 1e6))
                .unwrap_or_default();
            // A display that cannot write does not stop the download.
            let _ = self
                .out
                .write_all(format!("downloading {name}{size} from {url}\n").as_bytes());
            return;
        }
        if !self.terminal {
            return;
        }
        if self.url != url {
            if let Some(b) = self.bar.take() {
                b.finish_and_clear();
            }
            self.url = url.to_string();
            let bar = match total {
                Some(t) => indicatif::ProgressBar::new(t),
                None => indicatif::ProgressBar::new_spinner(),
            };
            let style = indicatif::ProgressStyle::with_template(
                "{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            let name = url.rsplit('/').next().unwrap_or(url);
            bar.set_message(format!("downloading {name}"));
            self.bar = Some(bar);
        }
        if let Some(b) = &self.bar {
            b.set_position(done);
        }
    }

    /// Clears the bar.
    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

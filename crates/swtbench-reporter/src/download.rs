//! The download bar of dataset downloads: a bar on a terminal, one line per download elsewhere
//! (CI logs, pipes), nothing with `--quiet`.
#![allow(clippy::print_stderr)]

use std::io::IsTerminal;

/// A progress bar for hub downloads, drawn only on a terminal and never with --quiet.
/// Not on a terminal (CI logs, pipes), each download is one line instead.
#[derive(Debug)]
pub struct DownloadBar {
    enabled: bool,
    terminal: bool,
    bar: Option<indicatif::ProgressBar>,
    url: String,
}

impl DownloadBar {
    /// A bar that draws unless `quiet`.
    pub fn new(quiet: bool) -> DownloadBar {
        DownloadBar {
            enabled: !quiet,
            terminal: std::io::stderr().is_terminal(),
            bar: None,
            url: String::new(),
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
            eprintln!("downloading {name}{size} from {url}");
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

//! The download lines where stderr is not a terminal.

use swtbench_reporter::DownloadBar;

use crate::Buffer;

const PARQUET: &str = "https://huggingface.co/datasets/x/resolve/main/data/test-00000.parquet";

#[test]
fn each_download_is_one_line_with_its_size() {
    let out = Buffer::default();
    let mut bar = DownloadBar::writing_to(false, Box::new(out.clone()));
    bar.update(PARQUET, 0, Some(2_500_000));
    bar.update(PARQUET, 1_000_000, Some(2_500_000));
    bar.update(PARQUET, 2_500_000, Some(2_500_000));
    bar.update("https://example.org/spec.json", 0, None);
    bar.update("https://example.org/spec.json", 10, None);
    bar.finish();
    assert_eq!(
        out.text(),
        "downloading test-00000.parquet (2.5 MB) from https://huggingface.co/datasets/x/resolve/main/data/test-00000.parquet\n\
         downloading spec.json from https://example.org/spec.json\n"
    );
}

#[test]
fn quiet_downloads_write_nothing() {
    let out = Buffer::default();
    let mut bar = DownloadBar::writing_to(true, Box::new(out.clone()));
    bar.update(PARQUET, 0, Some(2_500_000));
    bar.finish();
    assert_eq!(out.text(), "");
}

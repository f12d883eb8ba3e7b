//! The reporter's integration tests, linked into one test executable: the progress display's
//! text in each mode and the download lines, checked against the expected text.

mod download;
mod progress;

use std::io::Write;
use std::sync::{Arc, Mutex};

/// A writer whose bytes the test reads afterwards (the display owns its writer).
#[derive(Debug, Clone, Default)]
pub struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Buffer {
    pub fn text(&self) -> String {
        let bytes = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        String::from_utf8(bytes).expect("the display writes UTF-8")
    }
}

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

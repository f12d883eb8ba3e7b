//! The output file of `dataset retrieve|build|swt`: appended to row by row, resumable, put in
//! the dataset's order at the end (and written as parquet when that is the format).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io::{BufRead, BufReader, Seek, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use serde_json::Value;
use swtbench_textgen::row::{columns_of, to_json_line, to_parquet, Row};

use crate::{Error, Result};

/// An output file that is appended to row by row and can be resumed.
///
/// JSON Lines are appended to the file itself; parquet output collects rows in
/// `<out>.partial.jsonl` and is written (to a temporary file, then renamed) once all rows are
/// there. A line cut short by a crash is dropped when the file is opened again.
pub(super) struct RowOutput {
    path: PathBuf,
    parquet: bool,
    /// The JSON Lines file rows are appended to (the output, or the parquet's partial file).
    lines_path: PathBuf,
    file: fs::File,
    pub(super) done: BTreeSet<String>,
}

impl RowOutput {
    pub(super) fn open(path: &Path) -> Result<RowOutput> {
        let parquet = path.extension().is_some_and(|e| e == "parquet");
        let lines_path = if parquet {
            let mut p = path.as_os_str().to_owned();
            p.push(".partial.jsonl");
            PathBuf::from(p)
        } else {
            path.to_path_buf()
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)
                .with_context(|| format!("creating {}", dir.display()))
                .map_err(Error::environment)?;
        }
        let mut done = BTreeSet::new();
        // Rows of a finished parquet output count as done (and are kept).
        let mut carried: Vec<Row> = Vec::new();
        if parquet && path.is_file() {
            let (rows, _) = swtbench_data::rows::read_file(path, "test")
                .map_err(|e| Error::input(anyhow!(e.to_string())))?;
            for r in rows {
                if let Value::Object(m) = r.value {
                    carried.push(m);
                }
            }
        }
        let mut file = fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&lines_path)
            .with_context(|| format!("opening {}", lines_path.display()))
            .map_err(Error::environment)?;
        let good_len = scan_lines(&mut file, &lines_path, &mut done)?;
        let len = file
            .metadata()
            .map_err(|e| Error::environment(anyhow!(e)))?
            .len();
        if good_len < len {
            file.set_len(good_len)
                .with_context(|| {
                    format!(
                        "truncating the incomplete last line of {}",
                        lines_path.display()
                    )
                })
                .map_err(Error::environment)?;
        }
        let mut out = RowOutput {
            path: path.to_path_buf(),
            parquet,
            lines_path,
            file,
            done,
        };
        for row in carried {
            let id = row
                .get("instance_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if !out.done.contains(&id) {
                out.append_row(&row, &id).map_err(Error::environment)?;
            }
        }
        Ok(out)
    }

    pub(super) fn append_row(&mut self, row: &Row, id: &str) -> anyhow::Result<()> {
        let line = to_json_line(row);
        self.append_raw(line.trim_end_matches('\n'), id)
    }

    pub(super) fn append_line(&mut self, json: &str, id: &str) -> anyhow::Result<()> {
        self.append_raw(json, id)
    }

    fn append_raw(&mut self, json: &str, id: &str) -> anyhow::Result<()> {
        let mut line = String::with_capacity(json.len() + 1);
        line.push_str(json);
        line.push('\n');
        // One write per row, on a file opened for appending: a row is either all there or (after
        // a crash) a cut line that the next run removes.
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .with_context(|| format!("appending to {}", self.lines_path.display()))?;
        self.done.insert(id.to_string());
        Ok(())
    }

    /// Puts the rows in `order` (the dataset's), and writes the parquet file if that is the
    /// output format.
    pub(super) fn finish(self, order: &[&str]) -> Result<()> {
        let env = Error::environment;
        let text = fs::read_to_string(&self.lines_path)
            .with_context(|| format!("reading back {}", self.lines_path.display()))
            .map_err(env)?;
        let mut by_id: BTreeMap<String, (usize, &str)> = BTreeMap::new();
        let mut ids_in_file = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let id = line_id(line).unwrap_or_default();
            ids_in_file.push(id.clone());
            by_id.entry(id).or_insert((n, line));
        }
        let rank: HashMap<&str, usize> = order.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        let mut sorted: Vec<&(usize, &str)> = by_id.values().collect();
        sorted.sort_by_key(|(n, line)| {
            let id = line_id(line).unwrap_or_default();
            (rank.get(id.as_str()).copied().unwrap_or(usize::MAX), *n)
        });
        if self.parquet {
            let rows: Vec<Row> = sorted
                .iter()
                .map(|(_, line)| serde_json::from_str::<Row>(line))
                .collect::<Result<_, _>>()
                .map_err(|e| env(anyhow!("{}: {e}", self.lines_path.display())))?;
            let bytes = to_parquet(&columns_of(&rows), &rows).map_err(|e| env(anyhow!(e)))?;
            swtbench_data::fsutil::write_atomic(&self.path, &bytes).map_err(|e| env(e.into()))?;
            fs::remove_file(&self.lines_path)
                .with_context(|| format!("removing {}", self.lines_path.display()))
                .map_err(env)?;
            return Ok(());
        }
        let in_order = sorted.iter().map(|(n, _)| *n).collect::<Vec<_>>();
        if in_order.windows(2).all(|w| w[0] < w[1]) && in_order.len() == ids_in_file.len() {
            return Ok(());
        }
        let mut body = String::with_capacity(text.len());
        for (_, line) in sorted {
            body.push_str(line);
            body.push('\n');
        }
        swtbench_data::fsutil::write_atomic(&self.path, body.as_bytes()).map_err(|e| env(e.into()))
    }
}

fn line_id(line: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line).ok()?;
    Some(v.get("instance_id")?.as_str()?.to_string())
}

/// Reads the ids of complete lines; returns the length of the file up to the last complete line.
fn scan_lines(file: &mut fs::File, path: &Path, done: &mut BTreeSet<String>) -> Result<u64> {
    file.rewind().map_err(|e| Error::environment(anyhow!(e)))?;
    let mut reader = BufReader::new(&*file);
    let mut good = 0u64;
    let mut line = String::new();
    let mut n = 0usize;
    loop {
        line.clear();
        let read = reader
            .read_line(&mut line)
            .with_context(|| format!("reading {}", path.display()))
            .map_err(Error::input)?;
        if read == 0 {
            break;
        }
        n += 1;
        if !line.ends_with('\n') {
            break; // cut short by a crash: dropped
        }
        match line_id(line.trim_end()) {
            Some(id) => {
                done.insert(id);
                good += read as u64;
            }
            None if line.trim().is_empty() => good += read as u64,
            None => {
                return Err(Error::input(anyhow!(
                    "{} line {n}: not a row with an instance_id; is this the right output file?",
                    path.display()
                )))
            }
        }
    }
    Ok(good)
}

//! `gitdiff::render` against real `git diff` on generated edits of a Python file: random line
//! insertions, deletions, replacements and moves (blank lines, repeated lines, indentation
//! changes and missing final newlines included). Every rendered diff must be the bytes git
//! writes; the count is printed.

use crate::common;

use std::collections::BTreeMap;

use swtbench_extract::gitdiff::{render, FileChange};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const POOL: [&str; 12] = [
    "",
    "",
    "    pass",
    "    assert x == 1",
    "def test_a():",
    "def test_b(self):",
    "class TestThing:",
    "        return None",
    "    # comment",
    "import os",
    "    x = compute(1, 2)",
    "    assert result",
];

fn edit(rng: &mut Rng, base: &[String]) -> Vec<String> {
    let mut lines = base.to_vec();
    for _ in 0..1 + rng.below(6) {
        let at = rng.below(lines.len() + 1);
        match rng.below(5) {
            0 | 1 => {
                for k in 0..1 + rng.below(4) {
                    lines.insert(at.min(lines.len()), POOL[rng.below(POOL.len())].to_string());
                    let _ = k;
                }
            }
            2 if !lines.is_empty() => {
                let n = (1 + rng.below(3)).min(lines.len() - at.min(lines.len() - 1));
                let from = at.min(lines.len() - 1);
                lines.drain(from..(from + n).min(lines.len()));
            }
            3 if at < lines.len() => lines[at] = POOL[rng.below(POOL.len())].to_string(),
            _ if lines.len() > 4 => {
                let from = rng.below(lines.len() - 2);
                let block: Vec<String> = lines.drain(from..from + 2).collect();
                let to = rng.below(lines.len() + 1);
                for (k, l) in block.into_iter().enumerate() {
                    lines.insert(to + k, l);
                }
            }
            _ => {}
        }
    }
    lines
}

#[test]
fn rendered_diffs_are_git_diffs_of_generated_edits() {
    let base_text =
        std::fs::read_to_string(common::fixtures().join("parity/base/tests/test_ops.py")).unwrap();
    compare(&base_text, 0x5eed_1234_abcd_ef01, 300);
}

/// The same on a file of 10 copies of it (many equal lines: git sets aside lines with many
/// matches when they sit among unmatched ones).
#[test]
fn rendered_diffs_are_git_diffs_of_generated_edits_of_a_repetitive_file() {
    let base_text =
        std::fs::read_to_string(common::fixtures().join("parity/base/tests/test_ops.py"))
            .unwrap()
            .repeat(10);
    compare(&base_text, 0x0dd_ba11_cafe_f00d, 150);
}

fn compare(base_text: &str, seed: u64, cases: usize) {
    let base_text = base_text.to_string();
    let base_lines: Vec<String> = base_text.lines().map(str::to_string).collect();
    let files: BTreeMap<String, String> = [("t.py".to_string(), base_text.clone())].into();
    let (repo, commit) = common::git_repo(&files);
    let dir = repo.path();
    let mut rng = Rng(seed);
    let (mut compared, mut identical) = (0, 0);
    let mut first_difference = None;
    for case in 0..cases {
        let lines = edit(&mut rng, &base_lines);
        let mut new = lines.join("\n");
        if !lines.is_empty() && rng.below(8) != 0 {
            new.push('\n');
        }
        if new == base_text {
            continue;
        }
        std::fs::write(dir.join("t.py"), &new).unwrap();
        let out = common::git(dir, &["diff", "--no-color", &commit]);
        let git_diff = String::from_utf8(out.stdout).unwrap();
        let ours = render(&[FileChange {
            path: "t.py".into(),
            old: Some(base_text.clone()),
            new: new.clone(),
        }]);
        compared += 1;
        if ours == git_diff {
            identical += 1;
        } else if first_difference.is_none() {
            first_difference = Some(format!(
                "case {case}:\n--- ours\n{ours}\n--- git\n{git_diff}"
            ));
        }
    }
    println!("{identical} of {compared} generated diffs byte-identical to git's");
    assert!(compared * 10 > cases * 8);
    assert_eq!(
        identical,
        compared,
        "{}",
        first_difference.unwrap_or_default()
    );
}

//! The SWE-bench "style-3" text prompt: issue, READMEs and retrieved files with line numbers,
//! kept under a token cap.
//!
//! Rendering rules (they decide the bytes of `text` and the token counts):
//! - every file is `[start of <path>]`, its lines numbered from 1 as `<n> <line>` after splitting
//!   on `\n` only (so a final newline gives a last line `<n> `), and `[end of <path>]`;
//! - files are ordered by path (byte order), READMEs and code separately; each block is followed by
//!   `\n` and the whole section is stripped of leading and trailing `\n`;
//! - the retrieval rank only decides which files get in: walking the hits best first, a file is
//!   included when `base + included so far + its own block < cap` (strictly), where `base` counts
//!   the whole prompt without code files; a file that does not fit is skipped and the walk goes
//!   on, so a smaller, lower-ranked file can still get in;
//! - the row's `text` is the prompt with Python's `str.strip()` applied, then `"\n\n"`.
//!
//! Pure: contents come in as strings, the text goes out as a string.

use std::collections::BTreeMap;

use crate::template::{Slots, Template, TemplateError};
use crate::tokens::TokenCounter;

/// The placeholders of a style-3 template.
pub const STYLE3_SLOTS: Slots<'static> = Slots {
    required: &["problem_statement", "readmes", "code"],
    optional: &[],
};

/// The style-3 template shipped with swtbench (our wording).
pub const DEFAULT_STYLE3: &str = include_str!("../../../assets/prompts/swebench-style3.txt");

/// A style-3 prompt template.
#[derive(Debug, Clone)]
pub struct Style3 {
    template: Template,
}

impl Style3 {
    pub fn parse(origin: &str, text: &str) -> Result<Style3, TemplateError> {
        Ok(Style3 {
            template: Template::parse(origin, text, STYLE3_SLOTS)?,
        })
    }

    /// The template shipped with swtbench.
    pub fn builtin() -> Style3 {
        Style3::parse("builtin:swebench-style3", DEFAULT_STYLE3)
            .unwrap_or_else(|e| unreachable!("the shipped style-3 template is valid: {e}"))
    }

    /// The prompt, before stripping.
    pub fn render(&self, problem_statement: &str, readmes: &str, code: &str) -> String {
        self.template.render(|slot| match slot {
            "problem_statement" => problem_statement,
            "readmes" => readmes,
            _ => code,
        })
    }
}

/// `content` with each `\n`-separated line prefixed by its number and a space.
pub fn number_lines(content: &str) -> String {
    let mut out = String::with_capacity(content.len() + content.len() / 8);
    for (i, line) in content.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&(i + 1).to_string());
        out.push(' ');
        out.push_str(line);
    }
    out
}

/// One file as it appears in the prompt (without a trailing newline).
pub fn file_block(path: &str, content: &str) -> String {
    format!(
        "[start of {path}]\n{}\n[end of {path}]",
        number_lines(content)
    )
}

/// A section of files, ordered by path.
pub fn files_section<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let sorted: BTreeMap<&str, &str> = files.into_iter().collect();
    let mut out = String::new();
    for (path, content) in sorted {
        out.push_str(&file_block(path, content));
        out.push('\n');
    }
    out.trim_matches('\n').to_string()
}

/// The cap walk: which candidates (given as their block token counts, best-ranked first) are
/// included, and the running total of their counts.
pub fn cap_walk(base: usize, block_tokens: &[usize], cap: usize) -> (Vec<bool>, usize) {
    let mut total = 0usize;
    let included = block_tokens
        .iter()
        .map(|&n| {
            let fits = base + total + n < cap;
            if fits {
                total += n;
            }
            fits
        })
        .collect();
    (included, total)
}

/// A retrieved file, in rank order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub path: String,
    pub content: String,
}

/// The outcome of rendering one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedText {
    /// The row's `text`: stripped prompt + `"\n\n"`.
    pub text: String,
    /// Paths of the candidates that fit, in rank order.
    pub included: Vec<String>,
    /// Paths of the candidates that did not fit, in rank order.
    pub skipped: Vec<String>,
    /// Tokens of the prompt without code files (what the walk starts from).
    pub base_tokens: usize,
    /// The walk's estimate of the prompt's size: base + the included blocks.
    pub estimated_tokens: usize,
}

/// Renders one instance's text. READMEs are keyed by file name and never capped; `max_tokens`
/// `None` means every candidate is included.
pub fn render_text(
    style: &Style3,
    problem_statement: &str,
    readmes: &BTreeMap<String, String>,
    candidates: &[Candidate],
    max_tokens: Option<usize>,
    counter: &dyn TokenCounter,
) -> RenderedText {
    let readme_section = files_section(readmes.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let (mask, base_tokens, total) = match max_tokens {
        None => (vec![true; candidates.len()], 0, 0),
        Some(cap) => {
            let base = counter.count(&style.render(problem_statement, &readme_section, ""));
            let counts: Vec<usize> = candidates
                .iter()
                .map(|c| counter.count(&file_block(&c.path, &c.content)))
                .collect();
            let (mask, total) = cap_walk(base, &counts, cap);
            (mask, base, total)
        }
    };
    let mut included = Vec::new();
    let mut skipped = Vec::new();
    for (c, &keep) in candidates.iter().zip(&mask) {
        if keep {
            included.push(c);
        } else {
            skipped.push(c.path.clone());
        }
    }
    let code = files_section(
        included
            .iter()
            .map(|c| (c.path.as_str(), c.content.as_str())),
    );
    let prompt = style.render(problem_statement, &readme_section, &code);
    RenderedText {
        text: format!("{}\n\n", python_strip(&prompt)),
        included: included.iter().map(|c| c.path.clone()).collect(),
        skipped,
        base_tokens,
        estimated_tokens: base_tokens + total,
    }
}

/// Python's `str.isspace()` for one character: Rust's notion plus the four ASCII information
/// separators `\x1c`–`\x1f`.
pub fn is_python_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// Python's `str.strip()` without arguments.
pub fn python_strip(s: &str) -> &str {
    s.trim_matches(is_python_whitespace)
}

/// Python's universal-newline decoding: `\r\n` and lone `\r` become `\n`.
pub fn universal_newlines(s: &str) -> String {
    if !s.contains('\r') {
        return s.to_string();
    }
    s.replace("\r\n", "\n").replace('\r', "\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::WordCounter;

    #[test]
    fn numbering_and_blocks() {
        assert_eq!(number_lines("a\n\tb\n"), "1 a\n2 \tb\n3 ");
        assert_eq!(number_lines(""), "1 ");
        assert_eq!(
            file_block("x.py", "import os\n"),
            "[start of x.py]\n1 import os\n2 \n[end of x.py]"
        );
        // Sorted by path bytes ("B" < "a"), joined by newlines, no trailing newline.
        assert_eq!(
            files_section([("a.py", "x"), ("B.py", "y")]),
            "[start of B.py]\n1 y\n[end of B.py]\n[start of a.py]\n1 x\n[end of a.py]"
        );
        assert_eq!(files_section(std::iter::empty()), "");
    }

    #[test]
    fn cap_walk_is_strict_and_skips_what_does_not_fit() {
        // base 10, cap 30: 15 fits (25 < 30); 5 would make 30, not < 30: skipped;
        // 4 fits (29); 1 would make 30: skipped; 0 fits.
        let (mask, total) = cap_walk(10, &[15, 5, 4, 1, 0], 30);
        assert_eq!(mask, vec![true, false, true, false, true]);
        assert_eq!(total, 19);
        // Base at or over the cap: nothing fits, the row still exists.
        let (mask, total) = cap_walk(30, &[0, 1], 30);
        assert_eq!(mask, vec![false, false]);
        assert_eq!(total, 0);
    }

    #[test]
    fn python_strip_and_newlines() {
        assert_eq!(python_strip("\x1c\u{3000} a b \x0c\n"), "a b");
        assert_eq!(universal_newlines("a\r\nb\rc\n"), "a\nb\nc\n");
    }

    #[test]
    fn renders_under_the_cap_with_a_word_counter() {
        let style = Style3::parse(
            "t",
            "P\n<issue>\n{{problem_statement}}\n</issue>\n<code>\n{{readmes}}\n{{code}}\n</code>\nEND\n",
        )
        .unwrap();
        let readmes = BTreeMap::from([("README.md".to_string(), "hi there".to_string())]);
        let cands = vec![
            Candidate {
                path: "z.py".into(),
                content: "a b c d e".into(),
            },
            Candidate {
                path: "big.py".into(),
                content: "w ".repeat(50),
            },
            Candidate {
                path: "a.py".into(),
                content: "x".into(),
            },
        ];
        let r = render_text(
            &style,
            "issue words",
            &readmes,
            &cands,
            Some(40),
            &WordCounter,
        );
        // Base: "P <issue> issue words </issue> <code> [start of README.md] 1 hi there [end of
        // README.md] </code> END" = 17 words. z.py's block is 12 words (17 + 12 < 40), big.py's
        // 57 (skipped), a.py's 8 (29 + 8 < 40).
        assert_eq!(r.base_tokens, 17);
        assert_eq!(r.estimated_tokens, 37);
        assert_eq!(r.included, vec!["z.py", "a.py"]);
        assert_eq!(r.skipped, vec!["big.py"]);
        assert!(r.text.starts_with("P\n<issue>\nissue words\n</issue>\n<code>\n[start of README.md]\n1 hi there\n[end of README.md]\n[start of a.py]\n1 x\n[end of a.py]\n[start of z.py]\n1 a b c d e\n[end of z.py]\n</code>\nEND\n\n"));
        assert!(r.text.ends_with("END\n\n"));
    }

    #[test]
    fn cl100k_cap_walk_includes_exactly_what_fits() {
        use crate::tokens::Cl100k;
        let style = Style3::builtin();
        let readmes = BTreeMap::from([("README.rst".to_string(), "Demo\n====\n".to_string())]);
        let small = Candidate {
            path: "pkg/small.py".into(),
            content: "def f():\n    return 1\n".into(),
        };
        let large = Candidate {
            path: "pkg/large.py".into(),
            content: "x = 1\n".repeat(400),
        };
        let tiny = Candidate {
            path: "pkg/tiny.py".into(),
            content: String::new(),
        };
        let base = Cl100k.count(&style.render(
            "Bug in f",
            &files_section([("README.rst", "Demo\n====\n")]),
            "",
        ));
        let n = |c: &Candidate| Cl100k.count(&file_block(&c.path, &c.content));
        // Room for `small` and `tiny` but not `large`, which comes between them in rank order.
        let cap = base + n(&small) + n(&tiny) + 1;
        assert!(n(&large) > n(&tiny) + 1);
        let cands = vec![small.clone(), large.clone(), tiny.clone()];
        let r = render_text(&style, "Bug in f", &readmes, &cands, Some(cap), &Cl100k);
        assert_eq!(r.base_tokens, base);
        assert_eq!(r.included, vec!["pkg/small.py", "pkg/tiny.py"]);
        assert_eq!(r.skipped, vec!["pkg/large.py"]);
        assert_eq!(r.estimated_tokens, cap - 1);
        // The estimate ignores the joins between blocks; the real count stays close to it.
        let real = Cl100k.count(&r.text) as i64;
        assert!(
            (real - r.estimated_tokens as i64).abs() <= 4,
            "{real} vs {}",
            r.estimated_tokens
        );
        // One token less of room and `tiny` no longer fits (the comparison is strict).
        let r = render_text(&style, "Bug in f", &readmes, &cands, Some(cap - 1), &Cl100k);
        assert_eq!(r.included, vec!["pkg/small.py"]);
        // No cap: everything, in path order in the text.
        let r = render_text(&style, "Bug in f", &readmes, &cands, None, &Cl100k);
        assert_eq!(r.included.len(), 3);
        let t = &r.text;
        assert!(t.find("[start of pkg/large.py]") < t.find("[start of pkg/small.py]"));
        assert!(t.find("[start of pkg/small.py]") < t.find("[start of pkg/tiny.py]"));
        assert!(t.contains("[start of pkg/tiny.py]\n1 \n[end of pkg/tiny.py]"));
    }
}

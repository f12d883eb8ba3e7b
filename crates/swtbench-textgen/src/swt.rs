//! Turning an SWE-bench text row into an SWT-Bench test-writing row (ZeroShotBase / ZeroShotPlus).
//!
//! For each row:
//! - `text` is split into lines the way Python's `str.splitlines()` does; the first line (the
//!   SWE-bench premise) is dropped, everything after the **last** line starting with `</code>` is
//!   dropped (the SWE-bench instructions), and the remaining lines, joined with `\n`, fill the
//!   `{{body}}` slot of the mode's template, whose text before the slot replaces the premise and
//!   whose text after it is the SWT instructions;
//! - the patches are swapped: `patch` becomes the gold tests wrapped in `<patch>` tags (the
//!   generation target) and `test_patch` the gold code fix, unwrapped;
//! - every other column is kept, in place.
//!
//! A row without a `</code>` line is an error for that row (the original stops the whole run).
//! Pure: rows in, rows out.

use serde_json::Value;

use crate::row::{wrap_patch, Row};
use crate::template::{Slots, Template, TemplateError};

/// The placeholder of an SWT template.
pub const SWT_SLOTS: Slots<'static> = Slots {
    required: &["body"],
    optional: &[],
};

/// The ZeroShotBase template shipped with swtbench (our wording).
pub const DEFAULT_ZSB: &str = include_str!("../../../assets/prompts/swt-zsb.txt");
/// The ZeroShotPlus template shipped with swtbench (our wording).
pub const DEFAULT_ZSP: &str = include_str!("../../../assets/prompts/swt-zsp.txt");

/// Which answer format the prompt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwtMode {
    /// ZeroShotBase: a unified diff.
    Zsb,
    /// ZeroShotPlus: the custom `diff / path / rewrite|insert / line / code / end diff` blocks.
    Zsp,
}

impl SwtMode {
    pub fn name(self) -> &'static str {
        match self {
            SwtMode::Zsb => "zsb",
            SwtMode::Zsp => "zsp",
        }
    }
}

/// A parsed SWT template.
#[derive(Debug, Clone)]
pub struct SwtTemplate {
    template: Template,
}

impl SwtTemplate {
    pub fn parse(origin: &str, text: &str) -> Result<SwtTemplate, TemplateError> {
        Ok(SwtTemplate {
            template: Template::parse(origin, text, SWT_SLOTS)?,
        })
    }

    /// The template shipped with swtbench for `mode`.
    pub fn builtin(mode: SwtMode) -> SwtTemplate {
        let (origin, text) = match mode {
            SwtMode::Zsb => ("builtin:swt-zsb", DEFAULT_ZSB),
            SwtMode::Zsp => ("builtin:swt-zsp", DEFAULT_ZSP),
        };
        SwtTemplate::parse(origin, text)
            .unwrap_or_else(|e| unreachable!("the shipped SWT templates are valid: {e}"))
    }

    pub fn origin(&self) -> &str {
        &self.template.origin
    }
}

/// Why a row cannot be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SwtError {
    #[error("{instance_id}: column `{column}` is missing or not a string")]
    MissingColumn {
        instance_id: String,
        column: &'static str,
    },
    #[error(
        "{instance_id}: `text` has no line starting with `</code>`, so the end of the code \
         section is unknown; the row is not a SWE-bench text row (build it with `swtbench dataset build`)"
    )]
    NoCodeEnd { instance_id: String },
    #[error(
        "{instance_id}: `patch` is not wrapped in <patch>…</patch> tags as in SWE-bench text rows"
    )]
    PatchNotWrapped { instance_id: String },
}

/// The SWT `text` for an SWE-bench text: `None` when it has no `</code>` line.
pub fn swt_text(text: &str, template: &SwtTemplate) -> Option<String> {
    let lines = swtbench_core::diff::python_splitlines(text);
    let cut = lines.iter().rposition(|l| l.starts_with("</code>"))? + 1;
    let body = lines[1.min(cut)..cut].join("\n");
    Some(template.template.render(|_| &body))
}

/// Converts one SWE-bench text row.
pub fn swt_row(row: &Row, template: &SwtTemplate) -> Result<Row, SwtError> {
    let instance_id = row
        .get("instance_id")
        .and_then(Value::as_str)
        .unwrap_or("<row without instance_id>")
        .to_string();
    let get = |column: &'static str| -> Result<&str, SwtError> {
        row.get(column)
            .and_then(Value::as_str)
            .ok_or_else(|| SwtError::MissingColumn {
                instance_id: instance_id.clone(),
                column,
            })
    };
    let text = swt_text(get("text")?, template).ok_or_else(|| SwtError::NoCodeEnd {
        instance_id: instance_id.clone(),
    })?;
    let code_fix = swtbench_core::instance::unwrap_patch_tags(get("patch")?).ok_or_else(|| {
        SwtError::PatchNotWrapped {
            instance_id: instance_id.clone(),
        }
    })?;
    let tests = get("test_patch")?.to_string();
    let mut out = row.clone();
    out.insert("text".into(), Value::String(text));
    out.insert("patch".into(), Value::String(wrap_patch(&tests)));
    out.insert("test_patch".into(), Value::String(code_fix));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template() -> SwtTemplate {
        SwtTemplate::parse("t", "NEW PREMISE\n{{body}}\nASK\n").unwrap()
    }

    #[test]
    fn replaces_the_first_line_and_cuts_after_the_last_code_end() {
        let text = "old premise\r\n<issue>\r\nsee </code> here\r\n</code>x\n</issue>\n\n<code>\n1 a\x0cb\n</code>\n\ninstructions\n</code> not really\nRespond\n\n";
        // The last line starting with `</code>` wins, even in the instructions.
        let out = swt_text(text, &template()).unwrap();
        assert_eq!(
            out,
            "NEW PREMISE\n<issue>\nsee </code> here\n</code>x\n</issue>\n\n<code>\n1 a\nb\n</code>\n\ninstructions\n</code> not really\nASK\n"
        );
        let normal = "p\n<issue>\ni\n</issue>\n\n<code>\n\n\n</code>\n\ntail\nRespond below:\n\n";
        assert_eq!(
            swt_text(normal, &template()).unwrap(),
            "NEW PREMISE\n<issue>\ni\n</issue>\n\n<code>\n\n\n</code>\nASK\n"
        );
        assert_eq!(swt_text("no code section\n", &template()), None);
    }

    #[test]
    fn swaps_the_patches_and_keeps_other_columns_in_place() {
        let row: Row = serde_json::from_value(json!({
            "instance_id": "o__r-1",
            "text": "p\n<code>\n</code>\nrest",
            "repo": "o/r",
            "patch": "<patch>\ndiff --git a/src/x.py b/src/x.py\n-a\n+b\n\n</patch>",
            "test_patch": "diff --git a/tests/test_x.py b/tests/test_x.py\n+t\n",
            "version": "1.0"
        }))
        .unwrap();
        let out = swt_row(&row, &template()).unwrap();
        assert_eq!(
            out.keys().collect::<Vec<_>>(),
            vec![
                "instance_id",
                "text",
                "repo",
                "patch",
                "test_patch",
                "version"
            ]
        );
        assert_eq!(out["text"], "NEW PREMISE\n<code>\n</code>\nASK\n");
        assert_eq!(
            out["patch"],
            "<patch>\ndiff --git a/tests/test_x.py b/tests/test_x.py\n+t\n\n</patch>"
        );
        assert_eq!(
            out["test_patch"],
            "diff --git a/src/x.py b/src/x.py\n-a\n+b\n"
        );
        // What the harness reads back with the swapped layout.
        let unwrapped =
            swtbench_core::instance::unwrap_patch_tags(out["patch"].as_str().unwrap()).unwrap();
        assert!(swtbench_core::instance::looks_swapped(
            &unwrapped,
            out["test_patch"].as_str().unwrap()
        ));
    }

    #[test]
    fn rows_without_code_end_or_wrapping_are_errors_naming_the_instance() {
        let mut row: Row = serde_json::from_value(json!({
            "instance_id": "o__r-2", "text": "p\nno code", "patch": "<patch>\nx\n</patch>",
            "test_patch": "y"
        }))
        .unwrap();
        let e = swt_row(&row, &template()).unwrap_err();
        assert_eq!(
            e,
            SwtError::NoCodeEnd {
                instance_id: "o__r-2".into()
            }
        );
        assert!(e.to_string().starts_with("o__r-2: "));
        row.insert("text".into(), json!("p\n</code>"));
        row.insert("patch".into(), json!("x"));
        assert_eq!(
            swt_row(&row, &template()).unwrap_err(),
            SwtError::PatchNotWrapped {
                instance_id: "o__r-2".into()
            }
        );
    }

    #[test]
    fn shipped_templates_parse() {
        for mode in [SwtMode::Zsb, SwtMode::Zsp] {
            let t = SwtTemplate::builtin(mode);
            let out = swt_text("x\n<issue>\ni\n</issue>\n<code>\n</code>\ny", &t).unwrap();
            assert!(out.contains("\n<issue>\ni\n</issue>\n<code>\n</code>\n"));
            assert!(out.ends_with('\n'));
        }
        assert!(DEFAULT_ZSP.contains("```custom-diff\ndiff\n"));
        assert!(DEFAULT_ZSB.contains("```diff\n--- a/"));
    }
}

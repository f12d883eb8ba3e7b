//! Prompt templates: plain text with `{{name}}` placeholders, filled in one pass (so an issue text
//! that happens to contain `{{code}}` is never expanded again).
//!
//! The templates shipped with swtbench are our own wording and live in `assets/prompts/`; users
//! can supply their own file (for instance with the published wording) through `--template`.
//! Pure: parsing and filling only; reading the file is the caller's job.

use std::collections::BTreeSet;

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    /// Where it came from, for error messages (a file path or `builtin:<name>`).
    pub origin: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Slot(String),
}

/// Why a template cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error(
        "template {origin}: unknown placeholder `{{{{{name}}}}}` on line {line}; known: {known}"
    )]
    UnknownPlaceholder {
        origin: String,
        name: String,
        line: usize,
        known: String,
    },
    #[error("template {origin}: placeholder `{{{{{name}}}}}` must appear {expected}, found {found} time(s)")]
    Count {
        origin: String,
        name: String,
        expected: &'static str,
        found: usize,
    },
}

/// What a template must contain: each placeholder with whether it is required exactly once.
#[derive(Debug, Clone, Copy)]
pub struct Slots<'a> {
    /// Placeholders that must appear exactly once.
    pub required: &'a [&'a str],
    /// Placeholders that may appear any number of times.
    pub optional: &'a [&'a str],
}

impl Template {
    /// Parses `text`; `{{name}}` with a name made of `[a-z_]` is a placeholder, anything else is
    /// literal text.
    pub fn parse(origin: &str, text: &str, slots: Slots<'_>) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = text;
        let mut literal = String::new();
        while let Some(open) = rest.find("{{") {
            let after = &rest[open + 2..];
            let name_len = after
                .find(|c: char| !(c.is_ascii_lowercase() || c == '_'))
                .unwrap_or(after.len());
            if name_len > 0 && after[name_len..].starts_with("}}") {
                let name = &after[..name_len];
                let known = slots.required.contains(&name) || slots.optional.contains(&name);
                if !known {
                    let line = text[..text.len() - rest.len() + open].matches('\n').count() + 1;
                    let all: BTreeSet<&str> = slots
                        .required
                        .iter()
                        .chain(slots.optional)
                        .copied()
                        .collect();
                    return Err(TemplateError::UnknownPlaceholder {
                        origin: origin.to_string(),
                        name: name.to_string(),
                        line,
                        known: all
                            .iter()
                            .map(|n| format!("{{{{{n}}}}}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                    });
                }
                literal.push_str(&rest[..open]);
                if !literal.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut literal)));
                }
                parts.push(Part::Slot(name.to_string()));
                rest = &after[name_len + 2..];
            } else {
                literal.push_str(&rest[..open + 2]);
                rest = after;
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        for name in slots.required {
            let found = parts
                .iter()
                .filter(|p| matches!(p, Part::Slot(n) if n == name))
                .count();
            if found != 1 {
                return Err(TemplateError::Count {
                    origin: origin.to_string(),
                    name: name.to_string(),
                    expected: "exactly once",
                    found,
                });
            }
        }
        Ok(Template {
            origin: origin.to_string(),
            parts,
        })
    }

    /// Fills the placeholders; `value` is asked for each slot name the template uses.
    pub fn render<'v>(&self, value: impl Fn(&str) -> &'v str) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Slot(n) => out.push_str(value(n)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOTS: Slots<'static> = Slots {
        required: &["body"],
        optional: &["x"],
    };

    #[test]
    fn fills_in_one_pass_and_keeps_unrelated_braces() {
        let t = Template::parse("t", "a {{body}} b {{x}}{{x}} {{ not }} {{Body}}", SLOTS).unwrap();
        let out = t.render(|n| if n == "body" { "{{x}}" } else { "X" });
        assert_eq!(out, "a {{x}} b XX {{ not }} {{Body}}");
    }

    #[test]
    fn unknown_and_missing_placeholders_are_errors() {
        let e = Template::parse("f.txt", "one\n{{body}} {{cod}}", SLOTS).unwrap_err();
        assert_eq!(
            e.to_string(),
            "template f.txt: unknown placeholder `{{cod}}` on line 2; known: {{body}}, {{x}}"
        );
        let e = Template::parse("f.txt", "nothing", SLOTS).unwrap_err();
        assert!(
            e.to_string()
                .contains("`{{body}}` must appear exactly once, found 0"),
            "{e}"
        );
        let e = Template::parse("f.txt", "{{body}}{{body}}", SLOTS).unwrap_err();
        assert!(e.to_string().contains("found 2"), "{e}");
    }
}

//! The command reference, docs/commands.md: every (sub)command's long `--help` as Markdown.

/// The Markdown reference of `sections` (each command's name and long help, in order): a contents
/// list, then one section per command with its help, trailing spaces trimmed, in a text block.
pub fn markdown(sections: &[(String, String)]) -> String {
    let mut out = String::new();
    out.push_str("# Command reference\n\n");
    out.push_str(
        "<!-- Generated from the command-line definitions by `swtbench help-markdown`; do not edit.\n     \
         Regenerate: SWTBENCH_BLESS=1 cargo test -p swtbench --test it cli_docs -->\n\n",
    );
    out.push_str(
        "Every command's `--help`, as the binary prints it. How the commands behave and fit \
         together,\nwith worked examples, is in [usage.md](usage.md).\n\n",
    );
    for (name, _) in sections {
        out.push_str(&format!("- [`{name}`](#{})\n", anchor(name)));
    }
    for (name, help) in sections {
        let help: Vec<&str> = help.lines().map(str::trim_end).collect();
        out.push_str(&format!(
            "\n## {name}\n\n```text\n{}\n```\n",
            help.join("\n").trim_end()
        ));
    }
    out
}

/// GitHub's heading anchor: lower case, spaces to dashes, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_are_githubs() {
        assert_eq!(anchor("swtbench images build"), "swtbench-images-build");
        assert_eq!(anchor("swtbench parse-log"), "swtbench-parse-log");
        assert_eq!(anchor("a.b (c)"), "ab-c");
    }

    #[test]
    fn a_contents_list_then_a_section_per_command() {
        let sections = [
            ("swtbench".to_string(), "Usage: swtbench  \n\n".to_string()),
            ("swtbench run".to_string(), "Run it\n".to_string()),
        ];
        let md = markdown(&sections);
        assert!(md.starts_with("# Command reference\n\n<!-- Generated"));
        assert!(md.contains("- [`swtbench`](#swtbench)\n- [`swtbench run`](#swtbench-run)\n"));
        assert!(md.contains("\n## swtbench\n\n```text\nUsage: swtbench\n```\n"));
        assert!(md.ends_with("\n## swtbench run\n\n```text\nRun it\n```\n"));
    }
}

//! Escaping for the three contexts the renderer writes untrusted text into: HTML text, HTML
//! attribute values, and JSON embedded in a `<script type="application/json">` element.
//!
//! Everything that comes from a run tree (instance ids, patches, log excerpts, error messages,
//! parameters) passes through one of these functions before it reaches the page. Nothing here
//! decides *what* to show; it only makes text inert.

use std::fmt::Write as _;

use serde::Serialize;

/// Escapes text for an HTML text node: `&`, `<`, `>` (and quotes, so the same output is also safe
/// inside a quoted attribute value).
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    push_html(&mut out, text);
    out
}

/// Appends `text` to `out`, escaped as by [`html`].
pub fn push_html(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // NUL and other C0 controls are parse errors in HTML; show them as replacement marks
            // rather than let them reach the parser.
            '\0' => out.push('\u{FFFD}'),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' && c != '\r' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
}

/// Escapes text for a double-quoted attribute value.
pub fn attr(text: &str) -> String {
    html(text)
}

/// Serialises `value` as JSON that is safe to place between `<script type="application/json">` and
/// `</script>`: `<`, `>` and `&` become `\u003c`, `\u003e`, `\u0026` (so neither `</script>` nor
/// `<!--` can appear), and U+2028/U+2029 become escapes (so the text is also valid JavaScript).
///
/// These characters can only occur inside JSON strings, where the `\uXXXX` form means the same
/// thing, so `JSON.parse` returns exactly the original value.
pub fn json_for_script<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let raw = serde_json::to_string(value)?;
    Ok(script_safe_json(&raw))
}

/// Applies the escapes of [`json_for_script`] to already-serialised JSON text.
pub fn script_safe_json(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len() + raw.len() / 32);
    for c in raw.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// A string usable as (part of) an HTML `id` and URL fragment: ASCII letters, digits, `-`, `_`
/// and `.` are kept, every other byte becomes `~XX` (hex). Injective, so two instances never share
/// an anchor.
pub fn anchor(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.' {
            out.push(b as char);
        } else {
            let _ = write!(out, "~{b:02X}");
        }
    }
    out
}

/// Percent-encodes a relative path for an `href` (keeps `/`, letters, digits and `-_.~`).
pub fn href_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
#[expect(clippy::unwrap_used, reason = "a failed unwrap fails the test")]
mod tests {
    use super::*;

    #[test]
    fn html_text_is_inert() {
        assert_eq!(
            html("<script>alert(1)</script> & \"x\" 'y'"),
            "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;x&quot; &#39;y&#39;"
        );
        assert_eq!(html("a\0b\x07c\nd"), "a\u{FFFD}b\u{FFFD}c\nd");
    }

    #[test]
    fn script_json_cannot_close_the_element_and_round_trips() {
        let v = serde_json::json!({"p": "</script><!-- & \u{2028}\u{2029} >"});
        let s = json_for_script(&v).unwrap();
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'));
        assert!(!s.contains('\u{2028}') && !s.contains('\u{2029}'));
        let back: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn anchors_are_injective_and_safe() {
        assert_eq!(anchor("django__django-11099"), "django__django-11099");
        assert_eq!(anchor("a b\"<"), "a~20b~22~3C");
        assert_ne!(anchor("a~20"), anchor("a "));
        assert_eq!(href_path("run 1/a#b?.txt"), "run%201/a%23b%3F.txt");
    }
}

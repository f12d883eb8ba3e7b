//! The text analysis chain of Anserini's default English analyzer, which is what decided the
//! SWE-bench BM25 rankings: word segmentation (Unicode UAX #29, as Lucene's `StandardTokenizer`),
//! possessive removal, lowercasing, Lucene's 33 English stop words, and the Porter stemmer.
//!
//! On source code this keeps `os.path.join`, `self.assertEqual`, `foo_bar`, `x.py`, `3.14` and
//! `can't` as single tokens and splits on `/`, `(`, `=`, `-` and whitespace.
//!
//! Pure: no I/O. [`RawTokens`] is the hot loop of retrieval, so it borrows from the input and
//! allocates nothing; callers that see the same raw token many times cache its analysed form.

use unicode_segmentation::UnicodeSegmentation;

use crate::porter::PorterStemmer;

/// Lucene's `EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`.
pub const STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// `StandardTokenizer`'s default maximum token length, in UTF-16 units; longer runs are split.
pub const MAX_TOKEN_LENGTH: usize = 255;

pub fn is_stop_word(lowercased: &str) -> bool {
    // The list is short and the words are tiny: a length check rejects most tokens at once.
    lowercased.len() <= 5 && STOP_WORDS.contains(&lowercased)
}

/// The raw tokens of a text, before possessive removal, lowercasing, stop words and stemming.
pub fn raw_tokens(text: &str) -> RawTokens<'_> {
    let segments = if text.is_ascii() {
        Segments::Ascii(AsciiWords {
            text: text.as_bytes(),
            pos: 0,
        })
    } else {
        Segments::Unicode(text.split_word_bounds())
    };
    RawTokens {
        text,
        segments,
        pending: "",
    }
}

/// Iterator returned by [`raw_tokens`].
#[derive(Debug)]
pub struct RawTokens<'a> {
    text: &'a str,
    segments: Segments<'a>,
    /// Rest of an over-long segment still to be cut into [`MAX_TOKEN_LENGTH`] pieces.
    pending: &'a str,
}

#[derive(Debug)]
enum Segments<'a> {
    /// Pure-ASCII text (nearly all source files): a hand-written scanner for the ASCII subset of
    /// the UAX #29 rules, several times faster than the general segmenter.
    Ascii(AsciiWords<'a>),
    Unicode(unicode_segmentation::UWordBounds<'a>),
}

impl<'a> Iterator for RawTokens<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        loop {
            if !self.pending.is_empty() {
                let (head, tail) = split_at_utf16(self.pending, MAX_TOKEN_LENGTH);
                self.pending = tail;
                return Some(head);
            }
            let seg = match &mut self.segments {
                Segments::Ascii(words) => {
                    let (start, end) = words.next()?;
                    &self.text[start..end]
                }
                Segments::Unicode(bounds) => {
                    let seg = bounds.next()?;
                    if !is_token(seg) {
                        continue;
                    }
                    seg
                }
            };
            if seg.len() <= MAX_TOKEN_LENGTH {
                // Byte length bounds UTF-16 length: no cut needed.
                return Some(seg);
            }
            self.pending = seg;
        }
    }
}

/// Word segments of ASCII text that contain a letter or digit, as byte ranges.
///
/// In ASCII, UAX #29 joins any run of letters, digits and `_` (WB5, WB8–WB10, WB13a/b), plus a
/// single `:`, `.` or `'` between two letters (WB6/7), and a single `.`, `'`, `,` or `;` between
/// two digits (WB11/12). Everything else separates words.
#[derive(Debug)]
struct AsciiWords<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Iterator for AsciiWords<'_> {
    type Item = (usize, usize);

    fn next(&mut self) -> Option<(usize, usize)> {
        let t = self.text;
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        loop {
            while self.pos < t.len() && !word(t[self.pos]) {
                self.pos += 1;
            }
            if self.pos >= t.len() {
                return None;
            }
            let start = self.pos;
            let mut has_alnum = false;
            let mut i = start;
            loop {
                while i < t.len() && word(t[i]) {
                    has_alnum |= t[i] != b'_';
                    i += 1;
                }
                // `t[i]` is not a word character: join through it only between letters or digits.
                if i + 1 < t.len() && i > start {
                    let (before, mid, after) = (t[i - 1], t[i], t[i + 1]);
                    let letters = before.is_ascii_alphabetic() && after.is_ascii_alphabetic();
                    let digits = before.is_ascii_digit() && after.is_ascii_digit();
                    let joins = match mid {
                        b':' => letters,
                        b'.' | b'\'' => letters || digits,
                        b',' | b';' => digits,
                        _ => false,
                    };
                    if joins {
                        i += 1;
                        continue;
                    }
                }
                break;
            }
            self.pos = i;
            if has_alnum {
                return Some((start, i));
            }
        }
    }
}

/// Splits after `units` UTF-16 code units (never inside a character).
fn split_at_utf16(s: &str, units: usize) -> (&str, &str) {
    let mut n = 0;
    for (i, c) in s.char_indices() {
        n += c.len_utf16();
        if n > units {
            return s.split_at(i);
        }
    }
    (s, "")
}

/// Word segments Lucene emits: those with a letter or digit, and emoji.
fn is_token(seg: &str) -> bool {
    seg.chars().any(|c| c.is_alphanumeric() || is_emoji(c))
}

/// Lucene emits emoji sequences as tokens. This covers the pictographic blocks, which is where
/// nearly all emoji in issue texts come from.
fn is_emoji(c: char) -> bool {
    matches!(u32::from(c), 0x1F000..=0x1FAFF | 0x2600..=0x27BF)
}

/// Removes a trailing possessive `'s` (`’s`, `＇s`, with `s` or `S`), as `EnglishPossessiveFilter`.
pub fn strip_possessive(token: &str) -> &str {
    let mut rev = token.char_indices().rev();
    let (Some((_, s)), Some((i, apos))) = (rev.next(), rev.next()) else {
        return token;
    };
    if (s == 's' || s == 'S') && matches!(apos, '\'' | '\u{2019}' | '\u{FF07}') {
        &token[..i]
    } else {
        token
    }
}

/// Java's `Character.toLowerCase` per code point, into `out` (cleared first).
pub fn lowercase_into(token: &str, out: &mut String) {
    out.clear();
    if token.is_ascii() {
        out.push_str(token);
        out.make_ascii_lowercase();
        return;
    }
    for c in token.chars() {
        // Java maps U+0130 to a plain `i`; Rust's full mapping adds a combining dot.
        if c == '\u{130}' {
            out.push('i');
            continue;
        }
        let mut lower = c.to_lowercase();
        match (lower.next(), lower.next()) {
            (Some(l), None) => out.push(l),
            _ => out.push(c),
        }
    }
}

/// The analysis chain with reusable buffers.
#[derive(Debug, Default)]
pub struct Analyzer {
    stemmer: PorterStemmer,
    lower: String,
}

impl Analyzer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Analyses one raw token: `None` for a stop word, otherwise the indexed term in `out`.
    pub fn term<'o>(&mut self, raw: &str, out: &'o mut String) -> Option<&'o str> {
        lowercase_into(strip_possessive(raw), &mut self.lower);
        if is_stop_word(&self.lower) {
            return None;
        }
        self.stemmer.stem_into(&self.lower, out);
        Some(out.as_str())
    }

    /// Every indexed term of `text`, in order.
    pub fn analyze(&mut self, text: &str) -> Vec<String> {
        let mut out = String::new();
        raw_tokens(text)
            .filter_map(|raw| self.term(raw, &mut out).map(str::to_string))
            .collect()
    }
}

/// Every indexed term of `text`, in order.
pub fn analyze(text: &str) -> Vec<String> {
    Analyzer::new().analyze(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Vec<&str> {
        raw_tokens(text).collect()
    }

    #[test]
    fn code_segments_like_standard_tokenizer() {
        assert_eq!(
            raw("os.path.join(a, b) self.assertEqual foo_bar __init__ x.py 3.14 a:b can't"),
            vec![
                "os.path.join",
                "a",
                "b",
                "self.assertEqual",
                "foo_bar",
                "__init__",
                "x.py",
                "3.14",
                "a:b",
                "can't"
            ]
        );
        assert_eq!(raw("x/y-z=w"), vec!["x", "y", "z", "w"]);
        assert_eq!(raw("___ -- == 漢字"), vec!["漢", "字"]);
        assert_eq!(raw("bug 🐛 here"), vec!["bug", "🐛", "here"]);
    }

    #[test]
    fn ascii_scanner_agrees_with_the_unicode_segmenter() {
        // xorshift over an alphabet of every character class that matters in ASCII.
        let alphabet = b"aZ09_.:',;- \n(\"/";
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            let len = 1 + (state % 24) as usize;
            let mut s = String::new();
            for _ in 0..len {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                s.push(alphabet[(state % alphabet.len() as u64) as usize] as char);
            }
            let fast: Vec<&str> = raw(&s);
            let general: Vec<&str> = s.split_word_bounds().filter(|w| is_token(w)).collect();
            assert_eq!(fast, general, "{s:?}");
        }
    }

    #[test]
    fn long_runs_are_cut_at_255_units() {
        let long = "a".repeat(600);
        let toks = raw(&long);
        assert_eq!(
            toks.iter().map(|t| t.len()).collect::<Vec<_>>(),
            vec![255, 255, 90]
        );
    }

    #[test]
    fn possessive_lowercase_stop_and_stem() {
        assert_eq!(strip_possessive("Django's"), "Django");
        assert_eq!(strip_possessive("model’S"), "model");
        assert_eq!(strip_possessive("s"), "s");
        assert_eq!(strip_possessive("'s"), "");
        assert_eq!(strip_possessive("its"), "its");
        let mut out = String::new();
        lowercase_into("İSTANBUL", &mut out);
        assert_eq!(out, "istanbul");
        assert_eq!(
            analyze("The QuerySet's filter() is BROKEN for the models in query.py"),
            vec!["queryset", "filter", "broken", "model", "query.pi"]
        );
    }
}

//! The Porter stemmer exactly as Lucene's `PorterStemFilter` applies it.
//!
//! Lucene ships Martin Porter's *reference implementation* (release 3), not the 1980 paper: it has
//! the `-bli → -ble` and `-logi → -log` rules, leaves words of one or two characters alone, and
//! treats every character that is not `a e i o u` (or a `y` after a consonant) as a consonant, so
//! tokens such as `query.py` or `x86_64` are stemmed too (`query.py` → `query.pi`). It works on
//! UTF-16 code units, as Java does; this port does the same so that non-BMP characters count as
//! two units exactly like there.
//!
//! Snowball's "English" (Porter2) is a different algorithm and must not be used in its place.
//! This module is pure: no I/O, no allocation beyond its reusable buffer.

/// A reusable stemmer (keeps its buffer between words).
#[derive(Debug, Default, Clone)]
pub struct PorterStemmer {
    b: Vec<u16>,
    /// Index of the last character of the current word.
    k: isize,
    /// End of the stem found by the last successful [`Self::ends`] (may be -1).
    j: isize,
}

/// Stems one (already lowercased) word.
pub fn stem(word: &str) -> String {
    let mut s = PorterStemmer::default();
    let mut out = String::with_capacity(word.len());
    s.stem_into(word, &mut out);
    out
}

impl PorterStemmer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stems `word` and writes the result to `out` (cleared first).
    pub fn stem_into(&mut self, word: &str, out: &mut String) {
        out.clear();
        self.b.clear();
        self.b.extend(word.encode_utf16());
        if self.b.len() <= 2 {
            out.push_str(word);
            return;
        }
        self.k = self.b.len() as isize - 1;
        self.j = 0;
        self.step1();
        self.step2();
        self.step3();
        self.step4();
        self.step5();
        self.step6();
        let end = (self.k + 1) as usize;
        out.extend(
            char::decode_utf16(self.b[..end].iter().copied()).map(|r| r.unwrap_or('\u{FFFD}')),
        );
    }

    fn at(&self, i: isize) -> u16 {
        self.b[i as usize]
    }

    fn is_consonant(&self, i: isize) -> bool {
        match self.at(i) {
            c if c == u16::from(b'a')
                || c == u16::from(b'e')
                || c == u16::from(b'i')
                || c == u16::from(b'o')
                || c == u16::from(b'u') =>
            {
                false
            }
            c if c == u16::from(b'y') => i == 0 || !self.is_consonant(i - 1),
            _ => true,
        }
    }

    /// Number of vowel-consonant sequences in `b[0..=j]` (Porter's *m*).
    fn measure(&self) -> usize {
        let j = self.j;
        let mut i: isize = 0;
        // Skip the optional leading consonants.
        loop {
            if i > j {
                return 0;
            }
            if !self.is_consonant(i) {
                break;
            }
            i += 1;
        }
        let mut n = 0;
        loop {
            // A run of vowels...
            loop {
                if i > j {
                    return n;
                }
                if self.is_consonant(i) {
                    break;
                }
                i += 1;
            }
            // ...closed by a run of consonants counts once.
            n += 1;
            loop {
                if i > j {
                    return n;
                }
                if !self.is_consonant(i) {
                    break;
                }
                i += 1;
            }
        }
    }

    fn vowel_in_stem(&self) -> bool {
        (0..=self.j).any(|i| !self.is_consonant(i))
    }

    fn double_consonant(&self, at: isize) -> bool {
        at >= 1 && self.at(at) == self.at(at - 1) && self.is_consonant(at)
    }

    /// consonant–vowel–consonant ending at `i`, the last consonant not `w`, `x` or `y`.
    fn cvc(&self, i: isize) -> bool {
        if i < 2 || !self.is_consonant(i) || self.is_consonant(i - 1) || !self.is_consonant(i - 2) {
            return false;
        }
        let c = self.at(i);
        !(c == u16::from(b'w') || c == u16::from(b'x') || c == u16::from(b'y'))
    }

    /// Whether `b[..=k]` ends with `suffix`; on success `j` marks the end of the remaining stem.
    fn ends(&mut self, suffix: &str) -> bool {
        let s = suffix.as_bytes();
        let len = s.len() as isize;
        let start = self.k - len + 1;
        if start < 0 {
            return false;
        }
        let matches = s
            .iter()
            .enumerate()
            .all(|(n, &c)| self.b[start as usize + n] == u16::from(c));
        if matches {
            self.j = self.k - len;
        }
        matches
    }

    /// Replaces `b[j+1..=k]` with `s`.
    fn set_to(&mut self, s: &str) {
        let start = (self.j + 1) as usize;
        let needed = start + s.len();
        if self.b.len() < needed {
            self.b.resize(needed, 0);
        }
        for (n, c) in s.bytes().enumerate() {
            self.b[start + n] = u16::from(c);
        }
        self.k = self.j + s.len() as isize;
    }

    fn replace_if_measured(&mut self, s: &str) {
        if self.measure() > 0 {
            self.set_to(s);
        }
    }

    fn last_is(&self, c: u8) -> bool {
        self.at(self.k) == u16::from(c)
    }

    /// Plurals and `-ed` / `-ing`.
    fn step1(&mut self) {
        if self.last_is(b's') {
            if self.ends("sses") {
                self.k -= 2;
            } else if self.ends("ies") {
                self.set_to("i");
            } else if self.at(self.k - 1) != u16::from(b's') {
                self.k -= 1;
            }
        }
        if self.ends("eed") {
            if self.measure() > 0 {
                self.k -= 1;
            }
        } else if (self.ends("ed") || self.ends("ing")) && self.vowel_in_stem() {
            self.k = self.j;
            if self.ends("at") {
                self.set_to("ate");
            } else if self.ends("bl") {
                self.set_to("ble");
            } else if self.ends("iz") {
                self.set_to("ize");
            } else if self.double_consonant(self.k) {
                let c = self.at(self.k);
                if !(c == u16::from(b'l') || c == u16::from(b's') || c == u16::from(b'z')) {
                    self.k -= 1;
                }
            } else if self.measure() == 1 && self.cvc(self.k) {
                self.set_to("e");
            }
        }
    }

    /// Terminal `y` → `i` when the stem has a vowel.
    fn step2(&mut self) {
        if self.ends("y") && self.vowel_in_stem() {
            let k = self.k as usize;
            self.b[k] = u16::from(b'i');
        }
    }

    /// Double suffixes to single ones (`-ization` → `-ize`, …), keyed on the penultimate letter.
    fn step3(&mut self) {
        if self.k == 0 {
            return;
        }
        const RULES: &[(u8, &[(&str, &str)])] = &[
            (b'a', &[("ational", "ate"), ("tional", "tion")]),
            (b'c', &[("enci", "ence"), ("anci", "ance")]),
            (b'e', &[("izer", "ize")]),
            (
                b'l',
                &[
                    ("bli", "ble"),
                    ("alli", "al"),
                    ("entli", "ent"),
                    ("eli", "e"),
                    ("ousli", "ous"),
                ],
            ),
            (
                b'o',
                &[("ization", "ize"), ("ation", "ate"), ("ator", "ate")],
            ),
            (
                b's',
                &[
                    ("alism", "al"),
                    ("iveness", "ive"),
                    ("fulness", "ful"),
                    ("ousness", "ous"),
                ],
            ),
            (
                b't',
                &[("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")],
            ),
            (b'g', &[("logi", "log")]),
        ];
        self.apply_first_matching(self.at(self.k - 1), RULES);
    }

    /// `-ic-`, `-full`, `-ness` and friends, keyed on the last letter.
    fn step4(&mut self) {
        const RULES: &[(u8, &[(&str, &str)])] = &[
            (b'e', &[("icate", "ic"), ("ative", ""), ("alize", "al")]),
            (b'i', &[("iciti", "ic")]),
            (b'l', &[("ical", "ic"), ("ful", "")]),
            (b's', &[("ness", "")]),
        ];
        self.apply_first_matching(self.at(self.k), RULES);
    }

    /// The first suffix of the key's list that matches is replaced (when m > 0) and the step
    /// ends, whether or not the measure allowed the replacement.
    fn apply_first_matching(&mut self, key: u16, rules: &[(u8, &[(&str, &str)])]) {
        let Some((_, list)) = rules.iter().find(|(c, _)| u16::from(*c) == key) else {
            return;
        };
        for (suffix, replacement) in list.iter() {
            if self.ends(suffix) {
                self.replace_if_measured(replacement);
                return;
            }
        }
    }

    /// Drops `-ant`, `-ence`, … when m > 1.
    fn step5(&mut self) {
        if self.k == 0 {
            return;
        }
        let key = self.at(self.k - 1);
        let found = if key == u16::from(b'a') {
            self.ends("al")
        } else if key == u16::from(b'c') {
            self.ends("ance") || self.ends("ence")
        } else if key == u16::from(b'e') {
            self.ends("er")
        } else if key == u16::from(b'i') {
            self.ends("ic")
        } else if key == u16::from(b'l') {
            self.ends("able") || self.ends("ible")
        } else if key == u16::from(b'n') {
            self.ends("ant") || self.ends("ement") || self.ends("ment") || self.ends("ent")
        } else if key == u16::from(b'o') {
            (self.ends("ion")
                && self.j >= 0
                && (self.at(self.j) == u16::from(b's') || self.at(self.j) == u16::from(b't')))
                || self.ends("ou")
        } else if key == u16::from(b's') {
            self.ends("ism")
        } else if key == u16::from(b't') {
            self.ends("ate") || self.ends("iti")
        } else if key == u16::from(b'u') {
            self.ends("ous")
        } else if key == u16::from(b'v') {
            self.ends("ive")
        } else if key == u16::from(b'z') {
            self.ends("ize")
        } else {
            false
        };
        if found && self.measure() > 1 {
            self.k = self.j;
        }
    }

    /// Final `-e` and `-ll`.
    fn step6(&mut self) {
        self.j = self.k;
        if self.last_is(b'e') {
            let m = self.measure();
            if m > 1 || (m == 1 && !self.cvc(self.k - 1)) {
                self.k -= 1;
            }
        }
        if self.last_is(b'l') && self.double_consonant(self.k) && self.measure() > 1 {
            self.k -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_examples_from_the_algorithm_description() {
        for (w, s) in [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "ti"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("hopping", "hop"),
            ("falling", "fall"),
            ("filing", "file"),
            ("happy", "happi"),
            ("relational", "relat"),
            ("generalization", "gener"),
            ("triplicate", "triplic"),
            ("revival", "reviv"),
            ("adjustment", "adjust"),
            ("controll", "control"),
            ("roll", "roll"),
        ] {
            assert_eq!(stem(w), s, "{w}");
        }
    }

    #[test]
    fn reference_implementation_departures_from_the_paper() {
        // -bli -> -ble and -logi -> -log exist only in the reference implementation.
        assert_eq!(stem("possibly"), "possibl");
        assert_eq!(stem("archaeology"), "archaeolog");
        // Words of one or two characters are not stemmed ("as" would become "a").
        assert_eq!(stem("as"), "as");
        assert_eq!(stem("is"), "is");
    }

    #[test]
    fn code_tokens_are_stemmed_like_words() {
        assert_eq!(stem("query.py"), "query.pi");
        assert_eq!(stem("os.path.join"), "os.path.join");
        assert_eq!(stem("self.assertequal"), "self.assertequ");
        assert_eq!(stem("__init__"), "__init__");
        assert_eq!(stem("x86_64"), "x86_64");
        // "ion" alone must not index before the start of the word.
        assert_eq!(stem("ion"), "ion");
        assert_eq!(stem("eed"), "eed");
    }

    #[test]
    fn non_ascii_is_kept_and_counted_in_utf16_units() {
        assert_eq!(stem("café"), "café");
        // Two emoji are two UTF-16 units each: length 4 > 2, stemmed (nothing to remove).
        assert_eq!(stem("😀😀"), "😀😀");
        // Non-ASCII letters are consonants to the algorithm (checked against NLTK's reference mode).
        assert_eq!(stem("naïvely"), "naïv");
    }
}

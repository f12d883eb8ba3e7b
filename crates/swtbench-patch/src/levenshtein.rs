//! Levenshtein distance between two lines, counted in Unicode code points (what the Python
//! `editdistance` package computes for two `str`s).
//!
//! Fuzzy placement compares every line of a file with every context line, so this is the hot
//! loop: common prefixes and suffixes are skipped, and the rest uses the bit-parallel algorithm
//! of Myers (1999) in Hyyrö's formulation — one 64-bit word for lines of up to 64 code points,
//! a column of words (carrying the horizontal delta from word to word) for longer ones, so a
//! 100-character line costs two words per character instead of a 100-cell row. Pure.

/// Edit distance between `a` and `b` (insertions, deletions and substitutions, all cost 1).
pub fn distance(a: &[char], b: &[char]) -> usize {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (a, b) = (&a[..a.len() - suffix], &b[..b.len() - suffix]);
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.is_empty() {
        return long.len();
    }
    if short.len() <= 64 {
        bit_parallel(short, long)
    } else {
        blocks(short, long)
    }
}

/// The pattern's match masks: for each character, one bit per pattern position.
struct Masks {
    words: usize,
    ascii: Vec<u64>,
    other: Vec<(char, Vec<u64>)>,
}

impl Masks {
    fn new(pattern: &[char]) -> Masks {
        let words = pattern.len().div_ceil(64);
        let mut m = Masks {
            words,
            ascii: vec![0; 128 * words],
            other: Vec::new(),
        };
        for (i, &c) in pattern.iter().enumerate() {
            let (w, bit) = (i / 64, 1u64 << (i % 64));
            if (c as u32) < 128 {
                m.ascii[c as usize * words + w] |= bit;
            } else if let Some(e) = m.other.iter_mut().find(|(k, _)| *k == c) {
                e.1[w] |= bit;
            } else {
                let mut v = vec![0; words];
                v[w] = bit;
                m.other.push((c, v));
            }
        }
        m
    }

    fn word(&self, c: char, w: usize) -> u64 {
        if (c as u32) < 128 {
            self.ascii[c as usize * self.words + w]
        } else {
            self.other
                .iter()
                .find(|(k, _)| *k == c)
                .map_or(0, |(_, v)| v[w])
        }
    }
}

/// Myers/Hyyrö over a column of 64-bit words; `pattern` has more than 64 code points. Each word
/// takes the horizontal delta (−1, 0, +1) of the row above it and passes its own on; the first
/// word gets +1 (the top row of the matrix counts up).
fn blocks(pattern: &[char], text: &[char]) -> usize {
    let masks = Masks::new(pattern);
    let words = masks.words;
    let last_bit = 1u64 << ((pattern.len() - 1) % 64);
    let mut pv = vec![u64::MAX; words];
    let mut mv = vec![0u64; words];
    let mut score = pattern.len() as i64;
    for &c in text {
        let mut hin: i64 = 1;
        for w in 0..words {
            let mut eq = masks.word(c, w);
            let (p, m) = (pv[w], mv[w]);
            let xv = eq | m;
            let hin_neg = u64::from(hin < 0);
            eq |= hin_neg;
            let xh = ((eq & p).wrapping_add(p) ^ p) | eq;
            let mut ph = m | !(xh | p);
            let mut mh = p & xh;
            let high = if w + 1 == words { last_bit } else { 1 << 63 };
            let hout = i64::from(ph & high != 0) - i64::from(mh & high != 0);
            ph = (ph << 1) | u64::from(hin > 0);
            mh = (mh << 1) | hin_neg;
            pv[w] = mh | !(xv | ph);
            mv[w] = ph & xv;
            hin = hout;
        }
        score += hin;
    }
    score as usize
}

/// Myers/Hyyrö bit-vector edit distance; `pattern` has 1..=64 code points.
fn bit_parallel(pattern: &[char], text: &[char]) -> usize {
    let m = pattern.len();
    let mut ascii = [0u64; 128];
    let mut other: Vec<(char, u64)> = Vec::new();
    for (i, &c) in pattern.iter().enumerate() {
        let bit = 1u64 << i;
        if (c as u32) < 128 {
            ascii[c as usize] |= bit;
        } else if let Some(e) = other.iter_mut().find(|(k, _)| *k == c) {
            e.1 |= bit;
        } else {
            other.push((c, bit));
        }
    }
    let peq = |c: char| -> u64 {
        if (c as u32) < 128 {
            ascii[c as usize]
        } else {
            other
                .iter()
                .find(|(k, _)| *k == c)
                .map_or(0, |&(_, mask)| mask)
        }
    };
    let high = 1u64 << (m - 1);
    let mut pv: u64 = u64::MAX;
    let mut mv: u64 = 0;
    let mut score = m;
    for &c in text {
        let eq = peq(c);
        let xv = eq | mv;
        let xh = ((eq & pv).wrapping_add(pv) ^ pv) | eq;
        let mut ph = mv | !(xh | pv);
        let mut mh = pv & xh;
        if ph & high != 0 {
            score += 1;
        } else if mh & high != 0 {
            score -= 1;
        }
        ph = (ph << 1) | 1;
        mh <<= 1;
        pv = mh | !(xv | ph);
        mv = ph & xv;
    }
    score
}

/// The textbook dynamic programme: the reference the bit-parallel versions are tested against.
#[cfg(test)]
fn dynamic(a: &[char], b: &[char]) -> usize {
    let mut row: Vec<usize> = (0..=a.len()).collect();
    for (j, &cb) in b.iter().enumerate() {
        let mut diag = row[0];
        row[0] = j + 1;
        for (i, &ca) in a.iter().enumerate() {
            let sub = diag + usize::from(ca != cb);
            diag = row[i + 1];
            row[i + 1] = sub.min(row[i] + 1).min(diag + 1);
        }
    }
    row[a.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn known_distances() {
        for (a, b, d) in [
            ("kitten", "sitting", 3),
            ("", "abc", 3),
            ("flaw", "lawn", 2),
            ("    assert x == 1", "    assert x == 2", 1),
            ("ä€b", "a€c", 2),
        ] {
            assert_eq!(distance(&chars(a), &chars(b)), d, "{a:?} {b:?}");
        }
    }

    #[test]
    fn bit_parallel_agrees_with_the_dynamic_programme() {
        // A small deterministic generator: no external randomness, reproducible failures.
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet: Vec<char> = "ab c(é)".chars().collect();
        for _ in 0..3000 {
            let la = (next() % 70) as usize;
            let lb = (next() % 70) as usize;
            let a: Vec<char> = (0..la)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let b: Vec<char> = (0..lb)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let expected = if a.len() <= b.len() {
                dynamic(&a, &b)
            } else {
                dynamic(&b, &a)
            };
            assert_eq!(distance(&a, &b), expected, "{a:?} {b:?}");
            if !a.is_empty() && a.len() <= 64 {
                assert_eq!(bit_parallel(&a, &b), expected, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn word_columns_agree_with_the_dynamic_programme() {
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let alphabet: Vec<char> = "ab c(é)\t".chars().collect();
        // Lengths around the word boundaries (64, 128, 192) and well past them.
        for round in 0..1500 {
            let la = 65 + (next() % 200) as usize;
            let lb = (next() % 260) as usize;
            let a: Vec<char> = (0..la)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            // Half of the texts are edits of the pattern, so distances are small too.
            let b: Vec<char> = if round % 2 == 0 {
                (0..lb)
                    .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                    .collect()
            } else {
                let mut b = a.clone();
                for _ in 0..(next() % 6) {
                    let at = (next() as usize) % b.len().max(1);
                    match next() % 3 {
                        0 if !b.is_empty() => {
                            b.remove(at);
                        }
                        1 => b.insert(at, 'x'),
                        _ if !b.is_empty() => b[at] = 'y',
                        _ => {}
                    }
                }
                b
            };
            let expected = dynamic(&a, &b);
            assert_eq!(blocks(&a, &b), expected, "{a:?} {b:?}");
            assert_eq!(distance(&a, &b), expected, "{a:?} {b:?}");
        }
        let long: Vec<char> = "x".repeat(300).chars().collect();
        assert_eq!(blocks(&long, &[]), 300);
        assert_eq!(blocks(&long, &long), 0);
    }
}

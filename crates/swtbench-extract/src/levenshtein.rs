//! Levenshtein distance between two lines, counted in Unicode code points (what the Python
//! `editdistance` package computes for two `str`s).
//!
//! Fuzzy placement compares every line of a file with every context line, so this is the hot
//! loop: common prefixes and suffixes are skipped, and lines of up to 64 code points use the
//! bit-parallel algorithm of Myers (1999) in Hyyrö's formulation; longer ones use the textbook
//! dynamic programme. Pure.

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
        dynamic(short, long)
    }
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
}

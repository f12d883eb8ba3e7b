//! A line diff that breaks ties as git's xdiff does, so that among several shortest edit scripts
//! the one `git diff` prints is chosen: equal prefix and suffix trimmed, lines without a match on
//! the other side set aside (and lines with very many matches when they sit among such lines),
//! then Myers' divide and conquer on the rest, splitting at the first middle snake found scanning
//! the diagonals from the highest down. Written from the algorithm's description; only inputs
//! that git diffs without its cost heuristics use it (see [`MAX_COST`], [`MAX_LINES`]), others
//! keep the caller's own diff.
//!
//! Pure.

use std::collections::HashMap;

/// Edit costs up to which git searches for a minimal script without heuristics; a search that
/// needs more gives up here (the caller falls back to its own diff).
pub(crate) const MAX_COST: usize = 256;

/// Files of more lines (both sides together) are left to the caller's diff, which has a
/// deadline: this search has none.
pub(crate) const MAX_LINES: usize = 50_000;

const SIMSCAN_WINDOW: usize = 100;
const KPDIS_RUN: usize = 4;
const MAX_EQLIMIT: usize = 1024;

fn bogosqrt(mut n: usize) -> usize {
    let mut i = 1;
    while n > 0 {
        i <<= 1;
        n >>= 2;
    }
    i
}

/// `dis`: 0 no match on the other side, 1 some, 2 many.
fn clean_mmatch(dis: &[u8], i: usize, s: usize, e: usize) -> bool {
    let s = if i - s > SIMSCAN_WINDOW {
        i - SIMSCAN_WINDOW
    } else {
        s
    };
    let e = if e - i > SIMSCAN_WINDOW {
        i + SIMSCAN_WINDOW
    } else {
        e
    };
    let (mut rdis0, mut rpdis0) = (0usize, 1usize);
    let mut r = 1;
    while i >= s + r {
        match dis[i - r] {
            0 => rdis0 += 1,
            2 => rpdis0 += 1,
            _ => break,
        }
        r += 1;
    }
    if rdis0 == 0 {
        return false;
    }
    let (mut rdis1, mut rpdis1) = (0usize, 1usize);
    let mut r = 1;
    while i + r <= e {
        match dis[i + r] {
            0 => rdis1 += 1,
            2 => rpdis1 += 1,
            _ => break,
        }
        r += 1;
    }
    if rdis1 == 0 {
        return false;
    }
    let rdis = rdis1 + rdis0;
    let rpdis = rpdis1 + rpdis0;
    rpdis * KPDIS_RUN < rpdis + rdis
}

struct Split {
    i1: usize,
    i2: usize,
}

struct Search<'a> {
    a: &'a [usize],
    b: &'a [usize],
    kvdf: Vec<isize>,
    kvdb: Vec<isize>,
    /// Offset of diagonal 0 in the arrays.
    zero: isize,
}

impl Search<'_> {
    fn f(&mut self, d: isize) -> &mut isize {
        let k = (d + self.zero) as usize;
        &mut self.kvdf[k]
    }
    fn bk(&mut self, d: isize) -> &mut isize {
        let k = (d + self.zero) as usize;
        &mut self.kvdb[k]
    }

    /// The middle snake of the box; `None` past [`MAX_COST`].
    fn split(&mut self, off1: usize, lim1: usize, off2: usize, lim2: usize) -> Option<Split> {
        let (off1, lim1, off2, lim2) = (off1 as isize, lim1 as isize, off2 as isize, lim2 as isize);
        let dmin = off1 - lim2;
        let dmax = lim1 - off2;
        let fmid = off1 - off2;
        let bmid = lim1 - lim2;
        let odd = (fmid - bmid) & 1 != 0;
        let (mut fmin, mut fmax) = (fmid, fmid);
        let (mut bmin, mut bmax) = (bmid, bmid);
        *self.f(fmid) = off1;
        *self.bk(bmid) = lim1;
        for _ec in 1..=MAX_COST {
            if fmin > dmin {
                fmin -= 1;
                *self.f(fmin - 1) = -1;
            } else {
                fmin += 1;
            }
            if fmax < dmax {
                fmax += 1;
                *self.f(fmax + 1) = -1;
            } else {
                fmax -= 1;
            }
            let mut d = fmax;
            while d >= fmin {
                let mut i1 = if *self.f(d - 1) >= *self.f(d + 1) {
                    *self.f(d - 1) + 1
                } else {
                    *self.f(d + 1)
                };
                let mut i2 = i1 - d;
                while i1 < lim1 && i2 < lim2 && self.a[i1 as usize] == self.b[i2 as usize] {
                    i1 += 1;
                    i2 += 1;
                }
                *self.f(d) = i1;
                if odd && bmin <= d && d <= bmax && *self.bk(d) <= i1 {
                    return Some(Split {
                        i1: i1 as usize,
                        i2: i2 as usize,
                    });
                }
                d -= 2;
            }
            if bmin > dmin {
                bmin -= 1;
                *self.bk(bmin - 1) = isize::MAX;
            } else {
                bmin += 1;
            }
            if bmax < dmax {
                bmax += 1;
                *self.bk(bmax + 1) = isize::MAX;
            } else {
                bmax -= 1;
            }
            let mut d = bmax;
            while d >= bmin {
                let mut i1 = if *self.bk(d - 1) < *self.bk(d + 1) {
                    *self.bk(d - 1)
                } else {
                    *self.bk(d + 1) - 1
                };
                let mut i2 = i1 - d;
                while i1 > off1
                    && i2 > off2
                    && self.a[(i1 - 1) as usize] == self.b[(i2 - 1) as usize]
                {
                    i1 -= 1;
                    i2 -= 1;
                }
                *self.bk(d) = i1;
                if !odd && fmin <= d && d <= fmax && i1 <= *self.f(d) {
                    return Some(Split {
                        i1: i1 as usize,
                        i2: i2 as usize,
                    });
                }
                d -= 2;
            }
        }
        None
    }

    /// Marks the changed entries of `a[off1..lim1]` and `b[off2..lim2]`.
    fn compare(
        &mut self,
        mut off1: usize,
        mut lim1: usize,
        mut off2: usize,
        mut lim2: usize,
        ca: &mut [bool],
        cb: &mut [bool],
    ) -> Option<()> {
        while off1 < lim1 && off2 < lim2 && self.a[off1] == self.b[off2] {
            off1 += 1;
            off2 += 1;
        }
        while off1 < lim1 && off2 < lim2 && self.a[lim1 - 1] == self.b[lim2 - 1] {
            lim1 -= 1;
            lim2 -= 1;
        }
        if off1 == lim1 {
            cb[off2..lim2].iter_mut().for_each(|c| *c = true);
        } else if off2 == lim2 {
            ca[off1..lim1].iter_mut().for_each(|c| *c = true);
        } else {
            let spl = self.split(off1, lim1, off2, lim2)?;
            self.compare(off1, spl.i1, off2, spl.i2, ca, cb)?;
            self.compare(spl.i1, lim1, spl.i2, lim2, ca, cb)?;
        }
        Some(())
    }
}

/// The changed flags of both sides as git's diff sets them before compaction, or `None` when the
/// inputs need more than [`MAX_COST`] edits in one box (git then uses heuristics) or have more
/// than [`MAX_LINES`] lines.
pub(crate) fn diff<'s>(old: &[&'s str], new: &[&'s str]) -> Option<(Vec<bool>, Vec<bool>)> {
    if old.len() + new.len() > MAX_LINES {
        return None;
    }
    let mut ids: HashMap<&'s str, usize> = HashMap::new();
    let mut ha1 = Vec::with_capacity(old.len());
    for l in old {
        let n = ids.len();
        ha1.push(*ids.entry(*l).or_insert(n));
    }
    let mut ha2 = Vec::with_capacity(new.len());
    for l in new {
        let n = ids.len();
        ha2.push(*ids.entry(*l).or_insert(n));
    }
    let (n1, n2) = (ha1.len(), ha2.len());
    let mut c1 = vec![false; n1];
    let mut c2 = vec![false; n2];
    // Common prefix and suffix.
    let mut start = 0;
    while start < n1 && start < n2 && ha1[start] == ha2[start] {
        start += 1;
    }
    let mut end1 = n1;
    let mut end2 = n2;
    while end1 > start && end2 > start && ha1[end1 - 1] == ha2[end2 - 1] {
        end1 -= 1;
        end2 -= 1;
    }
    // Occurrences of every line on each side (whole files, as git counts while hashing).
    let mut count1: HashMap<usize, usize> = HashMap::new();
    let mut count2: HashMap<usize, usize> = HashMap::new();
    for &h in &ha1 {
        *count1.entry(h).or_default() += 1;
    }
    for &h in &ha2 {
        *count2.entry(h).or_default() += 1;
    }
    let keep =
        |ha: &[usize], from: usize, to: usize, other: &HashMap<usize, usize>, nrec: usize| {
            let mlim = bogosqrt(nrec).min(MAX_EQLIMIT);
            let dis: Vec<u8> = ha[from..to]
                .iter()
                .map(|h| match other.get(h).copied().unwrap_or(0) {
                    0 => 0,
                    n if n >= mlim => 2,
                    _ => 1,
                })
                .collect();
            let last = dis.len().saturating_sub(1);
            (0..dis.len())
                .map(|i| dis[i] == 1 || (dis[i] == 2 && !clean_mmatch(&dis, i, 0, last)))
                .collect::<Vec<bool>>()
        };
    let keep1 = keep(&ha1, start, end1, &count2, n1);
    let keep2 = keep(&ha2, start, end2, &count1, n2);
    let mut a = Vec::new();
    let mut index1 = Vec::new();
    for (k, &kept) in keep1.iter().enumerate() {
        if kept {
            a.push(ha1[start + k]);
            index1.push(start + k);
        } else {
            c1[start + k] = true;
        }
    }
    let mut b = Vec::new();
    let mut index2 = Vec::new();
    for (k, &kept) in keep2.iter().enumerate() {
        if kept {
            b.push(ha2[start + k]);
            index2.push(start + k);
        } else {
            c2[start + k] = true;
        }
    }
    let diags = a.len() + b.len() + 3;
    let mut search = Search {
        a: &a,
        b: &b,
        kvdf: vec![0; 2 * diags + 2],
        kvdb: vec![0; 2 * diags + 2],
        zero: b.len() as isize + 1,
    };
    let mut ca = vec![false; a.len()];
    let mut cb = vec![false; b.len()];
    search.compare(0, a.len(), 0, b.len(), &mut ca, &mut cb)?;
    for (k, &c) in ca.iter().enumerate() {
        if c {
            c1[index1[k]] = true;
        }
    }
    for (k, &c) in cb.iter().enumerate() {
        if c {
            c2[index2[k]] = true;
        }
    }
    Some((c1, c2))
}

/// The unchanged lines of both sides are the same lines in the same order.
pub(crate) fn consistent(old: &[&str], new: &[&str], c1: &[bool], c2: &[bool]) -> bool {
    let kept1 = old.iter().zip(c1).filter(|(_, c)| !**c).map(|(l, _)| *l);
    let kept2 = new.iter().zip(c2).filter(|(_, c)| !**c).map(|(l, _)| *l);
    kept1.eq(kept2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_line_and_an_insertion() {
        let old = ["a\n", "b\n", "c\n"];
        let new = ["a\n", "B\n", "c\n", "d\n"];
        let (c1, c2) = diff(&old, &new).unwrap();
        assert_eq!(c1, [false, true, false]);
        assert_eq!(c2, [false, true, false, true]);
        assert!(consistent(&old, &new, &c1, &c2));
    }

    #[test]
    fn moved_lines_give_a_consistent_script() {
        let old = ["x\n", "\n", "y\n", "\n", "z\n", "\n", "w\n"];
        let new = ["y\n", "\n", "x\n", "\n", "w\n", "\n", "z\n"];
        let (c1, c2) = diff(&old, &new).unwrap();
        assert!(consistent(&old, &new, &c1, &c2));
    }
}

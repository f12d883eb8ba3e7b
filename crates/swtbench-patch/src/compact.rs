//! git's post-processing of a line diff, so that hunks come out where `git diff` puts them: among
//! the equally short edit scripts, each run of changed lines is slid to git's choice — aligned with
//! a change on the other side when it can be, otherwise to the position git's indent heuristic
//! (`diff.indentHeuristic`, on by default) scores best. This is git's `xdl_change_compact`,
//! written from its documented rules: a group of changed lines can slide down while the line
//! after it equals its first line, and up while the line before it equals its last line.
//!
//! Pure; works on per-line "changed" flags of both sides.

/// Lines are compared as git compares them without whitespace options: byte for byte, line
/// ending included.
struct Side<'a> {
    lines: &'a [&'a str],
    /// `changed[i + 1]` is line `i`; the first and last entries are sentinels (never changed).
    changed: Vec<bool>,
}

impl Side<'_> {
    fn n(&self) -> usize {
        self.lines.len()
    }
    fn is_changed(&self, i: isize) -> bool {
        self.changed[(i + 1) as usize]
    }
    fn set(&mut self, i: usize, v: bool) {
        self.changed[i + 1] = v;
    }
}

#[derive(Clone, Copy)]
struct Group {
    start: usize,
    end: usize,
}

fn group_init(s: &Side<'_>) -> Group {
    let mut end = 0;
    while s.is_changed(end as isize) {
        end += 1;
    }
    Group { start: 0, end }
}

/// Moves to the next group; false at the end of the file.
fn group_next(s: &Side<'_>, g: &mut Group) -> bool {
    if g.end == s.n() {
        return false;
    }
    g.start = g.end + 1;
    g.end = g.start;
    while s.is_changed(g.end as isize) {
        g.end += 1;
    }
    true
}

/// Moves to the previous group; false at the start of the file.
fn group_previous(s: &Side<'_>, g: &mut Group) -> bool {
    if g.start == 0 {
        return false;
    }
    g.end = g.start - 1;
    g.start = g.end;
    while s.is_changed(g.start as isize - 1) {
        g.start -= 1;
    }
    true
}

fn slide_down(s: &mut Side<'_>, g: &mut Group) -> bool {
    if g.end < s.n() && s.lines[g.start] == s.lines[g.end] {
        s.set(g.start, false);
        s.set(g.end, true);
        g.start += 1;
        g.end += 1;
        while s.is_changed(g.end as isize) {
            g.end += 1;
        }
        true
    } else {
        false
    }
}

fn slide_up(s: &mut Side<'_>, g: &mut Group) -> bool {
    if g.start > 0 && s.lines[g.start - 1] == s.lines[g.end - 1] {
        g.start -= 1;
        g.end -= 1;
        s.set(g.start, true);
        s.set(g.end, false);
        while s.is_changed(g.start as isize - 1) {
            g.start -= 1;
        }
        true
    } else {
        false
    }
}

const MAX_INDENT: i32 = 200;
const MAX_BLANKS: i32 = 20;
const START_OF_FILE_PENALTY: i32 = 1;
const END_OF_FILE_PENALTY: i32 = 21;
const TOTAL_BLANK_WEIGHT: i32 = -30;
const POST_BLANK_WEIGHT: i32 = 6;
const RELATIVE_INDENT_PENALTY: i32 = -4;
const RELATIVE_INDENT_WITH_BLANK_PENALTY: i32 = 10;
const RELATIVE_OUTDENT_PENALTY: i32 = 24;
const RELATIVE_OUTDENT_WITH_BLANK_PENALTY: i32 = 17;
const RELATIVE_DEDENT_PENALTY: i32 = 23;
const RELATIVE_DEDENT_WITH_BLANK_PENALTY: i32 = 17;
const INDENT_WEIGHT: i32 = 60;
const MAX_SLIDING: usize = 100;

/// Columns of leading whitespace (tabs to multiples of 8), capped; `None` for a blank line.
fn indent(line: &str) -> Option<i32> {
    let mut n = 0i32;
    for b in line.bytes() {
        match b {
            b' ' => n += 1,
            b'\t' => n += 8 - n % 8,
            b'\n' | b'\r' | 0x0b | 0x0c => {}
            _ => return Some(n),
        }
        if n >= MAX_INDENT {
            return Some(MAX_INDENT);
        }
    }
    None
}

struct Split {
    end_of_file: bool,
    indent: Option<i32>,
    pre_blank: i32,
    pre_indent: Option<i32>,
    post_blank: i32,
    post_indent: Option<i32>,
}

/// The surroundings of a split before line `split` (which may be the end of the file).
fn measure(lines: &[&str], split: isize) -> Split {
    let n = lines.len() as isize;
    let (end_of_file, ind) = if split >= n {
        (true, None)
    } else {
        (false, indent(lines[split as usize]))
    };
    let (mut pre_blank, mut pre_indent) = (0, None);
    let mut i = split - 1;
    while i >= 0 {
        pre_indent = indent(lines[i as usize]);
        if pre_indent.is_some() {
            break;
        }
        pre_blank += 1;
        if pre_blank == MAX_BLANKS {
            pre_indent = Some(0);
            break;
        }
        i -= 1;
    }
    let (mut post_blank, mut post_indent) = (0, None);
    let mut i = split + 1;
    while i < n {
        post_indent = indent(lines[i as usize]);
        if post_indent.is_some() {
            break;
        }
        post_blank += 1;
        if post_blank == MAX_BLANKS {
            post_indent = Some(0);
            break;
        }
        i += 1;
    }
    Split {
        end_of_file,
        indent: ind,
        pre_blank,
        pre_indent,
        post_blank,
        post_indent,
    }
}

#[derive(Clone, Copy, Default)]
struct Score {
    effective_indent: i32,
    penalty: i32,
}

fn add_split(m: &Split, s: &mut Score) {
    if m.pre_indent.is_none() && m.pre_blank == 0 {
        s.penalty += START_OF_FILE_PENALTY;
    }
    if m.end_of_file {
        s.penalty += END_OF_FILE_PENALTY;
    }
    let post_blank = if m.indent.is_none() {
        1 + m.post_blank
    } else {
        0
    };
    let total_blank = m.pre_blank + post_blank;
    s.penalty += TOTAL_BLANK_WEIGHT * total_blank;
    s.penalty += POST_BLANK_WEIGHT * post_blank;
    let ind = m.indent.or(m.post_indent);
    let any_blanks = total_blank != 0;
    s.effective_indent += ind.unwrap_or(-1);
    let (Some(ind), Some(pre)) = (ind, m.pre_indent) else {
        return;
    };
    if ind > pre {
        s.penalty += if any_blanks {
            RELATIVE_INDENT_WITH_BLANK_PENALTY
        } else {
            RELATIVE_INDENT_PENALTY
        };
    } else if ind < pre {
        let outdent = matches!(m.post_indent, Some(p) if p > ind);
        s.penalty += match (outdent, any_blanks) {
            (true, true) => RELATIVE_OUTDENT_WITH_BLANK_PENALTY,
            (true, false) => RELATIVE_OUTDENT_PENALTY,
            (false, true) => RELATIVE_DEDENT_WITH_BLANK_PENALTY,
            (false, false) => RELATIVE_DEDENT_PENALTY,
        };
    }
}

fn score_cmp(a: &Score, b: &Score) -> i32 {
    let indents = (a.effective_indent > b.effective_indent) as i32
        - (a.effective_indent < b.effective_indent) as i32;
    INDENT_WEIGHT * indents + (a.penalty - b.penalty)
}

/// Slides the groups of changed lines of `s`, keeping `o` (the other side) in step.
fn compact_side(s: &mut Side<'_>, o: &Side<'_>) {
    let mut g = group_init(s);
    let mut go = group_init(o);
    loop {
        if g.end != g.start {
            let mut groupsize;
            let mut earliest_end;
            let mut end_matching_other;
            loop {
                groupsize = g.end - g.start;
                end_matching_other = None;
                while slide_up(s, &mut g) {
                    group_previous(o, &mut go);
                }
                earliest_end = g.end;
                if go.end > go.start {
                    end_matching_other = Some(g.end);
                }
                while slide_down(s, &mut g) {
                    group_next(o, &mut go);
                    if go.end > go.start {
                        end_matching_other = Some(g.end);
                    }
                }
                if groupsize == g.end - g.start {
                    break;
                }
            }
            if g.end == earliest_end {
                // It cannot move.
            } else if end_matching_other.is_some() {
                // Line it up with a change on the other side.
                while go.end == go.start {
                    slide_up(s, &mut g);
                    group_previous(o, &mut go);
                }
            } else {
                let mut shift = earliest_end;
                if g.end > groupsize && g.end - groupsize - 1 > shift {
                    shift = g.end - groupsize - 1;
                }
                if g.end > MAX_SLIDING && g.end - MAX_SLIDING > shift {
                    shift = g.end - MAX_SLIDING;
                }
                let mut best: Option<(usize, Score)> = None;
                while shift <= g.end {
                    let mut score = Score::default();
                    add_split(&measure(s.lines, shift as isize), &mut score);
                    add_split(
                        &measure(s.lines, shift as isize - groupsize as isize),
                        &mut score,
                    );
                    if best.is_none_or(|(_, b)| score_cmp(&score, &b) <= 0) {
                        best = Some((shift, score));
                    }
                    shift += 1;
                }
                if let Some((best_shift, _)) = best {
                    while g.end > best_shift {
                        slide_up(s, &mut g);
                        group_previous(o, &mut go);
                    }
                }
            }
        }
        if !group_next(s, &mut g) {
            break;
        }
        group_next(o, &mut go);
    }
}

/// git's compaction of a line diff: `old_changed`/`new_changed` flag the deleted and inserted
/// lines; returns them slid to where git puts them (the edit script stays as short).
pub(crate) fn compact(
    old: &[&str],
    new: &[&str],
    old_changed: &[bool],
    new_changed: &[bool],
) -> (Vec<bool>, Vec<bool>) {
    let with_sentinels = |c: &[bool]| {
        let mut v = Vec::with_capacity(c.len() + 2);
        v.push(false);
        v.extend_from_slice(c);
        v.push(false);
        v
    };
    let mut a = Side {
        lines: old,
        changed: with_sentinels(old_changed),
    };
    let mut b = Side {
        lines: new,
        changed: with_sentinels(new_changed),
    };
    compact_side(&mut a, &b);
    compact_side(&mut b, &a);
    let strip = |v: Vec<bool>| v[1..v.len() - 1].to_vec();
    (strip(a.changed), strip(b.changed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inserted_block_after_a_blank_line_ends_before_the_next_blank_line() {
        // Inserting "def b():\n    pass\n\n" between two functions separated by a blank line:
        // the diff can put the blank line first or last; git keeps the block whole.
        let old = ["def a():\n", "    pass\n", "\n", "def c():\n", "    pass\n"];
        let new = [
            "def a():\n",
            "    pass\n",
            "\n",
            "def b():\n",
            "    pass\n",
            "\n",
            "def c():\n",
            "    pass\n",
        ];
        // A diff that inserted "\ndef b():\n    pass" after line 1 (blank line first).
        let old_changed = [false; 5];
        let new_changed = [false, false, true, true, true, false, false, false];
        let (_, n) = compact(&old, &new, &old_changed, &new_changed);
        assert_eq!(n, [false, false, false, true, true, true, false, false]);
    }

    #[test]
    fn indent_of_blank_and_tabbed_lines() {
        assert_eq!(indent("\n"), None);
        assert_eq!(indent("  \t x"), Some(9));
        assert_eq!(indent("x"), Some(0));
    }
}

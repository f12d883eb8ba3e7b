//! Inline SVG charts drawn from counts. No scripting, no external fonts: the chart is part of the
//! page text and readable without JavaScript. Colours come from CSS classes in `report.css`.

use std::fmt::Write as _;

use crate::escape;
use crate::model::Outcome;

/// Counts of each outcome for one repository, in [`Outcome::ALL`] order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoCounts {
    pub repo: String,
    pub counts: [usize; 5],
}

const LABEL_W: f64 = 190.0;
const BAR_W: f64 = 420.0;
const ROW_H: f64 = 20.0;
const TOP: f64 = 26.0;

/// A horizontal stacked bar per repository, scaled to the largest repository, with a legend.
pub fn outcome_bars(rows: &[RepoCounts]) -> String {
    let max = rows
        .iter()
        .map(|r| r.counts.iter().sum::<usize>())
        .max()
        .unwrap_or(0)
        .max(1);
    let width = LABEL_W + BAR_W + 60.0;
    let height = TOP + ROW_H * rows.len() as f64 + 8.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"chart\" role=\"img\" aria-labelledby=\"chart-title\" \
         viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" \
         xmlns=\"http://www.w3.org/2000/svg\"><title id=\"chart-title\">Outcomes per repository</title>"
    );
    // Legend.
    let mut x = LABEL_W;
    for o in Outcome::ALL {
        let _ = write!(
            s,
            "<rect class=\"f-{}\" x=\"{x}\" y=\"4\" width=\"10\" height=\"10\"/>\
             <text x=\"{}\" y=\"13\" class=\"legend\">{}</text>",
            o.as_str(),
            x + 13.0,
            o.label()
        );
        x += 14.0 + 7.0 * o.label().len() as f64 + 12.0;
    }
    for (i, r) in rows.iter().enumerate() {
        let y = TOP + ROW_H * i as f64;
        let total: usize = r.counts.iter().sum();
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" class=\"label\" text-anchor=\"end\">{}</text>",
            LABEL_W - 8.0,
            y + 13.0,
            escape::html(&r.repo)
        );
        let mut x = LABEL_W;
        for (o, &n) in Outcome::ALL.iter().zip(r.counts.iter()) {
            if n == 0 {
                continue;
            }
            let w = BAR_W * n as f64 / max as f64;
            let _ = write!(
                s,
                "<rect class=\"f-{}\" x=\"{x:.2}\" y=\"{}\" width=\"{w:.2}\" height=\"{}\">\
                 <title>{}: {n} {}</title></rect>",
                o.as_str(),
                y + 2.0,
                ROW_H - 5.0,
                escape::html(&r.repo),
                o.label()
            );
            x += w;
        }
        let _ = write!(
            s,
            "<text x=\"{:.2}\" y=\"{}\" class=\"count\">{total}</text>",
            x + 5.0,
            y + 13.0
        );
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_largest_repo_and_escape_names() {
        let svg = outcome_bars(&[
            RepoCounts {
                repo: "a/<b>".into(),
                counts: [2, 2, 0, 0, 0],
            },
            RepoCounts {
                repo: "c/d".into(),
                counts: [1, 0, 0, 0, 1],
            },
        ]);
        assert!(svg.contains("a/&lt;b&gt;") && !svg.contains("<b>"));
        // Largest repo has 4 instances: 2 resolved take half the bar.
        assert!(svg.contains(&format!("width=\"{:.2}\"", BAR_W / 2.0)));
        assert!(svg.contains(&format!("width=\"{:.2}\"", BAR_W / 4.0)));
        assert_eq!(svg.matches("<rect class=\"f-error\"").count(), 2); // legend + c/d
    }
}

//! BM25 ranking on a corpus small enough to score by hand: the analysed terms are written out,
//! and the expected scores are computed here from the textbook Lucene formula in f64.

use swtbench_textgen::analyzer::analyze;
use swtbench_textgen::bm25::{Bm25Params, Query, Ranker};
use swtbench_textgen::retrieve::{document_text, rank};

const ISSUE: &str = "The parser fails on dates; parser errors";

fn corpus() -> Vec<(&'static str, String)> {
    vec![
        ("a.py", "parser parser date".to_string()),
        ("b.py", "fail error the of".to_string()),
        ("c.py", "unrelated words here".to_string()),
        ("e.py", "parser date".to_string()),
        ("d.py", "parser date".to_string()),
        ("f.py", format!("parser{}", " zzz".repeat(98))),
    ]
}

fn idf(n: f64, df: f64) -> f64 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

fn term(qcount: f64, idf: f64, f: f64, dl: f64, avgdl: f64) -> f64 {
    let (k1, b) = (0.9, 0.4);
    qcount * idf * f / (f + k1 * (1.0 - b + b * dl / avgdl))
}

#[test]
fn analysed_terms_are_the_hand_written_ones() {
    let q = Query::from_text(ISSUE);
    assert_eq!(
        q.terms,
        vec![
            ("parser".to_string(), 2),
            ("fail".to_string(), 1),
            ("date".to_string(), 1),
            ("error".to_string(), 1)
        ]
    );
    let docs = corpus();
    // `x.py` becomes `x.pi` only when `x.p` has a vowel (Porter's y -> i rule).
    let t = |i: usize| analyze(&document_text(docs[i].0, &docs[i].1));
    assert_eq!(t(0), ["a.pi", "parser", "parser", "date"]);
    assert_eq!(t(1), ["b.py", "fail", "error"]);
    assert_eq!(t(2), ["c.py", "unrel", "word", "here"]);
    assert_eq!(t(3), ["e.pi", "parser", "date"]);
    assert_eq!(t(4), ["d.py", "parser", "date"]);
    assert_eq!(t(5).len(), 100);
}

#[test]
fn ranking_matches_the_hand_computed_scores() {
    let docs = corpus();
    // N = 6 documents of 4, 3, 4, 3, 3 and 100 terms: avgdl = 117 / 6.
    let (n, avgdl) = (6.0, 117.0 / 6.0);
    let (idf_parser, idf_date, idf_rare) = (idf(n, 4.0), idf(n, 3.0), idf(n, 1.0));
    let a = term(2.0, idf_parser, 2.0, 4.0, avgdl) + term(1.0, idf_date, 1.0, 4.0, avgdl);
    let b = term(1.0, idf_rare, 1.0, 3.0, avgdl) * 2.0;
    let d = term(2.0, idf_parser, 1.0, 3.0, avgdl) + term(1.0, idf_date, 1.0, 3.0, avgdl);
    // f.py has 100 terms, which Lucene's one-byte norm stores as 96.
    let f = term(2.0, idf_parser, 1.0, 96.0, avgdl);
    let f_unquantised = term(2.0, idf_parser, 1.0, 100.0, avgdl);
    assert!((f - f_unquantised).abs() > 1e-4);

    let q = Query::from_issue(ISSUE);
    let mut ranker = Ranker::new(&q, Bm25Params::default());
    for (p, c) in &docs {
        ranker.add_document(*p, &document_text(p, c));
    }
    let hits = ranker.top_k(20);
    let got: Vec<(&str, f32)> = hits.iter().map(|h| (h.docid.as_str(), h.score)).collect();
    // c.py matches no query term and is not a hit; d.py and e.py tie and go by path.
    let expected = [
        ("b.py", b),
        ("a.py", a),
        ("d.py", d),
        ("e.py", d),
        ("f.py", f),
    ];
    assert_eq!(
        got.iter().map(|g| g.0).collect::<Vec<_>>(),
        expected.iter().map(|e| e.0).collect::<Vec<_>>()
    );
    for ((_, g), (name, e)) in got.iter().zip(expected) {
        assert!(
            (f64::from(*g) - e).abs() < 1e-5 * e,
            "{name}: got {g}, expected {e}"
        );
    }
    assert_eq!(got[2].1, got[3].1);

    // top-k cuts after the tie order.
    assert_eq!(
        ranker
            .top_k(3)
            .iter()
            .map(|h| h.docid.as_str())
            .collect::<Vec<_>>(),
        ["b.py", "a.py", "d.py"]
    );

    // The retrieval entry point rounds the written scores and nudges ties apart.
    let r = rank(ISSUE, docs.iter().map(|(p, c)| (*p, c.as_str())), 20);
    assert_eq!(r.num_documents, 6);
    assert_eq!(r.query_chars, ISSUE.chars().count());
    let s: Vec<f64> = r.hits.iter().map(|h| h.score).collect();
    assert!((s[0] - b).abs() <= 0.5e-4 + 1e-6, "{} vs {b}", s[0]);
    assert!(
        (s[0] * 1e4 - (s[0] * 1e4).round()).abs() < 1e-2,
        "{} is not rounded",
        s[0]
    );
    assert!(s[2] > s[3] && s[2] - s[3] < 2e-6);
}

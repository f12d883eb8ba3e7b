//! The Porter stemmer against 35,867 words and code tokens with known stems (see
//! `fixtures/porter/generate.py` for where the expected stems come from).

use swtbench_textgen::porter::PorterStemmer;

#[test]
fn stems_match_the_reference_implementation_on_the_word_list() {
    let text = include_str!("../fixtures/porter/words.tsv");
    let mut stemmer = PorterStemmer::new();
    let mut out = String::new();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let (word, expected) = line
            .split_once('\t')
            .unwrap_or_else(|| panic!("words.tsv line {}: no tab", n + 1));
        stemmer.stem_into(word, &mut out);
        if out != expected {
            wrong.push(format!("{word}: got {out}, expected {expected}"));
        }
        checked += 1;
    }
    assert!(checked > 35_000, "only {checked} words in the fixture");
    assert!(
        wrong.is_empty(),
        "{} of {checked} words stemmed differently, e.g.:\n{}",
        wrong.len(),
        wrong[..wrong.len().min(20)].join("\n")
    );
}

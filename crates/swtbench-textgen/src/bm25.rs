//! BM25 ranking of a repository's files against an issue text, computed the way Lucene 9 (through
//! Anserini/pyserini) computed it for the SWE-bench retrieval files.
//!
//! - Similarity: `BM25Similarity(k1 = 0.9, b = 0.4)`; per term
//!   `w − w / (1 + f · normInverse)` with `w = queryCount · idf`,
//!   `idf = ln(1 + (N − n + 0.5) / (n + 0.5))` and `normInverse` from a 256-entry table over
//!   Lucene's one-byte document lengths ([`encode_length`] / [`decode_length`]). All in `f32`,
//!   clause scores summed in `f64` and cast back, as Lucene does.
//! - Query: the analysed issue text, one clause per distinct term, boosted by its count. More than
//!   [`MAX_CLAUSES`] distinct terms is an error in Lucene; [`Query::from_issue`] applies the
//!   retrieval script's answer to that (shorten the text to 80 % until it fits).
//! - Ranking: score descending, ties by document id (UTF-8 bytes) ascending.
//!
//! Only the query's terms are counted per document (plus each document's length), so nothing is
//! indexed beyond what the ranking needs, and nothing touches the disk.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::analyzer::{raw_tokens, Analyzer};

/// Lucene's default maximum number of clauses in a boolean query.
pub const MAX_CLAUSES: usize = 1024;

/// BM25 parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Params {
    pub k1: f32,
    pub b: f32,
}

impl Default for Bm25Params {
    /// Anserini's defaults, used by the SWE-bench retrieval.
    fn default() -> Self {
        Bm25Params { k1: 0.9, b: 0.4 }
    }
}

/// Lucene's `SmallFloat.intToByte4`: document lengths 0–23 exactly, above that 4 significant bits.
pub fn encode_length(len: u32) -> u8 {
    const FREE: u32 = 24;
    if len < FREE {
        return len as u8;
    }
    let v = u64::from(len - FREE);
    let bits = 64 - v.leading_zeros();
    let int4 = if bits < 4 {
        v as u32
    } else {
        let shift = bits - 4;
        (((v >> shift) as u32) & 0x07) | ((shift + 1) << 3)
    };
    (FREE + int4) as u8
}

/// Lucene's `SmallFloat.byte4ToInt`.
pub fn decode_length(byte: u8) -> u32 {
    const FREE: u32 = 24;
    let i = u32::from(byte);
    if i < FREE {
        return i;
    }
    let int4 = i - FREE;
    let bits = u64::from(int4 & 0x07);
    let shift = (int4 >> 3) as i32 - 1;
    let decoded = if shift == -1 {
        bits
    } else {
        (bits | 0x08) << shift
    };
    (u64::from(FREE) + decoded) as u32
}

/// A fast, non-cryptographic hasher for the per-token caches (the FxHash mixing step). Keys are
/// tokens of the repository being ranked, so collision attacks are not a concern here.
#[derive(Debug, Default, Clone, Copy)]
struct FastHasher(u64);

impl FastHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(w));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// An analysed query: distinct terms in order of first appearance, each with its count.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Query {
    pub terms: Vec<(String, u32)>,
    /// How many characters of the issue text the query was built from (all of them unless the
    /// text had too many distinct terms).
    pub used_chars: usize,
}

impl Query {
    /// The query for a text, whatever its number of distinct terms.
    pub fn from_text(text: &str) -> Query {
        let mut analyzer = Analyzer::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut terms: Vec<(String, u32)> = Vec::new();
        let mut buf = String::new();
        for raw in raw_tokens(text) {
            if let Some(term) = analyzer.term(raw, &mut buf) {
                match index.get(term) {
                    Some(&i) => terms[i].1 += 1,
                    None => {
                        index.insert(term.to_string(), terms.len());
                        terms.push((term.to_string(), 1));
                    }
                }
            }
        }
        Query {
            terms,
            used_chars: text.chars().count(),
        }
    }

    /// The query for an issue text. A text with more than [`MAX_CLAUSES`] distinct terms is
    /// shortened to `round(0.8 · n)` characters (Python's `round`, halves to even) until it fits,
    /// as the SWE-bench retrieval script does when Lucene refuses the query.
    pub fn from_issue(text: &str) -> Query {
        let total = text.chars().count();
        let mut cutoff = total;
        loop {
            let prefix = if cutoff == total {
                text
            } else {
                let end = text
                    .char_indices()
                    .nth(cutoff)
                    .map_or(text.len(), |(i, _)| i);
                &text[..end]
            };
            let q = Query::from_text(prefix);
            if q.terms.len() <= MAX_CLAUSES {
                return Query {
                    used_chars: cutoff,
                    ..q
                };
            }
            cutoff = (cutoff as f64 * 0.8).round_ties_even() as usize;
        }
    }
}

/// One ranked document.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub docid: String,
    pub score: f32,
}

/// What a document contributes to the ranking.
#[derive(Debug, Clone)]
struct DocStats {
    id: String,
    /// Number of indexed tokens (stop words removed).
    len: u32,
    /// (query term index, frequency) for the query terms the document contains.
    tf: Vec<(u32, u32)>,
}

/// How a raw token is treated, cached because source code repeats tokens a lot.
#[derive(Debug, Clone, Copy)]
enum TokenClass {
    Stop,
    Other,
    QueryTerm(u32),
}

/// Collects per-document statistics for one query, then ranks.
#[derive(Debug)]
pub struct Ranker<'q> {
    query: &'q Query,
    params: Bm25Params,
    term_index: FastMap<&'q str, u32>,
    cache: FastMap<String, TokenClass>,
    analyzer: Analyzer,
    buf: String,
    docs: Vec<DocStats>,
    counts: Vec<u32>,
}

impl<'q> Ranker<'q> {
    pub fn new(query: &'q Query, params: Bm25Params) -> Self {
        let term_index = query
            .terms
            .iter()
            .enumerate()
            .map(|(i, (t, _))| (t.as_str(), i as u32))
            .collect();
        Ranker {
            query,
            params,
            term_index,
            cache: FastMap::default(),
            analyzer: Analyzer::new(),
            buf: String::new(),
            docs: Vec::new(),
            counts: vec![0; query.terms.len()],
        }
    }

    fn classify(&mut self, raw: &str) -> TokenClass {
        if let Some(&c) = self.cache.get(raw) {
            return c;
        }
        let class = match self.analyzer.term(raw, &mut self.buf) {
            None => TokenClass::Stop,
            Some(term) => match self.term_index.get(term) {
                Some(&i) => TokenClass::QueryTerm(i),
                None => TokenClass::Other,
            },
        };
        self.cache.insert(raw.to_string(), class);
        class
    }

    /// Adds one document (its whole analysed text).
    pub fn add_document(&mut self, id: impl Into<String>, text: &str) {
        let mut len: u32 = 0;
        let mut touched: Vec<u32> = Vec::new();
        for raw in raw_tokens(text) {
            match self.classify(raw) {
                TokenClass::Stop => {}
                TokenClass::Other => len += 1,
                TokenClass::QueryTerm(i) => {
                    len += 1;
                    if self.counts[i as usize] == 0 {
                        touched.push(i);
                    }
                    self.counts[i as usize] += 1;
                }
            }
        }
        let tf = touched
            .into_iter()
            .map(|i| {
                let f = std::mem::take(&mut self.counts[i as usize]);
                (i, f)
            })
            .collect();
        self.docs.push(DocStats {
            id: id.into(),
            len,
            tf,
        });
    }

    pub fn num_documents(&self) -> usize {
        self.docs.len()
    }

    /// The `k` best documents, best first. Documents matching no query term are not hits.
    pub fn top_k(&self, k: usize) -> Vec<Hit> {
        let Bm25Params { k1, b } = self.params;
        // Lucene counts only documents that have the field (at least one token).
        let doc_count = self.docs.iter().filter(|d| d.len > 0).count() as u64;
        if doc_count == 0 {
            return Vec::new();
        }
        let total_len: u64 = self.docs.iter().map(|d| u64::from(d.len)).sum();
        let avgdl = (total_len as f64 / doc_count as f64) as f32;
        let mut df = vec![0u64; self.query.terms.len()];
        for d in &self.docs {
            for &(i, _) in &d.tf {
                df[i as usize] += 1;
            }
        }
        let weights: Vec<f32> = self
            .query
            .terms
            .iter()
            .zip(&df)
            .map(|((_, count), &n)| {
                let idf =
                    (1.0 + (doc_count as f64 - n as f64 + 0.5) / (n as f64 + 0.5)).ln() as f32;
                *count as f32 * idf
            })
            .collect();
        let mut norm_inverse = [0f32; 256];
        for (i, slot) in norm_inverse.iter_mut().enumerate() {
            let dl = decode_length(i as u8) as f32;
            *slot = 1.0 / (k1 * ((1.0 - b) + b * dl / avgdl));
        }
        let mut hits: Vec<Hit> = self
            .docs
            .iter()
            .filter(|d| !d.tf.is_empty())
            .map(|d| {
                let ni = norm_inverse[encode_length(d.len) as usize];
                let sum: f64 =
                    d.tf.iter()
                        .map(|&(i, f)| {
                            let w = weights[i as usize];
                            f64::from(w - w / (1.0 + f as f32 * ni))
                        })
                        .sum();
                Hit {
                    docid: d.id.clone(),
                    score: sum as f32,
                }
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.docid.as_bytes().cmp(b.docid.as_bytes()))
        });
        hits.truncate(k);
        hits
    }
}

/// Anserini's `ScoreTiesAdjusterReranker`, applied to the scores it writes out: round each score
/// to 4 decimals and lower every further member of a run of (rounded) ties by 1e-6 per position,
/// so the numbers sort like the ranks. Never reorders.
pub fn adjust_ties(hits: &mut [Hit]) {
    let mut dup = 0u32;
    for i in 0..hits.len() {
        // Java's Math.round(float): nearest integer, halves up.
        let rounded = ((f64::from(hits[i].score * 1e4f32) + 0.5).floor() as i32) as f32 / 1e4f32;
        hits[i].score = rounded;
        if i == 0 || hits[i - 1].score - hits[i].score > 1e-4f32 {
            dup = 0;
        } else {
            dup += 1;
            hits[i].score -= 1e-6f32 * dup as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn length_quantisation_matches_lucene() {
        for n in 0..24 {
            assert_eq!(decode_length(encode_length(n)), n);
        }
        assert_eq!(decode_length(encode_length(100)), 96);
        assert_eq!(decode_length(encode_length(24)), 24);
        assert_eq!(decode_length(encode_length(31)), 31);
        assert_eq!(decode_length(encode_length(39)), 39);
        assert_eq!(decode_length(encode_length(41)), 40);
        assert_eq!(encode_length(u32::MAX >> 1), 255);
        // Encoding is monotonic and decoding never overshoots.
        let mut prev = 0;
        for n in 0..100_000u32 {
            let e = encode_length(n);
            assert!(e >= prev);
            prev = e;
            assert!(decode_length(e) <= n);
        }
    }

    #[test]
    fn query_counts_terms_and_cuts_long_texts() {
        let q = Query::from_text("Filter filters the filter; models MODEL");
        assert_eq!(
            q.terms,
            vec![("filter".to_string(), 3), ("model".to_string(), 2)]
        );
        // 1100 distinct words of 6 characters + a space each.
        let words: Vec<String> = (0..1100).map(|i| format!("w{i:05}")).collect();
        let text = words.join(" ");
        let q = Query::from_issue(&text);
        assert!(q.terms.len() <= MAX_CLAUSES);
        // 7699 chars -> round(6159.2) = 6159 chars = 879 words with their space + one more word.
        assert_eq!(q.used_chars, 6159);
        assert_eq!(q.terms.len(), 880);
    }

    #[test]
    fn ties_are_rounded_and_perturbed() {
        let mut hits = vec![
            Hit {
                docid: "a".into(),
                score: 23.439316,
            },
            Hit {
                docid: "s".into(),
                score: 22.087432,
            },
            Hit {
                docid: "t".into(),
                score: 22.087432,
            },
            Hit {
                docid: "u".into(),
                score: 22.087432,
            },
            Hit {
                docid: "z".into(),
                score: 21.602508,
            },
        ];
        adjust_ties(&mut hits);
        let s: Vec<f32> = hits.iter().map(|h| h.score).collect();
        assert_eq!(s[0], 23.4393f32);
        assert_eq!(s[1], 22.0874f32);
        assert_eq!(s[2], 22.0874f32 - 1e-6f32);
        assert_eq!(s[3], 22.0874f32 - 2e-6f32);
        assert_eq!(s[4], 21.6025f32);
    }
}

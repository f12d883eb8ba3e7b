//! Token counts for the context cap.
//!
//! The SWE-bench text datasets count with OpenAI's `cl100k_base` encoding, encoding special-token
//! strings such as `<|endoftext|>` as ordinary text. `tiktoken-rs` compiles the encoding's BPE
//! ranks into the binary (no download at build or run time) and gives the same token ids as
//! Python's `tiktoken`.

/// Something that counts tokens; the cap walk is written against this so tests can use a simple
/// counter with hand-checkable numbers.
pub trait TokenCounter: Sync {
    fn count(&self, text: &str) -> usize;
}

/// OpenAI's `cl100k_base`, as `tiktoken.get_encoding("cl100k_base").encode(text,
/// disallowed_special=())`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cl100k;

impl TokenCounter for Cl100k {
    fn count(&self, text: &str) -> usize {
        tiktoken_rs::cl100k_base_singleton()
            .encode_ordinary(text)
            .len()
    }
}

/// Counts whitespace-separated words: a stand-in for tests.
#[derive(Debug, Clone, Copy, Default)]
pub struct WordCounter;

impl TokenCounter for WordCounter {
    fn count(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cl100k_counts_match_python_tiktoken() {
        // Expected counts from Python tiktoken 0.14.0, `encode(s, disallowed_special=())`.
        for (text, expected) in [
            ("hello world", 2),
            ("def foo(x):\n    return x  \n", 8),
            ("<|endoftext|> is text", 9),
            ("[start of a/b.py]\n1 import os\n2 \n[end of a/b.py]", 18),
            ("café 漢字 🐛\r\n\r\n", 10),
        ] {
            assert_eq!(Cl100k.count(text), expected, "{text:?}");
        }
    }
}

//! Stable content hashes (SHA-256, hex). Never `DefaultHasher`: these names end up on disk and in
//! image tags, so they must be identical across processes, machines and versions.

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of `data`.
pub fn sha256_hex(data: impl AsRef<[u8]>) -> String {
    hex::encode(Sha256::digest(data.as_ref()))
}

/// The first `n` hex characters of SHA-256 of `data` (the original harness uses 22 for image keys).
pub fn sha256_prefix(data: impl AsRef<[u8]>, n: usize) -> String {
    let mut h = sha256_hex(data);
    h.truncate(n);
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        assert_eq!(
            sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(sha256_prefix("abc", 22), "ba7816bf8f01cfea414140");
    }
}

//! Small pieces of text that messages share.

/// The first five of `items`, comma-separated, and how many more: `a, b, c, d, e and 7 more`.
pub fn first_few<S: AsRef<str>>(items: &[S]) -> String {
    const SHOWN: usize = 5;
    let mut text = items
        .iter()
        .take(SHOWN)
        .map(|s| s.as_ref())
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        text.push_str(&format!(" and {} more", items.len() - SHOWN));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::first_few;

    #[test]
    fn five_are_named_and_the_rest_counted() {
        assert_eq!(first_few::<&str>(&[]), "");
        assert_eq!(first_few(&["a", "b"]), "a, b");
        let many: Vec<String> = (1..=7).map(|i| i.to_string()).collect();
        assert_eq!(first_few(&many), "1, 2, 3, 4, 5 and 2 more");
    }
}

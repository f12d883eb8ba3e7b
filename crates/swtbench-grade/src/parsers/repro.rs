//! `parse_log_reproduction_script` (§8): the first line that is exactly `+ echo <digits>` (bash's
//! trace of the eval script's `echo $?`) gives the pseudo-test `reproduction_script`, PASSED for
//! exit code `0` and FAILED for anything else. No such line: no tests.

use swtbench_core::{StatusMap, TestStatus};

/// Name of the single pseudo-test of reproduction-script mode.
pub const REPRODUCTION_TEST_NAME: &str = "reproduction_script";

pub fn parse_reproduction_script(log: &str) -> StatusMap {
    let mut map = StatusMap::new();
    for line in log.split('\n') {
        let Some(code) = line.strip_prefix("+ echo ") else {
            continue;
        };
        // `\d` of a Python str pattern: any Unicode decimal digit.
        if !code.is_empty() && code.chars().all(is_decimal_digit) {
            let status = if code == "0" {
                TestStatus::Passed
            } else {
                TestStatus::Failed
            };
            map.insert(REPRODUCTION_TEST_NAME.to_string(), status);
            break;
        }
    }
    map
}

/// Unicode category Nd. `char::is_numeric` is wider (it includes `²`, `½`, Roman numerals), so
/// non-ASCII candidates are checked against the Nd ranges the regex engine knows.
fn is_decimal_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    use std::sync::OnceLock;
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    #[expect(clippy::unwrap_used, reason = "a constant pattern")]
    let re = RE.get_or_init(|| regex::Regex::new(r"^\d$").unwrap());
    let mut buf = [0u8; 4];
    re.is_match(c.encode_utf8(&mut buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_echo_decides() {
        let log = "+ python3 /testbed/repro.py\nTraceback\n+ echo 1\n+ echo 0\n";
        assert_eq!(
            parse_reproduction_script(log).get(REPRODUCTION_TEST_NAME),
            Some(&TestStatus::Failed)
        );
        let log = "x\n+ echo 0\n";
        assert_eq!(
            parse_reproduction_script(log).get(REPRODUCTION_TEST_NAME),
            Some(&TestStatus::Passed)
        );
        assert!(parse_reproduction_script("+ echo 0 \n+ echo\n echo 0\n").is_empty());
        assert_eq!(
            parse_reproduction_script("+ echo ٣\n").get(REPRODUCTION_TEST_NAME),
            Some(&TestStatus::Failed)
        );
        assert!(parse_reproduction_script("+ echo ²\n").is_empty());
    }
}

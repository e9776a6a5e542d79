//! How much a call waits and returns: the yield clamps and the output budget (cut in the
//! middle, with a count of what was there).

use std::time::Duration;

use super::result::Truncation;

/// Yield clamp: whatever `yield_time_ms` a call asks for, it waits between these bounds
/// (`docs/executor-protocol.md`).
pub const MIN_YIELD: Duration = Duration::from_millis(250);
pub const MAX_YIELD: Duration = Duration::from_millis(30_000);
/// An empty poll (`write_stdin` with no chars) may wait longer.
pub const MAX_EMPTY_POLL_YIELD: Duration = Duration::from_millis(300_000);

/// What a call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// `exec_command`, or `write_stdin` that typed something.
    AfterInput,
    /// `write_stdin` with no characters: only collecting output.
    EmptyPoll,
}

/// Clamps a requested yield time.
pub fn clamp_yield(requested_ms: u64, wait: Wait) -> Duration {
    let max = match wait {
        Wait::AfterInput => MAX_YIELD,
        Wait::EmptyPoll => MAX_EMPTY_POLL_YIELD,
    };
    Duration::from_millis(requested_ms).clamp(MIN_YIELD, max)
}

/// Tokens as the model counts them here: bytes / 4, rounded up.
pub fn token_count(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// Cuts `output` in the middle to at most `max_tokens * 4` bytes (on UTF-8 boundaries), with a
/// `…N tokens truncated…` marker. Returns the text and, when cut, the original token count.
pub fn truncate_middle(output: &str, max_tokens: usize) -> (String, Option<usize>) {
    let budget = max_tokens.saturating_mul(4);
    if output.len() <= budget {
        return (output.to_owned(), None);
    }
    let original = token_count(output.len());
    let head_end = floor_boundary(output, budget / 2);
    let tail_start = ceil_boundary(output, output.len() - (budget - budget / 2));
    let removed = token_count(tail_start - head_end);
    let text =
        format!("{}…{removed} tokens truncated…{}", &output[..head_end], &output[tail_start..]);
    (text, Some(original))
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Output collected for one result: its text and how many bytes the command really printed
/// (more than the text holds when the session's unread buffer had to drop some).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Collected<'a> {
    pub text: &'a str,
    pub original_bytes: u64,
}

#[cfg(test)]
impl<'a> Collected<'a> {
    /// Output that was kept whole.
    pub fn whole(text: &'a str) -> Self {
        Collected { text, original_bytes: text.len() as u64 }
    }
}

/// `output` cut to the budget, and how much there was when anything is missing from it: cut
/// here, or dropped before by the session's buffer. The count covers everything the command
/// printed since the last read: tokens = bytes / 4, rounded up.
pub fn cut(output: Collected<'_>, max_tokens: usize) -> (String, Option<Truncation>) {
    let (text, cut) = truncate_middle(output.text, max_tokens);
    let dropped_before = output.original_bytes > output.text.len() as u64;
    let truncated = (cut.is_some() || dropped_before).then(|| {
        let bytes = output.original_bytes.max(output.text.len() as u64);
        Truncation {
            original_tokens: usize::try_from(bytes.div_ceil(4)).unwrap_or(usize::MAX),
            original_bytes: bytes,
        }
    });
    (text, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn yields_are_clamped() {
        assert_eq!(clamp_yield(10, Wait::AfterInput), MIN_YIELD);
        assert_eq!(clamp_yield(1_000, Wait::AfterInput), Duration::from_millis(1_000));
        assert_eq!(clamp_yield(100_000, Wait::AfterInput), MAX_YIELD);
        assert_eq!(clamp_yield(100_000, Wait::EmptyPoll), Duration::from_millis(100_000));
        assert_eq!(clamp_yield(u64::MAX, Wait::EmptyPoll), MAX_EMPTY_POLL_YIELD);
    }

    #[test]
    fn truncation_cuts_the_middle_and_reports_the_original_count() {
        let output = format!("{}{}{}", "a".repeat(500), "m".repeat(1000), "z".repeat(500));
        let (text, original) = truncate_middle(&output, 100);
        assert_eq!(original, Some(500));
        assert!(text.starts_with(&"a".repeat(200)) && text.ends_with(&"z".repeat(200)), "{text}");
        assert!(text.contains("…400 tokens truncated…"));
        assert!(!text.contains('m'));
        assert_eq!(truncate_middle("short", 100), ("short".to_owned(), None));
    }

    #[test]
    fn truncation_respects_utf8() {
        let output = "é".repeat(1000);
        let (text, original) = truncate_middle(&output, 10);
        assert!(original.is_some());
        assert!(text.starts_with('é') && text.ends_with('é'));
    }
}

//! A head + tail copy of a stream: the first and last halves of a byte budget, and a count of
//! what was dropped between them. Memory stays bounded however much a command prints.

use serde::Serialize;

/// Keeps at most `capacity` bytes: the first half verbatim, then the most recent half.
#[derive(Debug, Clone)]
pub struct HeadTail {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    half: usize,
    dropped: u64,
}

impl HeadTail {
    pub fn new(capacity: usize) -> Self {
        let half = capacity / 2;
        HeadTail { head: Vec::new(), tail: std::collections::VecDeque::new(), half, dropped: 0 }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        let room = self.half.saturating_sub(self.head.len());
        let take = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..take]);
        bytes = &bytes[take..];
        if bytes.len() >= self.half {
            // Only the last `half` bytes of this chunk can survive.
            self.dropped += (self.tail.len() + bytes.len() - self.half) as u64;
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.half..]);
            return;
        }
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(self.half);
        if excess > 0 {
            self.tail.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    /// Bytes seen in total.
    pub fn total(&self) -> u64 {
        self.head.len() as u64 + self.tail.len() as u64 + self.dropped
    }

    /// Head and tail joined (lossy UTF-8), with a marker where bytes were dropped.
    pub fn text(&self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            out.push_str(&format!("\n…{} bytes dropped…\n", self.dropped));
        }
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }

    pub fn captured(&self) -> Captured {
        Captured { text: self.text(), total_bytes: self.total(), dropped_bytes: self.dropped }
    }
}

/// What the outcome reports of a stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Captured {
    pub text: String,
    pub total_bytes: u64,
    pub dropped_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn small_output_is_kept_whole() {
        let mut h = HeadTail::new(16);
        h.push(b"abc");
        h.push(b"def");
        assert_eq!(h.text(), "abcdef");
        assert_eq!(h.total(), 6);
    }

    #[test]
    fn large_output_keeps_head_and_tail_and_counts_the_middle() {
        let mut h = HeadTail::new(8);
        for chunk in [&b"0123"[..], b"4567", b"89ab", b"cdef"] {
            h.push(chunk);
        }
        assert_eq!(h.dropped, 8);
        assert_eq!(h.text(), "0123\n…8 bytes dropped…\ncdef");
        let mut big = HeadTail::new(8);
        big.push(&[b'x'; 100]);
        big.push(b"yz");
        assert_eq!(big.total(), 102);
        assert!(big.text().ends_with("xxyz"));
    }
}

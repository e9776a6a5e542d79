//! The server name a TLS client asks for (SNI), read from the first bytes a tunnel's client
//! sends, so that a `CONNECT allowed.example:443` cannot carry a TLS session for another name
//! served from the same address (domain fronting on a CDN or a shared host).
//!
//! The parser reads only what it needs — the TLS record headers, the ClientHello's fixed
//! fields, the extension list and the `server_name` extension — with every length checked
//! against what is there, and holds at most [`MAX_HELLO_BYTES`]. What does not start like a
//! TLS handshake is not TLS (the tunnel carries something else, and no name is claimed); a
//! handshake that is TLS but cannot be read, or names its server twice, is refused.

/// The most a ClientHello may take (records included): TLS allows a message of 16 MiB, real
/// clients send a few KiB (post-quantum key shares included).
pub(super) const MAX_HELLO_BYTES: usize = 64 * 1024;

const HANDSHAKE_RECORD: u8 = 0x16;
const CLIENT_HELLO: u8 = 1;
const SERVER_NAME_EXTENSION: u16 = 0;
const HOST_NAME: u8 = 0;
const RECORD_HEADER: usize = 5;
const HANDSHAKE_HEADER: usize = 4;

/// What the client's first bytes say about the server it wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FirstFlight {
    /// More bytes are needed to tell.
    NeedMore,
    /// Not a TLS handshake: nothing is claimed.
    NotTls,
    /// A ClientHello without a server name.
    NoName,
    /// A ClientHello naming this server (as sent: bytes that are not a host name stay in it).
    Name(String),
    /// A TLS handshake that cannot be read as a ClientHello, or is longer than allowed.
    Unreadable(&'static str),
}

/// Reads `bytes`, the start of what the client sent.
pub(super) fn read(bytes: &[u8]) -> FirstFlight {
    let Some(&first) = bytes.first() else { return FirstFlight::NeedMore };
    if first != HANDSHAKE_RECORD {
        return FirstFlight::NotTls;
    }
    if bytes.len() < 3 {
        return FirstFlight::NeedMore;
    }
    // TLS 1.0 to 1.3 all say 3.x on the record layer.
    if bytes[1] != 3 {
        return FirstFlight::NotTls;
    }
    // The handshake message, gathered from as many records as it spans.
    let mut message = Vec::new();
    let mut at = 0;
    loop {
        let Some(header) = bytes.get(at..at + RECORD_HEADER) else {
            return need_more(bytes);
        };
        if header[0] != HANDSHAKE_RECORD || header[1] != 3 {
            return FirstFlight::Unreadable("a record of another type inside the ClientHello");
        }
        let length = usize::from(u16::from_be_bytes([header[3], header[4]]));
        if length == 0 {
            return FirstFlight::Unreadable("an empty handshake record");
        }
        // What has arrived of this record: the message's header is judged as soon as it is
        // there, so that a claim of more than the proxy holds is refused before it is read.
        let arrived = bytes.get(at + RECORD_HEADER..).unwrap_or_default();
        let fragment = &arrived[..arrived.len().min(length)];
        message.extend_from_slice(fragment);
        let complete = fragment.len() == length;
        at += RECORD_HEADER + length;
        if message.len() < HANDSHAKE_HEADER {
            if complete {
                continue;
            }
            return need_more(bytes);
        }
        if message[0] != CLIENT_HELLO {
            return FirstFlight::Unreadable("the first handshake message is not a ClientHello");
        }
        let body_length =
            usize::from(message[1]) << 16 | usize::from(message[2]) << 8 | usize::from(message[3]);
        if body_length + HANDSHAKE_HEADER + RECORD_HEADER > MAX_HELLO_BYTES {
            return FirstFlight::Unreadable("a ClientHello longer than the proxy reads");
        }
        if !complete {
            return need_more(bytes);
        }
        if message.len() >= HANDSHAKE_HEADER + body_length {
            let body = &message[HANDSHAKE_HEADER..HANDSHAKE_HEADER + body_length];
            return server_name(body).unwrap_or(FirstFlight::Unreadable("a malformed ClientHello"));
        }
    }
}

fn need_more(bytes: &[u8]) -> FirstFlight {
    if bytes.len() >= MAX_HELLO_BYTES {
        FirstFlight::Unreadable("a ClientHello longer than the proxy reads")
    } else {
        FirstFlight::NeedMore
    }
}

/// A cursor over a ClientHello's body: every read is checked against what is left.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (taken, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(taken)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        let b = self.take(2)?;
        Some(u16::from_be_bytes([b[0], b[1]]))
    }
    /// A vector with a one- or two-byte length.
    fn vector(&mut self, length_bytes: usize) -> Option<&'a [u8]> {
        let length = match length_bytes {
            1 => usize::from(self.u8()?),
            _ => usize::from(self.u16()?),
        };
        self.take(length)
    }
}

/// The server name of a ClientHello body; `None` when it is malformed.
fn server_name(body: &[u8]) -> Option<FirstFlight> {
    let mut hello = Reader(body);
    hello.take(2 + 32)?; // client version, random
    hello.vector(1)?; // session id
    hello.vector(2)?; // cipher suites
    hello.vector(1)?; // compression methods
    if hello.0.is_empty() {
        return Some(FirstFlight::NoName);
    }
    let mut extensions = Reader(hello.vector(2)?);
    let mut name = None;
    while !extensions.0.is_empty() {
        let kind = extensions.u16()?;
        let data = extensions.vector(2)?;
        if kind != SERVER_NAME_EXTENSION {
            continue;
        }
        if name.is_some() {
            return Some(FirstFlight::Unreadable("two server_name extensions"));
        }
        name = Some(host_name(data)?);
    }
    Some(match name {
        Some(Some(name)) => FirstFlight::Name(name),
        Some(None) | None => FirstFlight::NoName,
    })
}

/// The one `host_name` of a `server_name` extension (`Some(None)` when it names none);
/// `None` when malformed or when it names two.
fn host_name(data: &[u8]) -> Option<Option<String>> {
    let mut list = Reader(Reader(data).vector(2)?);
    let mut found = None;
    while !list.0.is_empty() {
        let kind = list.u8()?;
        let name = list.vector(2)?;
        if kind == HOST_NAME {
            if found.is_some() {
                return None;
            }
            found = Some(String::from_utf8_lossy(name).into_owned());
        }
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A ClientHello with `extensions`, in one record.
    fn hello_with(extensions: &[u8]) -> Vec<u8> {
        let mut body = vec![3, 3];
        body.extend([7u8; 32]);
        body.push(0); // session id
        body.extend([0, 2, 0x13, 0x01]); // one cipher suite
        body.extend([1, 0]); // null compression
        body.extend(u16::try_from(extensions.len()).unwrap().to_be_bytes());
        body.extend(extensions);
        let mut message = vec![CLIENT_HELLO, 0];
        message.extend(u16::try_from(body.len()).unwrap().to_be_bytes());
        message.extend(body);
        let mut record = vec![HANDSHAKE_RECORD, 3, 1];
        record.extend(u16::try_from(message.len()).unwrap().to_be_bytes());
        record.extend(message);
        record
    }

    fn sni(names: &[&str]) -> Vec<u8> {
        let mut list = Vec::new();
        for name in names {
            list.push(HOST_NAME);
            list.extend(u16::try_from(name.len()).unwrap().to_be_bytes());
            list.extend(name.as_bytes());
        }
        let mut data = u16::try_from(list.len()).unwrap().to_be_bytes().to_vec();
        data.extend(list);
        let mut extension = SERVER_NAME_EXTENSION.to_be_bytes().to_vec();
        extension.extend(u16::try_from(data.len()).unwrap().to_be_bytes());
        extension.extend(data);
        extension
    }

    #[test]
    fn the_server_name_is_read_however_the_bytes_arrive() {
        let padding = [0x00, 0x15, 0x00, 0x03, 0, 0, 0];
        let mut extensions = padding.to_vec();
        extensions.extend(sni(&["Allowed.Example"]));
        let hello = hello_with(&extensions);
        assert_eq!(read(&hello), FirstFlight::Name("Allowed.Example".into()));
        for cut in 0..hello.len() {
            assert_eq!(read(&hello[..cut]), FirstFlight::NeedMore, "cut at {cut}");
        }
        // The same message split over two records.
        let message = &hello[RECORD_HEADER..];
        let mut split = Vec::new();
        for part in [&message[..10], &message[10..]] {
            split.extend([HANDSHAKE_RECORD, 3, 3]);
            split.extend(u16::try_from(part.len()).unwrap().to_be_bytes());
            split.extend(part);
        }
        assert_eq!(read(&split), FirstFlight::Name("Allowed.Example".into()));
    }

    #[test]
    fn what_is_not_tls_claims_nothing_and_bad_tls_is_unreadable() {
        assert_eq!(read(b"GET / HTTP/1.1\r\n"), FirstFlight::NotTls);
        assert_eq!(read(b"SSH-2.0-OpenSSH\r\n"), FirstFlight::NotTls);
        assert_eq!(read(&hello_with(&[])), FirstFlight::NoName);
        let twice = [sni(&["a.example"]), sni(&["b.example"])].concat();
        assert!(matches!(read(&hello_with(&twice)), FirstFlight::Unreadable(_)));
        assert!(matches!(
            read(&hello_with(&sni(&["a.example", "b.example"]))),
            FirstFlight::Unreadable(_)
        ));
        // A length that runs past the extension.
        let mut lying = sni(&["a.example"]);
        lying[3] += 5;
        assert!(matches!(read(&hello_with(&lying)), FirstFlight::Unreadable(_)));
        // A message that claims more than the proxy holds.
        let huge = [HANDSHAKE_RECORD, 3, 1, 0x40, 0, CLIENT_HELLO, 0x10, 0, 0];
        assert!(matches!(read(&huge), FirstFlight::Unreadable(_)));
        // An alert where the handshake should continue.
        let mut mixed = hello_with(&sni(&["a.example"]));
        let record_length = usize::from(u16::from_be_bytes([mixed[3], mixed[4]]));
        mixed.truncate(RECORD_HEADER + 10);
        mixed[3..5].copy_from_slice(&10u16.to_be_bytes());
        mixed.extend([0x15, 3, 3, 0, 2, 2, 40]);
        assert!(record_length > 10);
        assert!(matches!(read(&mixed), FirstFlight::Unreadable(_)));
    }
}

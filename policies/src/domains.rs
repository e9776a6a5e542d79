//! Network by domain: the allow/deny list a proxy checks each destination against
//! (`network = { allow = [...], deny = [...] }`, `--allow-domain`).
//!
//! A pattern is an exact host (`pkg.example.com`), a suffix wildcard (`*.example.org`: any name
//! *below* `example.org`, not `example.org` itself), an IP literal (`127.0.0.1`, `[::1]`), each
//! with an optional port (`git.example.net:443`). Names compare case-insensitively, without a
//! trailing dot. Deny wins over allow; a host no pattern allows is denied.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// The lists as written (what travels in the policy JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainRules {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<String>,
}

/// One parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainPattern {
    /// The pattern as written, for messages.
    pub text: String,
    host: HostPattern,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    Exact(String),
    /// `*.suffix`: stored as `.suffix`.
    Below(String),
    Address(IpAddr),
}

/// The name that means the host's loopback in an allow pattern.
pub const LOOPBACK_NAME: &str = "localhost";

/// What an allow pattern says about loopback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopbackTarget {
    /// A loopback address (`127.0.0.1`, `127.0.0.5`, `[::1]`), with the pattern's port.
    Address(IpAddr, Option<u16>),
    /// `localhost`, with the pattern's port.
    Name(Option<u16>),
}

impl LoopbackTarget {
    pub fn port(self) -> Option<u16> {
        match self {
            LoopbackTarget::Address(_, port) | LoopbackTarget::Name(port) => port,
        }
    }
}

/// Refuses an allow pattern that names loopback without a port — or an address that reaches
/// the host's loopback under another spelling (`0.0.0.0`, `[::]`, `[::ffff:127.0.0.1]`), which
/// is not forwarded but would open every loopback port through the proxy.
pub(crate) fn check_allow_pattern(pattern: &DomainPattern) -> Result<(), DomainPatternError> {
    let other_spelling = match pattern.host {
        HostPattern::Address(addr) => {
            let mapped = match addr {
                IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4),
                IpAddr::V4(_) => None,
            };
            addr.is_unspecified()
                || mapped.is_some_and(|v4| v4.is_loopback() || v4.is_unspecified())
        }
        HostPattern::Exact(_) | HostPattern::Below(_) => false,
    };
    if other_spelling && pattern.port.is_none() {
        return Err(DomainPatternError {
            pattern: pattern.text.clone(),
            why: "this address reaches the host's loopback: name the port (e.g. \
                  127.0.0.1:8080), never all of them",
        });
    }
    match pattern.loopback() {
        Some(target) if target.port().is_none() => Err(DomainPatternError {
            pattern: pattern.text.clone(),
            why: "a loopback target needs a port (e.g. 127.0.0.1:8080 or localhost:8080): \
                  cordon forwards each allowed loopback port into the command's network \
                  namespace, never all of them",
        }),
        Some(_) | None => Ok(()),
    }
}

/// A pattern that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad domain pattern {pattern:?}: {why}")]
pub struct DomainPatternError {
    pub pattern: String,
    pub why: &'static str,
}

/// What the list says about one destination.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum DomainDecision {
    /// Allowed by this allow pattern.
    Allowed { rule: String },
    /// Denied by this deny pattern.
    DeniedByRule { rule: String },
    /// No allow pattern matches.
    NotAllowed,
}

/// Lower-case, without a trailing dot.
pub fn normalize_host(host: &str) -> String {
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    host.trim_end_matches('.').to_ascii_lowercase()
}

impl DomainPattern {
    pub fn parse(text: &str) -> Result<DomainPattern, DomainPatternError> {
        let error = |why| DomainPatternError { pattern: text.to_owned(), why };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(error("empty"));
        }
        // `[v6]:port`, `[v6]`, a bare v6 address, or `host[:port]`.
        let (host, port) = if let Some(rest) = trimmed.strip_prefix('[') {
            let (addr, after) = rest.split_once(']').ok_or_else(|| error("unclosed '['"))?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or_else(|| error("junk after ']'"))?),
            };
            (addr, port)
        } else if trimmed.matches(':').count() > 1 {
            (trimmed, None)
        } else {
            match trimmed.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (trimmed, None),
            }
        };
        let port = match port {
            None => None,
            Some(p) => {
                Some(p.parse::<u16>().ok().filter(|p| *p != 0).ok_or_else(|| error("bad port"))?)
            }
        };
        let host = normalize_host(host);
        let host = if let Ok(addr) = host.parse::<IpAddr>() {
            HostPattern::Address(addr)
        } else if let Some(suffix) = host.strip_prefix("*.") {
            check_name(suffix).map_err(error)?;
            HostPattern::Below(format!(".{suffix}"))
        } else {
            check_name(&host).map_err(error)?;
            HostPattern::Exact(host)
        };
        Ok(DomainPattern { text: trimmed.to_owned(), host, port })
    }

    /// Whether `host:port` (host already normalized) matches.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match &self.host {
            HostPattern::Exact(name) => name == host,
            HostPattern::Below(suffix) => {
                host.ends_with(suffix.as_str()) && host.len() > suffix.len()
            }
            HostPattern::Address(addr) => host.parse::<IpAddr>().is_ok_and(|h| h == *addr),
        }
    }

    /// The host's loopback target this pattern names, if any (see [`crate::loopback_forwards`]).
    pub fn loopback(&self) -> Option<LoopbackTarget> {
        match &self.host {
            HostPattern::Address(addr) if addr.is_loopback() => {
                Some(LoopbackTarget::Address(*addr, self.port))
            }
            HostPattern::Exact(name) if name == LOOPBACK_NAME => {
                Some(LoopbackTarget::Name(self.port))
            }
            HostPattern::Address(_) | HostPattern::Exact(_) | HostPattern::Below(_) => None,
        }
    }

    /// Whether the pattern names this very address (an IP literal pattern) and port.
    pub fn names_address(&self, addr: IpAddr, port: u16) -> bool {
        self.port.is_none_or(|p| p == port)
            && matches!(self.host, HostPattern::Address(a) if a == addr)
    }
}

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("empty host");
    }
    let ok = name.split('.').all(|label| {
        !label.is_empty()
            && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    });
    if ok {
        Ok(())
    } else {
        Err("a host is letters, digits, '-', '_' and dots; '*' only as a leading '*.'")
    }
}

/// The parsed lists, ready to decide.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DomainMatcher {
    allow: Vec<DomainPattern>,
    deny: Vec<DomainPattern>,
}

impl DomainMatcher {
    pub fn new(rules: &DomainRules) -> Result<DomainMatcher, DomainPatternError> {
        let parse = |list: &[String]| {
            list.iter().map(|p| DomainPattern::parse(p)).collect::<Result<Vec<_>, _>>()
        };
        let allow = parse(&rules.allow)?;
        allow.iter().try_for_each(check_allow_pattern)?;
        Ok(DomainMatcher { allow, deny: parse(&rules.deny)? })
    }

    /// Deny wins; then the first allow pattern that matches; else not allowed. An allow
    /// pattern naming loopback always has a port ([`crate::loopback_forwards`]).
    pub fn decide(&self, host: &str, port: u16) -> DomainDecision {
        let host = normalize_host(host);
        if let Some(rule) = self.deny.iter().find(|p| p.matches(&host, port)) {
            return DomainDecision::DeniedByRule { rule: rule.text.clone() };
        }
        match self.allow.iter().find(|p| p.matches(&host, port)) {
            Some(rule) => DomainDecision::Allowed { rule: rule.text.clone() },
            None => DomainDecision::NotAllowed,
        }
    }

    /// Whether an allow pattern names `addr` (and `port`) itself: only then may a private,
    /// loopback or link-local address be reached.
    pub fn explicitly_allows_address(&self, addr: IpAddr, port: u16) -> bool {
        self.allow.iter().any(|p| p.names_address(addr, port))
    }
}

/// Addresses a name must not resolve to unless a pattern names them: loopback, private,
/// link-local (cloud metadata at 169.254.169.254), unspecified, shared (CGNAT), multicast,
/// unique-local v6, and v4-mapped forms of these. A public name resolving here is DNS
/// rebinding or an attempt to reach the host's own services.
pub fn is_internal_address(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_internal_address(IpAddr::V4(v4));
            }
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
        }
    }
}

/// The proxy variables a command behind cordon's proxy at `127.0.0.1:port` gets (both
/// spellings: curl reads lower case `http_proxy` only, many tools read upper case). HTTP and
/// HTTPS go through the HTTP proxy; `ALL_PROXY`, for every other protocol, through SOCKS5 on the
/// same port (`socks5h`: the client sends host names and the proxy resolves them). Loopback
/// stays direct: the command's own servers, and the allowed host loopback ports, which are
/// forwarded into its namespace.
pub fn proxy_env(port: u16) -> Vec<(&'static str, String)> {
    let url = format!("http://127.0.0.1:{port}");
    let socks = format!("socks5h://127.0.0.1:{port}");
    let no_proxy = "localhost,127.0.0.1,::1".to_owned();
    vec![
        ("HTTP_PROXY", url.clone()),
        ("http_proxy", url.clone()),
        ("HTTPS_PROXY", url.clone()),
        ("https_proxy", url),
        ("ALL_PROXY", socks.clone()),
        ("all_proxy", socks),
        ("NO_PROXY", no_proxy.clone()),
        ("no_proxy", no_proxy),
        ("CORDON_SANDBOX_NETWORK", "proxy".to_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn matcher(allow: &[&str], deny: &[&str]) -> DomainMatcher {
        DomainMatcher::new(&DomainRules {
            allow: allow.iter().map(|s| (*s).to_owned()).collect(),
            deny: deny.iter().map(|s| (*s).to_owned()).collect(),
        })
        .unwrap()
    }

    #[test]
    fn exact_suffix_and_port_patterns_match_as_documented() {
        let m = matcher(&["pkg.example.com", "*.example.org", "git.example.net:443"], &[]);
        let allowed = |h, p| matches!(m.decide(h, p), DomainDecision::Allowed { .. });
        assert!(allowed("pkg.example.com", 443));
        assert!(allowed("PKG.Example.com.", 80));
        assert!(!allowed("evil-pkg.example.com", 443));
        assert!(allowed("a.b.example.org", 443));
        assert!(!allowed("example.org", 443));
        assert!(!allowed("badexample.org", 443));
        assert!(allowed("git.example.net", 443));
        assert!(!allowed("git.example.net", 22));
    }

    #[test]
    fn deny_wins_and_names_its_rule() {
        let m = matcher(&["*.example.org"], &["secret.example.org"]);
        assert_eq!(
            m.decide("secret.example.org", 443),
            DomainDecision::DeniedByRule { rule: "secret.example.org".into() }
        );
        assert_eq!(m.decide("other.test", 443), DomainDecision::NotAllowed);
    }

    #[test]
    fn address_patterns_are_the_only_way_to_internal_addresses() {
        let m = matcher(&["127.0.0.1:8080", "[::1]:1"], &[]);
        assert!(m.explicitly_allows_address("127.0.0.1".parse().unwrap(), 8080));
        assert!(!m.explicitly_allows_address("127.0.0.1".parse().unwrap(), 8081));
        assert!(m.explicitly_allows_address("::1".parse().unwrap(), 1));
        assert!(!m.explicitly_allows_address("::1".parse().unwrap(), 22));
        assert!(!m.explicitly_allows_address("127.0.0.2".parse().unwrap(), 8080));
        assert!(matches!(m.decide("127.0.0.1", 8080), DomainDecision::Allowed { .. }));
        assert!(matches!(m.decide("[::1]", 1), DomainDecision::Allowed { .. }));
        for internal in [
            "127.0.0.1",
            "10.1.2.3",
            "169.254.169.254",
            "192.168.0.1",
            "::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "100.64.0.1",
        ] {
            assert!(is_internal_address(internal.parse().unwrap()), "{internal}");
        }
        for public in ["93.184.216.34", "2606:2800:220:1::1"] {
            assert!(!is_internal_address(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn the_policy_json_carries_the_list_and_codex_json_without_it_still_parses() {
        use crate::SandboxPolicy;
        let codex = r#"{"type":"workspace-write","network_access":true}"#;
        let old = SandboxPolicy::from_json(codex).unwrap();
        assert_eq!(old.network_domains(), None);
        assert_eq!(old.to_json(), SandboxPolicy::from_json(&old.to_json()).unwrap().to_json());
        let json = r#"{"type":"workspace-write","network_domains":{"allow":["a.test"],"deny":["b.test"]}}"#;
        let policy = SandboxPolicy::from_json(json).unwrap();
        assert_eq!(
            policy.network_domains(),
            Some(&DomainRules { allow: vec!["a.test".into()], deny: vec!["b.test".into()] })
        );
        assert!(policy.has_network_access());
        assert_eq!(SandboxPolicy::from_json(&policy.to_json()).unwrap(), policy);
    }

    #[test]
    fn bad_patterns_are_errors() {
        for bad in ["", "*", "a.*.b", "host:0", "host:x", "[::1", "exa mple.com", "*.", "a..b"] {
            assert!(DomainPattern::parse(bad).is_err(), "{bad:?}");
        }
    }
}

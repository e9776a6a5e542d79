//! Loopback targets of a domain list: the host's own servers a command may reach.
//!
//! A command with a domain list runs in a network namespace of its own, whose loopback is not
//! the host's, and clients connect to loopback directly (`NO_PROXY`; Go, Node and Chromium
//! whatever `NO_PROXY` says). So an allowed loopback target is forwarded: a listener on the
//! same address and port inside the namespace, relayed by the proxy to the host's. An allow
//! pattern names a loopback target when its host is a loopback address (`127.0.0.0/8`, `::1`)
//! or the name `localhost` (both `127.0.0.1` and `::1` inside, the host's `localhost`
//! outside). Such a pattern needs a port: a listener is bound per port, and "every port of the
//! host's loopback" would hand the command every local service (databases, container engines,
//! development servers).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::domains::{
    DomainPattern, DomainPatternError, DomainRules, LOOPBACK_NAME, LoopbackTarget,
    check_allow_pattern,
};

/// The most loopback ports one domain list forwards (each is a listening socket handed from
/// the sandbox helper to the proxy in one message).
pub const MAX_LOOPBACK_FORWARDS: usize = 64;

/// The addresses listened on inside the command's namespace for `target`.
fn inside(target: LoopbackTarget, port: u16) -> Vec<SocketAddr> {
    match target {
        LoopbackTarget::Address(ip, _) => vec![SocketAddr::new(ip, port)],
        LoopbackTarget::Name(_) => vec![
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port),
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), port),
        ],
    }
}

/// The addresses a listener is bound on inside the command's namespace, one per allowed
/// loopback address and port, in the list's order, each once. A pattern without a port, or
/// more than [`MAX_LOOPBACK_FORWARDS`] of them, is an error.
pub fn loopback_forwards(rules: &DomainRules) -> Result<Vec<SocketAddr>, DomainPatternError> {
    let mut forwards: Vec<SocketAddr> = Vec::new();
    for text in &rules.allow {
        let pattern = DomainPattern::parse(text)?;
        check_allow_pattern(&pattern)?;
        let Some(target) = pattern.loopback() else { continue };
        let Some(port) = target.port() else { continue };
        for address in inside(target, port) {
            if !forwards.contains(&address) {
                forwards.push(address);
            }
        }
        if forwards.len() > MAX_LOOPBACK_FORWARDS {
            return Err(DomainPatternError {
                pattern: text.clone(),
                why: "more loopback targets than cordon forwards (64 addresses and ports)",
            });
        }
    }
    Ok(forwards)
}

/// The allow pattern that reaches `host:port` when `host` is a loopback address or
/// `localhost` (the port belongs in it), else `None`.
pub fn loopback_advice(host: &str, port: u16) -> Option<String> {
    let host = crate::normalize_host(host);
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) if v4.is_loopback() => Some(format!("{v4}:{port}")),
        Ok(IpAddr::V6(v6)) if v6.is_loopback() => Some(format!("[{v6}]:{port}")),
        Ok(_) => None,
        Err(_) if host == LOOPBACK_NAME => Some(format!("{LOOPBACK_NAME}:{port}")),
        Err(_) => None,
    }
}

/// How to allow what a list refused, given the refused `host:port`s: `--allow-domain HOST`,
/// and for a refused loopback target the form with a port. The port is never filled in: the
/// command chose what it tried, and a loopback port is one of this machine's own services (a
/// container engine's API, a database), so cordon does not recommend opening a particular one.
pub fn allow_domain_advice(refused: &[String]) -> String {
    let loopback = refused.iter().any(|target| {
        target.rsplit_once(':').is_some_and(|(host, port)| {
            port.parse().is_ok_and(|port| loopback_advice(host, port).is_some())
        })
    });
    if loopback {
        "allow a host with --allow-domain HOST; a service on this machine's loopback only with \
         its port (--allow-domain 127.0.0.1:PORT), and only one you mean the command to reach"
            .to_owned()
    } else {
        "allow a host with --allow-domain HOST".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn rules(allow: &[&str]) -> DomainRules {
        DomainRules { allow: allow.iter().map(|s| (*s).to_owned()).collect(), deny: Vec::new() }
    }

    #[test]
    fn each_loopback_address_and_port_is_forwarded_once_and_localhost_means_both_families() {
        let forwards = loopback_forwards(&rules(&[
            "pkg.example.com",
            "127.0.0.1:8080",
            "localhost:8080",
            "[::1]:9000",
            "127.0.0.5:81",
            "*.0.0.1:82",
        ]))
        .unwrap();
        let expected: Vec<SocketAddr> =
            ["127.0.0.1:8080", "[::1]:8080", "[::1]:9000", "127.0.0.5:81"]
                .iter()
                .map(|a| a.parse().unwrap())
                .collect();
        assert_eq!(forwards, expected);
    }

    #[test]
    fn a_loopback_target_without_a_port_is_an_error() {
        for bad in ["0.0.0.0", "[::]", "[::ffff:127.0.0.1]", "::ffff:0.0.0.0"] {
            let error = loopback_forwards(&rules(&[bad])).unwrap_err();
            assert!(error.why.contains("reaches the host's loopback"), "{bad}: {error}");
            assert!(crate::DomainMatcher::new(&rules(&[bad])).is_err(), "{bad}");
        }
        assert_eq!(loopback_forwards(&rules(&["0.0.0.0:80"])).unwrap(), []);
        for bad in ["127.0.0.1", "localhost", "LOCALHOST.", "[::1]", "127.1.2.3"] {
            let error = loopback_forwards(&rules(&[bad])).unwrap_err();
            assert!(error.why.contains("needs a port"), "{bad}: {error}");
            assert!(crate::DomainMatcher::new(&rules(&[bad])).is_err(), "{bad}");
        }
        // A deny pattern without a port is fine: it only narrows.
        let deny =
            DomainRules { allow: vec!["localhost:1".into()], deny: vec!["localhost".into()] };
        assert!(crate::DomainMatcher::new(&deny).is_ok());
    }

    #[test]
    fn too_many_loopback_targets_are_an_error() {
        let many: Vec<String> = (1..=65).map(|p| format!("127.0.0.1:{p}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(loopback_forwards(&rules(&many)).is_err());
        assert_eq!(loopback_forwards(&rules(&many[..64])).unwrap().len(), 64);
    }

    #[test]
    fn the_advice_for_a_loopback_target_carries_its_port() {
        assert_eq!(loopback_advice("127.0.0.1", 9).as_deref(), Some("127.0.0.1:9"));
        assert_eq!(loopback_advice("::1", 9).as_deref(), Some("[::1]:9"));
        assert_eq!(loopback_advice("[::1]", 9).as_deref(), Some("[::1]:9"));
        assert_eq!(loopback_advice("LocalHost", 9).as_deref(), Some("localhost:9"));
        assert_eq!(loopback_advice("example.com", 9), None);
        assert_eq!(loopback_advice("10.0.0.1", 9), None);
        assert_eq!(
            allow_domain_advice(&["a.test:443".into(), "::1:2375".into()]),
            "allow a host with --allow-domain HOST; a service on this machine's loopback only \
             with its port (--allow-domain 127.0.0.1:PORT), and only one you mean the command \
             to reach"
        );
        assert_eq!(
            allow_domain_advice(&["a.test:443".into()]),
            "allow a host with --allow-domain HOST"
        );
    }
}

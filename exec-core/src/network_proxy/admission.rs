//! Admitting one destination: the allow/deny list (and a call's narrower list), the proxy's
//! own name resolution with its refusal of internal addresses, the upstream connection; and
//! the refusal of a tunnel whose first bytes named another server.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use cordon_policies::{
    DomainDecision, LOOPBACK_NAME, is_internal_address, loopback_advice, normalize_host,
};
use hyper::StatusCode;
use tokio::net::TcpStream;

use super::relay::Refused;
use super::{ConnectionRecord, Destination, Refusal, State, UPSTREAM_TIMEOUT};

impl State {
    /// Records a tunnel whose first bytes were not sent on: `destination` is where the tunnel
    /// was admitted for; the record names the server the ClientHello asked for, which is what
    /// was refused.
    pub(super) fn refuse_first_bytes(&self, refused: &Refused, destination: Destination<'_>) {
        let Destination { host, port, method } = destination;
        let (named, reason) = match refused {
            Refused::OtherName(name) => (
                name.clone(),
                format!(
                    "the TLS server name (SNI) {name} is not {host}, the host the tunnel was \
                     opened for; connect to {name}:{port} itself (with --allow-domain {name} \
                     if it should be reachable)"
                ),
            ),
            Refused::Unreadable(why) => {
                (host.to_owned(), format!("the tunnel's TLS handshake cannot be checked: {why}"))
            }
        };
        self.record(ConnectionRecord {
            host: named,
            port,
            method: method.to_owned(),
            allowed: false,
            rule: None,
            reason: Some(reason),
        });
    }

    /// Checks `destination`, connects, and records the outcome either way.
    pub(super) async fn open(
        &self,
        destination: Destination<'_>,
    ) -> Result<TcpStream, (Refusal, String)> {
        match self.admit(destination.host, destination.port).await {
            Ok((upstream, rule)) => {
                self.record(ConnectionRecord {
                    host: destination.host.to_owned(),
                    port: destination.port,
                    method: destination.method.to_owned(),
                    allowed: true,
                    rule: Some(rule),
                    reason: None,
                });
                Ok(upstream)
            }
            Err(refusal) => {
                let line = refusal.record(self, destination);
                Err((refusal, line))
            }
        }
    }

    /// The list, then the resolved addresses, then the connection.
    async fn admit(&self, host: &str, port: u16) -> Result<(TcpStream, String), Refusal> {
        let rule = self.check_lists(host, port)?;
        let addresses = self.resolve(host, port, &rule).await?;
        let connect = async {
            let mut last_error = None;
            for address in &addresses {
                match TcpStream::connect(address).await {
                    Ok(stream) => return Ok(stream),
                    Err(error) => last_error = Some(error),
                }
            }
            Err(last_error.map_or_else(|| "no address".to_owned(), |e| e.to_string()))
        };
        let failed = |why: String| Refusal {
            status: StatusCode::BAD_GATEWAY,
            rule: Some(rule.clone()),
            reason: format!("allowed by \"{rule}\", but the connection failed: {why}"),
        };
        match tokio::time::timeout(UPSTREAM_TIMEOUT, connect).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                Ok((stream, rule))
            }
            Ok(Err(why)) => Err(failed(why)),
            Err(_) => Err(failed("timed out".to_owned())),
        }
    }

    /// The allow/deny list, then a call's narrower list: the allowing rule, or the refusal.
    pub(super) fn check_lists(&self, host: &str, port: u16) -> Result<String, Refusal> {
        let rule = match self.matcher.decide(host, port) {
            DomainDecision::Allowed { rule } => rule,
            DomainDecision::DeniedByRule { rule } => {
                return Err(Refusal {
                    status: StatusCode::FORBIDDEN,
                    reason: format!(
                        "denied by the rule \"{rule}\" in the network deny list (config \
                         `network.deny`); deny wins over allow"
                    ),
                    rule: Some(rule),
                });
            }
            DomainDecision::NotAllowed => {
                return Err(Refusal {
                    status: StatusCode::FORBIDDEN,
                    reason: {
                        // A loopback target is allowed with its port, never without, and
                        // never recommended by number: the command chose it, and it is one
                        // of this machine's own services.
                        match loopback_advice(host, port) {
                            Some(_) => format!(
                                "no rule of the network allow-list matches {host}:{port}, a \
                                 service on this machine's loopback; it is reached only when \
                                 allowed with its port (--allow-domain 127.0.0.1:PORT), for a \
                                 service you mean the command to reach"
                            ),
                            None => format!(
                                "no rule of the network allow-list matches {host}:{port}; \
                                 allow it with --allow-domain {host} (config `network = {{ \
                                 allow = [\"{host}\"] }}`)"
                            ),
                        }
                    },
                    rule: None,
                });
            }
        };
        if let Some(narrow) = &self.narrowed_by {
            match narrow.decide(host, port) {
                DomainDecision::Allowed { .. } => {}
                DomainDecision::DeniedByRule { .. } | DomainDecision::NotAllowed => {
                    return Err(Refusal {
                        status: StatusCode::FORBIDDEN,
                        reason: format!(
                            "{host}:{port} is not among this call's allowed_domains (the \
                             executor's list allows it by \"{rule}\")"
                        ),
                        rule: None,
                    });
                }
            }
        }
        Ok(rule)
    }

    /// Whether the lists refuse `ip:port` by a deny rule (of either list).
    fn denied_by_rule(&self, ip: IpAddr, port: u16) -> bool {
        let host = ip.to_string();
        let denied = |m: &cordon_policies::DomainMatcher| {
            matches!(m.decide(&host, port), DomainDecision::DeniedByRule { .. })
        };
        denied(&self.matcher) || self.narrowed_by.as_ref().is_some_and(denied)
    }

    /// The addresses `host` resolves to, once: each must pass the deny lists by address (a name
    /// that resolves to a denied address is refused, whatever name it goes by) and, when
    /// internal, be named by a rule. The connection goes to these addresses, never to a second
    /// resolution.
    async fn resolve(&self, host: &str, port: u16, rule: &str) -> Result<Vec<SocketAddr>, Refusal> {
        let addresses = self.resolve_checked_internal(host, port, rule).await?;
        if let Some(denied) = addresses.iter().find(|a| self.denied_by_rule(a.ip(), a.port())) {
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                rule: Some(rule.to_owned()),
                reason: format!(
                    "{host} resolves to {}, which the network deny list names (config \
                     `network.deny`); deny wins over allow, whatever name an address goes by",
                    denied.ip()
                ),
            });
        }
        Ok(addresses)
    }

    async fn resolve_checked_internal(
        &self,
        host: &str,
        port: u16,
        rule: &str,
    ) -> Result<Vec<SocketAddr>, Refusal> {
        #[cfg(any(test, feature = "test-hooks"))]
        if let Some((_, address)) = self.test_resolve.iter().find(|(name, _)| name == host) {
            // The suite's mapping: the one way past the internal-address check by name.
            return Ok(vec![*address]);
        }
        if normalize_host(host) == LOOPBACK_NAME {
            // Allowed by name: a `localhost:PORT` pattern (a pattern naming loopback always has
            // its port), which means the host's own loopback, both families; an address the
            // deny list names stays out.
            let addresses: Vec<SocketAddr> =
                [IpAddr::V4(Ipv4Addr::LOCALHOST), IpAddr::V6(Ipv6Addr::LOCALHOST)]
                    .into_iter()
                    .filter(|ip| !self.denied_by_rule(*ip, port))
                    .map(|ip| SocketAddr::new(ip, port))
                    .collect();
            return Ok(addresses);
        }
        let addresses: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => {
                let lookup = tokio::net::lookup_host((host, port));
                match tokio::time::timeout(UPSTREAM_TIMEOUT, lookup).await {
                    Ok(Ok(found)) => found.collect(),
                    Ok(Err(error)) => {
                        return Err(Refusal {
                            status: StatusCode::BAD_GATEWAY,
                            rule: Some(rule.to_owned()),
                            reason: format!("cannot resolve {host}: {error}"),
                        });
                    }
                    Err(_) => {
                        return Err(Refusal {
                            status: StatusCode::BAD_GATEWAY,
                            rule: Some(rule.to_owned()),
                            reason: format!("resolving {host} timed out"),
                        });
                    }
                }
            }
        };
        // Every address must pass, or a resolver answering [public, internal] picks the target.
        if let Some(internal) = addresses.iter().find(|a| {
            is_internal_address(a.ip())
                && !(self.matcher.explicitly_allows_address(a.ip(), a.port())
                    && self
                        .narrowed_by
                        .as_ref()
                        .is_none_or(|n| n.explicitly_allows_address(a.ip(), a.port())))
        }) {
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                rule: Some(rule.to_owned()),
                reason: format!(
                    "{host} resolves to {}, a loopback/private/link-local address; the allow-list \
                     reaches such an address only when a rule names it (e.g. --allow-domain {}:{port})",
                    internal.ip(),
                    bracketed(internal.ip())
                ),
            });
        }
        Ok(addresses)
    }
}

fn bracketed(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

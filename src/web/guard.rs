//! The first layer of the SSRF guard: which addresses are private ([`blocked`]), and the check every URL
//! passes before a request is made or a redirect is followed ([`Policy::check`]).
//!
//! Owns the address ranges and the URL rules. Must not resolve names or open connections: the resolver
//! (`resolver`) applies [`blocked`] to DNS answers at connect time, and the client (`client`) runs
//! [`Policy::check`] on the first URL and on every redirect hop.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// Why a URL or an address is refused. Carried through reqwest's error chain by the resolver and the redirect
/// policy, found again by `client`, and told to the model by the webfetch tool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("only http and https URLs can be fetched, not `{0}:`")]
    Scheme(String),
    #[error("URLs with credentials (user:password@) are refused")]
    Credentials,
    #[error("the URL has no host")]
    NoHost,
    #[error("{host} is a private address ({range})")]
    PrivateAddress { host: String, range: &'static str },
    #[error("{0} names this machine (localhost)")]
    Localhost(String),
    #[error("{0} is a single-label host name (local network names are refused)")]
    SingleLabel(String),
    #[error("{host} is allowed only on the ports webfetch.allow_private names, not on {port}")]
    PortNotAllowed { host: String, port: u16 },
    #[error("{host} resolves to a private address: {address} ({range})")]
    PrivateAnswer { host: String, address: IpAddr, range: &'static str },
}

/// The private range `ip` falls in, if any: every CIDR of seed 000 §8.3 plus shared (CGNAT), multicast,
/// unspecified, broadcast, reserved, documentation and benchmarking space, and IPv6 forms that embed an IPv4
/// address (mapped, compatible, NAT64, 6to4, Teredo).
pub fn blocked(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let range = match ip.octets() {
        [0, ..] => "0.0.0.0/8, this network",
        [127, ..] => "127.0.0.0/8, loopback",
        [10, ..] => "10.0.0.0/8, private",
        [172, b, ..] if b & 0xf0 == 16 => "172.16.0.0/12, private",
        [192, 168, ..] => "192.168.0.0/16, private",
        [169, 254, ..] => "169.254.0.0/16, link-local",
        [100, b, ..] if b & 0xc0 == 64 => "100.64.0.0/10, shared address space (CGNAT)",
        [192, 0, 0, _] => "192.0.0.0/24, protocol assignments",
        [192, 0, 2, _] | [198, 51, 100, _] | [203, 0, 113, _] => "documentation",
        [192, 88, 99, _] => "192.88.99.0/24, 6to4 relay",
        [198, b, ..] if b & 0xfe == 18 => "198.18.0.0/15, benchmarking",
        [255, 255, 255, 255] => "255.255.255.255, broadcast",
        [a, ..] if a & 0xf0 == 224 => "224.0.0.0/4, multicast",
        [a, ..] if a >= 240 => "240.0.0.0/4, reserved",
        _ => return None,
    };
    Some(range)
}

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return blocked_v4(v4).map(|_| "IPv4-mapped IPv6 (::ffff:0:0/96) of a private IPv4 address");
    }
    let embedded = Ipv4Addr::from((u32::from(s[6]) << 16) | u32::from(s[7]));
    let range = match s {
        [0, 0, 0, 0, 0, 0, 0, 0] => "::, unspecified",
        [0, 0, 0, 0, 0, 0, 0, 1] => "::1, loopback",
        [0, 0, 0, 0, 0, 0, _, _] => "::/96, IPv4-compatible IPv6",
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => {
            return blocked_v4(embedded).map(|_| "64:ff9b::/96, NAT64 of a private IPv4 address");
        }
        [0x64, 0xff9b, 1, ..] => "64:ff9b:1::/48, local-use NAT64",
        [0x100, 0, 0, 0, ..] => "100::/64, discard-only",
        [0x2001, 0, ..] => "2001::/32, Teredo",
        [0x2001, 0xdb8, ..] => "2001:db8::/32, documentation",
        [0x2002, ..] => "2002::/16, 6to4",
        [a, ..] if a & 0xfe00 == 0xfc00 => "fc00::/7, unique local",
        [a, ..] if a & 0xffc0 == 0xfe80 => "fe80::/10, link-local",
        [a, ..] if a & 0xffc0 == 0xfec0 => "fec0::/10, site-local",
        [a, ..] if a & 0xff00 == 0xff00 => "ff00::/8, multicast",
        _ => return None,
    };
    Some(range)
}

/// A private host the user's own configuration allows, with its port (`localhost:3000`). The host is in the
/// URL parser's normal form (lower case, IPv6 in brackets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    pub host: String,
    pub port: u16,
}

/// The URL rules of one fetcher: the allowed private hosts (empty unless the user configured some).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    allowed: Vec<Allowed>,
}

impl Policy {
    pub fn new(allowed: Vec<Allowed>) -> Self {
        Self { allowed }
    }

    /// Is this host name one the user allowed (on some port)? The resolver lets its private answers through;
    /// the port was already checked by [`Policy::check`] on every URL that reaches the resolver.
    pub fn allows_name(&self, name: &str) -> bool {
        let name = name.trim_end_matches('.');
        self.allowed.iter().any(|a| a.host == name)
    }

    fn allows(&self, host: &str, port: Option<u16>) -> bool {
        let host = host.trim_end_matches('.');
        port.is_some_and(|port| self.allowed.iter().any(|a| a.host == host && a.port == port))
    }

    /// May a request go to `url`? Run on the first URL and on every redirect hop. Works on the parsed URL,
    /// whose host the WHATWG parser has already normalised (decimal, octal, hex and short IPv4 forms become
    /// dotted quads; IPv6 is compressed; IDNA maps full-width digits), so no spelling of an address passes.
    pub fn check(&self, url: &Url) -> Result<(), Refusal> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal::Scheme(url.scheme().to_string()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refusal::Credentials);
        }
        let host = url.host().ok_or(Refusal::NoHost)?;
        let shown = url.host_str().unwrap_or_default().to_string();
        let port = url.port_or_known_default();
        if self.allows(&shown, port) {
            return Ok(());
        }
        // The resolver lets an allowed name's private answers through whatever the port, so the port is held here.
        if matches!(host, Host::Domain(_)) && self.allows_name(&shown) {
            return Err(Refusal::PortNotAllowed { host: shown, port: port.unwrap_or(0) });
        }
        let ip = match host {
            Host::Ipv4(v4) => IpAddr::V4(v4),
            Host::Ipv6(v6) => IpAddr::V6(v6),
            Host::Domain(name) => return check_name(name),
        };
        match blocked(ip) {
            Some(range) => Err(Refusal::PrivateAddress { host: shown, range }),
            None => Ok(()),
        }
    }
}

/// Names that can only mean this machine or the local network. A trailing dot does not change the name.
fn check_name(name: &str) -> Result<(), Refusal> {
    let bare = name.trim_end_matches('.');
    if bare == "localhost" || bare.ends_with(".localhost") {
        return Err(Refusal::Localhost(name.to_string()));
    }
    if !bare.contains('.') {
        return Err(Refusal::SingleLabel(name.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn every_range_of_the_seed_and_the_extra_ones_is_blocked() {
        let blocked_ones = [
            ("127.0.0.1", "127.0.0.0/8, loopback"),
            ("127.255.255.254", "127.0.0.0/8, loopback"),
            ("10.1.2.3", "10.0.0.0/8, private"),
            ("172.16.0.1", "172.16.0.0/12, private"),
            ("172.31.255.255", "172.16.0.0/12, private"),
            ("192.168.1.1", "192.168.0.0/16, private"),
            ("169.254.169.254", "169.254.0.0/16, link-local"),
            ("0.1.2.3", "0.0.0.0/8, this network"),
            ("0.0.0.0", "0.0.0.0/8, this network"),
            ("100.64.0.1", "100.64.0.0/10, shared address space (CGNAT)"),
            ("100.127.255.255", "100.64.0.0/10, shared address space (CGNAT)"),
            ("224.0.0.1", "224.0.0.0/4, multicast"),
            ("239.255.255.250", "224.0.0.0/4, multicast"),
            ("255.255.255.255", "255.255.255.255, broadcast"),
            ("240.0.0.1", "240.0.0.0/4, reserved"),
            ("192.0.0.8", "192.0.0.0/24, protocol assignments"),
            ("192.0.2.1", "documentation"),
            ("198.18.0.1", "198.18.0.0/15, benchmarking"),
            ("::1", "::1, loopback"),
            ("::", "::, unspecified"),
            ("::ffff:127.0.0.1", "IPv4-mapped IPv6 (::ffff:0:0/96) of a private IPv4 address"),
            ("::ffff:169.254.169.254", "IPv4-mapped IPv6 (::ffff:0:0/96) of a private IPv4 address"),
            ("::127.0.0.1", "::/96, IPv4-compatible IPv6"),
            ("::8.8.8.8", "::/96, IPv4-compatible IPv6"),
            ("fc00::1", "fc00::/7, unique local"),
            ("fd12:3456::1", "fc00::/7, unique local"),
            ("fe80::1", "fe80::/10, link-local"),
            ("febf::1", "fe80::/10, link-local"),
            ("fec0::1", "fec0::/10, site-local"),
            ("ff02::1", "ff00::/8, multicast"),
            ("64:ff9b::a9fe:a9fe", "64:ff9b::/96, NAT64 of a private IPv4 address"),
            ("64:ff9b::7f00:1", "64:ff9b::/96, NAT64 of a private IPv4 address"),
            ("64:ff9b:1::1", "64:ff9b:1::/48, local-use NAT64"),
            ("2001:db8::1", "2001:db8::/32, documentation"),
            ("2001:0:4136:e378::1", "2001::/32, Teredo"),
            ("2002:7f00:1::1", "2002::/16, 6to4"),
            ("100::1", "100::/64, discard-only"),
        ];
        for (text, range) in blocked_ones {
            assert_eq!(blocked(ip(text)), Some(range), "{text}");
        }
    }

    #[test]
    fn public_addresses_pass_including_their_mapped_and_nat64_forms() {
        for text in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "172.15.255.255",
            "100.128.0.1",
            "100.63.255.255",
            "198.20.0.1",
            "223.255.255.255",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
        ] {
            assert_eq!(blocked(ip(text)), None, "{text}");
        }
    }

    fn check(policy: &Policy, url: &str) -> Result<(), Refusal> {
        policy.check(&Url::parse(url).unwrap())
    }

    #[test]
    fn every_spelling_of_a_private_ipv4_literal_is_refused() {
        let policy = Policy::default();
        let loopback =
            || Refusal::PrivateAddress { host: "127.0.0.1".into(), range: "127.0.0.0/8, loopback" };
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0x7f.1/",
            "http://0177.0.0.1/",
            "http://017700000001/",
            "http://127.1/",
            "http://127.0.1/",
            "http://127.0.0.1./",
            "http://%31%32%37.0.0.1/",
            "http://１２７.０.０.１/",
            "https://127.0.0.1:8443/x?y#z",
        ] {
            assert_eq!(check(&policy, url), Err(loopback()), "{url}");
        }
        let metadata =
            Refusal::PrivateAddress { host: "169.254.169.254".into(), range: "169.254.0.0/16, link-local" };
        for url in ["http://169.254.169.254/latest/meta-data/", "http://0xa9fea9fe/", "http://2852039166/"] {
            assert_eq!(check(&policy, url), Err(metadata.clone()), "{url}");
        }
        assert_eq!(
            check(&policy, "http://0/"),
            Err(Refusal::PrivateAddress { host: "0.0.0.0".into(), range: "0.0.0.0/8, this network" })
        );
    }

    #[test]
    fn ipv6_literals_are_refused_in_mapped_compatible_and_nat64_forms() {
        let policy = Policy::default();
        let cases = [
            ("http://[::1]/", "[::1]", "::1, loopback"),
            ("http://[0:0:0:0:0:0:0:1]/", "[::1]", "::1, loopback"),
            ("http://[::]/", "[::]", "::, unspecified"),
            (
                "http://[::ffff:127.0.0.1]/",
                "[::ffff:7f00:1]",
                "IPv4-mapped IPv6 (::ffff:0:0/96) of a private IPv4 address",
            ),
            (
                "http://[::ffff:a9fe:a9fe]/",
                "[::ffff:a9fe:a9fe]",
                "IPv4-mapped IPv6 (::ffff:0:0/96) of a private IPv4 address",
            ),
            ("http://[::127.0.0.1]/", "[::7f00:1]", "::/96, IPv4-compatible IPv6"),
            (
                "http://[64:ff9b::169.254.169.254]/",
                "[64:ff9b::a9fe:a9fe]",
                "64:ff9b::/96, NAT64 of a private IPv4 address",
            ),
            ("http://[fd00::1]:8080/", "[fd00::1]", "fc00::/7, unique local"),
            ("http://[fe80::1]/", "[fe80::1]", "fe80::/10, link-local"),
        ];
        for (url, host, range) in cases {
            assert_eq!(
                check(&policy, url),
                Err(Refusal::PrivateAddress { host: host.into(), range }),
                "{url}"
            );
        }
    }

    #[test]
    fn zone_ids_do_not_parse_so_they_never_reach_a_request() {
        for url in ["http://[fe80::1%25eth0]/", "http://[fe80::1%eth0]/", "http://[::1%251]/"] {
            assert!(Url::parse(url).is_err(), "{url} parsed");
        }
    }

    #[test]
    fn schemes_credentials_localhost_and_single_label_names_are_refused() {
        let policy = Policy::default();
        assert_eq!(check(&policy, "file:///etc/passwd"), Err(Refusal::Scheme("file".into())));
        assert_eq!(check(&policy, "ftp://example.com/"), Err(Refusal::Scheme("ftp".into())));
        assert_eq!(check(&policy, "gopher://example.com/"), Err(Refusal::Scheme("gopher".into())));
        assert_eq!(check(&policy, "https://user:secret@example.com/"), Err(Refusal::Credentials));
        assert_eq!(check(&policy, "https://user@example.com/"), Err(Refusal::Credentials));
        assert_eq!(check(&policy, "https://:secret@example.com/"), Err(Refusal::Credentials));
        assert_eq!(check(&policy, "http://localhost/"), Err(Refusal::Localhost("localhost".into())));
        assert_eq!(check(&policy, "http://LOCALHOST./"), Err(Refusal::Localhost("localhost.".into())));
        assert_eq!(
            check(&policy, "http://api.localhost:80/"),
            Err(Refusal::Localhost("api.localhost".into()))
        );
        assert_eq!(check(&policy, "http://intranet/"), Err(Refusal::SingleLabel("intranet".into())));
        assert_eq!(check(&policy, "http://router./"), Err(Refusal::SingleLabel("router.".into())));
        assert_eq!(check(&policy, "https://example.com/a?b=c"), Ok(()));
        assert_eq!(check(&policy, "http://8.8.8.8:8080/"), Ok(()));
        assert_eq!(check(&policy, "http://[2606:4700::1111]/"), Ok(()));
    }

    #[test]
    fn an_allowed_private_host_passes_only_on_its_port() {
        let policy = Policy::new(vec![
            Allowed { host: "localhost".into(), port: 3000 },
            Allowed { host: "127.0.0.1".into(), port: 8080 },
            Allowed { host: "[::1]".into(), port: 5173 },
        ]);
        assert_eq!(check(&policy, "http://localhost:3000/app"), Ok(()));
        assert_eq!(check(&policy, "http://127.0.0.1:8080/"), Ok(()));
        assert_eq!(check(&policy, "http://[::1]:5173/"), Ok(()));
        assert_eq!(
            check(&policy, "http://localhost:3001/"),
            Err(Refusal::PortNotAllowed { host: "localhost".into(), port: 3001 })
        );
        assert_eq!(
            check(&policy, "http://localhost/"),
            Err(Refusal::PortNotAllowed { host: "localhost".into(), port: 80 })
        );
        assert!(check(&policy, "http://127.0.0.1:8081/").is_err());
        assert!(check(&policy, "http://127.0.0.2:8080/").is_err());
        assert!(check(&policy, "http://2130706433:8080/").is_ok(), "the same address in another spelling");
        assert_eq!(check(&policy, "http://u:p@localhost:3000/"), Err(Refusal::Credentials));
        assert!(policy.allows_name("localhost") && policy.allows_name("localhost."));
        assert!(!policy.allows_name("example.com"));
    }
}

//! The second layer of the SSRF guard: the resolver reqwest calls at connect time, for the first URL and for
//! every redirect hop. The addresses it returns are the ones dialled, so a name that answers with a private
//! address is refused at the moment of use and DNS rebinding has no window between check and connect.
//!
//! Owns name resolution for webfetch. Must not decide anything about URLs (that is `guard::Policy::check`);
//! IP literals never reach it (hyper dials them without asking a resolver), which is why the URL check exists.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use futures::future::BoxFuture;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::guard::{Policy, Refusal, blocked};

/// Where names are looked up: the system resolver in production, a fixed table in tests.
pub trait Lookup: Send + Sync {
    fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>>;
}

/// The system resolver (`getaddrinfo` on a blocking thread, through tokio).
#[derive(Debug, Default, Clone, Copy)]
pub struct System;

impl Lookup for System {
    fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>> {
        let host = host.to_string();
        Box::pin(
            async move { Ok(tokio::net::lookup_host((host.as_str(), 0)).await?.map(|a| a.ip()).collect()) },
        )
    }
}

/// A fixed table of answers, for tests and benchmarks: names it does not know do not resolve.
#[derive(Debug, Default, Clone)]
pub struct Table {
    answers: HashMap<String, Vec<IpAddr>>,
}

impl Table {
    pub fn with(mut self, name: &str, addresses: &[IpAddr]) -> Self {
        self.answers.insert(name.to_ascii_lowercase(), addresses.to_vec());
        self
    }
}

impl Lookup for Table {
    fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>> {
        let found = self.answers.get(&host.trim_end_matches('.').to_ascii_lowercase()).cloned();
        let host = host.to_string();
        Box::pin(async move {
            found.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("{host}: no such host")))
        })
    }
}

/// The guarded resolver: resolves with `lookup`, then refuses the name if any answer is private (unless the
/// user allowed this name in `policy`).
pub struct Guarded {
    lookup: Arc<dyn Lookup>,
    policy: Policy,
}

impl Guarded {
    pub fn new(lookup: Arc<dyn Lookup>, policy: Policy) -> Self {
        Self { lookup, policy }
    }
}

/// The check on one DNS answer: every address must be public. A name with one private record among public
/// ones is refused as a whole, since the dialler may pick any of them.
pub fn check_answer(host: &str, addresses: &[IpAddr], policy: &Policy) -> Result<(), Refusal> {
    if policy.allows_name(host) {
        return Ok(());
    }
    match addresses.iter().find_map(|a| blocked(*a).map(|range| (*a, range))) {
        Some((address, range)) => Err(Refusal::PrivateAnswer { host: host.to_string(), address, range }),
        None => Ok(()),
    }
}

impl Resolve for Guarded {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_string();
        let lookup = self.lookup.lookup(&host);
        let policy = self.policy.clone();
        Box::pin(async move {
            let addresses = lookup.await?;
            if addresses.is_empty() {
                return Err(format!("{host}: no addresses").into());
            }
            check_answer(&host, &addresses, &policy)?;
            tracing::debug!(%host, ?addresses, "webfetch resolved");
            // Port 0: reqwest puts the URL's port in.
            let addrs: Addrs = Box::new(addresses.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::web::guard::Allowed;

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter().map(|a| a.parse().unwrap()).collect()
    }

    #[test]
    fn a_name_with_any_private_answer_is_refused_as_a_whole() {
        let policy = Policy::default();
        assert_eq!(check_answer("example.com", &ips(&["93.184.215.14", "2606:2800::1"]), &policy), Ok(()));
        assert_eq!(
            check_answer("rebind.example", &ips(&["93.184.215.14", "10.0.0.5"]), &policy),
            Err(Refusal::PrivateAnswer {
                host: "rebind.example".into(),
                address: "10.0.0.5".parse().unwrap(),
                range: "10.0.0.0/8, private"
            })
        );
        assert_eq!(
            check_answer("nat64.example", &ips(&["64:ff9b::a9fe:a9fe"]), &policy),
            Err(Refusal::PrivateAnswer {
                host: "nat64.example".into(),
                address: "64:ff9b::a9fe:a9fe".parse().unwrap(),
                range: "64:ff9b::/96, NAT64 of a private IPv4 address"
            })
        );
    }

    #[test]
    fn only_a_name_the_user_allowed_may_answer_privately() {
        let policy = Policy::new(vec![Allowed { host: "dev.test".into(), port: 3000 }]);
        assert_eq!(check_answer("dev.test", &ips(&["127.0.0.1"]), &policy), Ok(()));
        assert!(check_answer("other.test", &ips(&["127.0.0.1"]), &policy).is_err());
    }

    #[tokio::test]
    async fn the_guarded_resolver_refuses_a_private_answer_and_passes_a_public_one() {
        let table = Table::default()
            .with("public.test", &ips(&["8.8.8.8"]))
            .with("metadata.test", &ips(&["169.254.169.254"]));
        let guarded = Guarded::new(Arc::new(table), Policy::default());
        let addrs: Vec<SocketAddr> = guarded.resolve("public.test".parse().unwrap()).await.unwrap().collect();
        assert_eq!(addrs, vec!["8.8.8.8:0".parse().unwrap()]);
        let Err(error) = guarded.resolve("metadata.test".parse().unwrap()).await else { panic!("resolved") };
        assert_eq!(
            error.downcast_ref::<Refusal>(),
            Some(&Refusal::PrivateAnswer {
                host: "metadata.test".into(),
                address: "169.254.169.254".parse().unwrap(),
                range: "169.254.0.0/16, link-local"
            })
        );
        let Err(error) = guarded.resolve("unknown.test".parse().unwrap()).await else { panic!("resolved") };
        assert_eq!(error.to_string(), "unknown.test: no such host");
    }
}

//! The web service behind `webfetch` and `websearch`: an SSRF-guarded HTTP client of its own, HTML → Markdown,
//! a response cache, and the search client.
//!
//! The SSRF guard has four layers, all required (research/reach.md §2): the URL check on the first URL and on
//! every redirect hop (`guard`), the resolver that refuses private DNS answers at connect time (`resolver`),
//! the redirect policy (`client`), and no proxy from the environment (`client`). The client is never the
//! model's, which must reach loopback model servers.
//!
//! Owns talking to the web. Must not import the tool framework, the built-in tools or the session: the tools
//! in `builtin` call this service and turn its errors into tool errors.

pub mod cache;
pub mod client;
pub mod convert;
pub mod guard;
pub mod resolver;
pub mod search;

pub use client::{FetchError, Fetched, Fetcher, Limits, Page, Request};
pub use guard::{Allowed, Policy, Refusal};

//! The integration tests: one binary; `support/` holds the fake model and the ACP test client, `suite/` a file
//! per feature.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout, clippy::print_stderr)]

mod suite;
mod support;

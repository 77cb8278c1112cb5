//! Build script: links the `tinycode` binary as a fixed-address (non-PIE) executable on Linux.
//!
//! A position-independent executable makes the dynamic loader patch ~47,000 addresses in the binary's tables at
//! every start (each a write to a copy-on-write page): 0.5–2 ms before `main`, the largest single part of
//! `spawn → initialize` (benches/README.md). Linked at a fixed address, those are resolved once, at link time.
//! The shared libraries, heap and stacks stay randomised; only the agent's own code has a fixed address. Touches
//! nothing but the binaries' link line (dependencies and test harnesses are built as before).

fn main() {
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let gnu = std::env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|env| env == "gnu");
    if linux && gnu {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

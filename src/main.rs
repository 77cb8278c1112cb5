//! The `tinycode` binary. Everything it does is in the library (`tinycode::launch`), so that all of its code
//! is compiled there (see that module for why).
//!
//! On glibc Linux and macOS the binary brings its own C `main` instead of Rust's runtime start (`no_main`), which
//! spends about a sixth of a millisecond of every start reading `/proc/self/maps` and setting up a stack-overflow
//! handler; [`tinycode::launch::start`] does the part of it this process needs. Those are the platforms where std
//! finds the command line without that start (elsewhere, musl for one, it would be empty). Its unit tests (there
//! are none) keep the ordinary harness.
#![cfg_attr(all(not(test), any(target_os = "macos", all(target_os = "linux", target_env = "gnu"))), no_main)]

/// The process's entry point, called by the C runtime with the command line (which std reads by itself).
#[cfg(all(not(test), any(target_os = "macos", all(target_os = "linux", target_env = "gnu"))))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: std::ffi::c_int, _argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    tinycode::launch::start()
}

#[cfg(not(all(not(test), any(target_os = "macos", all(target_os = "linux", target_env = "gnu")))))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(tinycode::launch::main())
}

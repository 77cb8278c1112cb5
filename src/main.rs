//! The `tinycode` binary. Everything it does is in the library (`tinycode::launch`), so that all of its code
//! is compiled there (see that module for why).

fn main() -> std::process::ExitCode {
    tinycode::launch::main()
}

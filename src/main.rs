#![deny(clippy::print_stdout, clippy::print_stderr)]
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    tf_spawner::main()
}

#![deny(clippy::print_stdout, clippy::print_stderr)]

fn main() -> std::process::ExitCode {
    tf_spawner::main()
}

fn main() -> std::process::ExitCode {
    tf_spawner::main()
}

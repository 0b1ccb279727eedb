//! The `mcpeval-otel` binary: its code is the library beside this file.

fn main() -> std::process::ExitCode {
    mcpeval_otel::main()
}

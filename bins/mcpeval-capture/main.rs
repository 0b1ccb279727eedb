//! The `mcpeval-capture` binary: its code is the library beside this file.

fn main() -> std::process::ExitCode {
    mcpeval_capture::main()
}

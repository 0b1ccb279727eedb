//! The `mcpeval-index` binary: its code is the library beside this file.

fn main() -> std::process::ExitCode {
    mcpeval_index::main()
}

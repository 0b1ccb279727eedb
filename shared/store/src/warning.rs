//! Warnings on stderr, one line each, named by the program that prints them.

use std::path::Path;

/// Writes `program: warning: message` to stderr, for the running
/// program.
pub fn warning(message: std::fmt::Arguments<'_>) {
    warn(&program(), message);
}

/// Writes `program: warning: message` to stderr.
pub fn warn(program: &str, message: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{program}: warning: {message}");
}

/// The running program's name, for the warning line.
fn program() -> String {
    std::env::args_os()
        .next()
        .and_then(|arg| {
            Path::new(&arg)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "mcpeval".to_owned())
}

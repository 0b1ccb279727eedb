//! Starting a program through another one: a runner that measures it.

use std::process::Command;

/// `runner`, already given its own program, arguments and environment,
/// followed by the program, arguments, environment changes and working
/// directory of `cmd`: what `cmd` would run, run through `runner`.
pub fn through(mut runner: Command, cmd: &Command) -> Command {
    runner.arg(cmd.get_program()).args(cmd.get_args());
    for (name, value) in cmd.get_envs() {
        match value {
            Some(value) => runner.env(name, value),
            None => runner.env_remove(name),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        runner.current_dir(dir);
    }
    runner
}

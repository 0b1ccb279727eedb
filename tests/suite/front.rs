//! The `mcpeval` front: dispatch to `mcpeval-NAME` beside it or on PATH,
//! listing, suggestions, refusals and the exec hand-over.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::assert::Assert;
use serde_json::{Value, json};

use crate::support::{SYSTEM_PATH, Store, bin, bin_dir, text};

const CAPTURE_ABOUT: &str = "Relay MCP traffic untouched, journaling every tool call";

/// A directory of third-party commands under the store's scratch space.
fn plugin_dir(store: &Store, name: &str) -> PathBuf {
    let dir = store.scratch().join(name);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes a `#!/bin/sh` script `dir/file` with mode `mode`.
fn script(dir: &Path, file: &str, body: &str, mode: u32) -> PathBuf {
    let path = dir.join(file);
    crate::support::write_executable(&path, &format!("#!/bin/sh\n{body}\n"), mode);
    path
}

/// A script that leaves `marker` behind if anything ever runs it.
fn tripwire(dir: &Path, file: &str, marker: &Path) -> PathBuf {
    script(
        dir,
        file,
        &format!("/usr/bin/touch '{}'", marker.display()),
        0o755,
    )
}

/// `mcpeval` with `dirs` in front of the system PATH.
fn front(store: &Store, dirs: &[&Path]) -> Command {
    let mut cmd = store.cmd("mcpeval");
    let mut path: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    path.extend(std::env::split_paths(SYSTEM_PATH));
    cmd.env("PATH", std::env::join_paths(path).unwrap());
    cmd
}

/// Runs `cmd` to its end, failing the test instead of hanging past `limit`.
fn output_within(mut cmd: Command, limit: Duration) -> Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn output(cmd: Command) -> Output {
    output_within(cmd, Duration::from_secs(30))
}

/// `cmd` run to its end through assert_cmd, with stdin empty, failing the
/// test instead of hanging past `limit`: for checks of status, stdout and
/// stderr alone.
fn assert_within(cmd: Command, limit: Duration) -> Assert {
    assert_cmd::Command::from_std(cmd).timeout(limit).assert()
}

fn assert(cmd: Command) -> Assert {
    assert_within(cmd, Duration::from_secs(30))
}

fn list_json(cmd: Command) -> Vec<Value> {
    let out = output(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["commands"].as_array().unwrap().clone()
}

fn entry<'a>(commands: &'a [Value], name: &str) -> &'a Value {
    commands
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed in {commands:?}"))
}

fn canonical(path: impl AsRef<Path>) -> PathBuf {
    fs::canonicalize(path).unwrap()
}

/// Two PATH directories that both hold a `mcpeval-hello` tripwire.
struct Shadowed {
    first: PathBuf,
    second: PathBuf,
    marker: PathBuf,
    hello: PathBuf,
    hello_later: PathBuf,
}

impl Shadowed {
    fn new(store: &Store) -> Shadowed {
        let first = plugin_dir(store, "first");
        let second = plugin_dir(store, "second");
        let marker = store.scratch().join("ran");
        let hello = tripwire(&first, "mcpeval-hello", &marker);
        let hello_later = tripwire(&second, "mcpeval-hello", &marker);
        Shadowed {
            first,
            second,
            marker,
            hello,
            hello_later,
        }
    }
}

#[test]
fn list_json_shows_origin_description_and_shadowed_copies() {
    let store = Store::new();
    let Shadowed {
        first,
        second,
        marker,
        hello,
        hello_later,
    } = Shadowed::new(&store);
    let capture_later = tripwire(&second, "mcpeval-capture", &marker);
    // None of these is a command: no exec bit, a name that is not one, a
    // directory, a dangling link.
    script(&first, "mcpeval-noexec", "exit 0", 0o644);
    tripwire(&first, "mcpeval-Bad", &marker);
    tripwire(&first, "mcpeval-x.d", &marker);
    fs::create_dir(first.join("mcpeval-dir")).unwrap();
    symlink(first.join("missing"), first.join("mcpeval-dangling")).unwrap();
    // A link to a program is one.
    symlink(&hello, first.join("mcpeval-link")).unwrap();

    // The front's own directory on PATH as well: its files are not copies
    // of themselves.
    let mut cmd = front(&store, &[&first, &bin_dir(), &second]);
    cmd.args(["--list", "--format", "json"]);
    let commands = list_json(cmd);

    assert_eq!(
        entry(&commands, "capture"),
        &json!({"name": "capture", "path": bin("mcpeval-capture").to_str().unwrap(),
            "origin": "sibling", "builtin": true, "description": CAPTURE_ABOUT,
            "shadowed": [capture_later.to_str().unwrap()]})
    );
    assert_eq!(
        entry(&commands, "hello"),
        &json!({"name": "hello", "path": hello.to_str().unwrap(), "origin": "path",
            "builtin": false, "description": null, "shadowed": [hello_later.to_str().unwrap()]})
    );
    assert_eq!(
        entry(&commands, "link")["path"],
        first.join("mcpeval-link").to_str().unwrap()
    );
    let names: Vec<&str> = commands
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for absent in [
        "noexec",
        "Bad",
        "x.d",
        "capture.d",
        "dir",
        "dangling",
        "mcpeval",
        "",
    ] {
        assert!(!names.contains(&absent), "{absent} listed: {names:?}");
    }
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted);
    assert!(!marker.exists(), "listing ran a command");
}

#[test]
fn a_builtin_found_only_on_path_keeps_its_description() {
    let store = Store::new();
    let dir = plugin_dir(&store, "bin");
    // `share` is a built-in name. A copy of the front alone in its own
    // directory has no siblings, so the one on PATH is all it can find,
    // whichever built-ins this build has.
    let share = script(&dir, "mcpeval-share", "exit 0", 0o755);
    let lone = plugin_dir(&store, "lone");
    let copy = lone.join("mcpeval");
    crate::support::copy_bin("mcpeval", &copy);
    let mut cmd = Command::new(&copy);
    store.env(&mut cmd);
    let path = std::iter::once(dir.clone()).chain(std::env::split_paths(SYSTEM_PATH));
    cmd.env("PATH", std::env::join_paths(path).unwrap())
        .args(["--format=json", "--list"]);
    let commands = list_json(cmd);
    assert_eq!(
        entry(&commands, "share"),
        &json!({"name": "share", "path": share.to_str().unwrap(), "origin": "path",
            "builtin": true, "description": "Pack share-safe findings into an envelope for others",
            "shadowed": []})
    );
}

#[test]
fn a_path_that_is_not_utf8_is_left_out_of_the_json_listing_by_name() {
    let store = Store::new();
    let marker = store.scratch().join("ran");
    // Both copies of `odd` live in directories whose names are not UTF-8;
    // the second copy of `hello` as well.
    let odd_dir = store.scratch().join(OsStr::from_bytes(b"odd-\xff"));
    let later_dir = store.scratch().join(OsStr::from_bytes(b"later-\xfe"));
    fs::create_dir_all(&odd_dir).unwrap();
    fs::create_dir_all(&later_dir).unwrap();
    let plain = plugin_dir(&store, "plain");
    let hello = tripwire(&plain, "mcpeval-hello", &marker);
    tripwire(&later_dir, "mcpeval-hello", &marker);
    tripwire(&odd_dir, "mcpeval-odd", &marker);

    let mut cmd = front(&store, &[&plain, &odd_dir, &later_dir]);
    cmd.args(["--list", "--format", "json"]);
    let out = output(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let commands = doc["commands"].as_array().unwrap();
    assert!(!commands.iter().any(|c| c["name"] == "odd"), "{commands:?}");
    assert_eq!(
        entry(commands, "hello"),
        &json!({"name": "hello", "path": hello.to_str().unwrap(), "origin": "path",
            "builtin": false, "description": null, "shadowed": []})
    );
    assert!(!contains_replacement(&out.stdout), "{}", text(&out.stdout));
    // Each left-out path is named on stderr, its odd byte escaped.
    let scratch = store.scratch().to_str().unwrap();
    assert_eq!(
        text(&out.stderr),
        format!(
            "mcpeval: warning: \"{scratch}/later-\\xFE/mcpeval-hello\" is not valid UTF-8, \
             which JSON cannot carry; it is left out of the listing\n\
             mcpeval: warning: \"{scratch}/odd-\\xFF/mcpeval-odd\" is not valid UTF-8, \
             which JSON cannot carry; it is left out of the listing\n"
        )
    );
    assert!(!marker.exists(), "listing ran a command");
}

fn contains_replacement(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes).contains('\u{fffd}')
}

#[test]
fn list_text_is_aligned_and_help_alone_is_the_same() {
    let store = Store::new();
    let Shadowed {
        first,
        second,
        marker,
        hello,
        hello_later,
    } = Shadowed::new(&store);

    let mut cmd = front(&store, &[&first, &second]);
    cmd.arg("--list");
    let out = output(cmd);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stderr), "");
    let listing = text(&out.stdout);
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines[0], "Built-in commands:");
    assert!(
        lines.contains(&format!("  capture        {CAPTURE_ABOUT}").as_str()),
        "{listing}"
    );
    let plugins = lines
        .iter()
        .position(|l| *l == "Plugins:")
        .expect("a Plugins section");
    assert_eq!(lines[plugins - 1], "");
    assert_eq!(
        lines[plugins + 1..],
        [
            format!("  hello          {}", hello.display()),
            format!("                 (shadows {})", hello_later.display()),
        ]
    );

    let mut help = front(&store, &[&first, &second]);
    help.arg("help");
    let again = output(help);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(text(&again.stdout), listing);
    assert!(!marker.exists(), "listing ran a command");
}

#[test]
fn list_into_a_closed_pipe_is_a_quiet_success() {
    for format in ["text", "json"] {
        let store = Store::new();
        let (reader, writer) = std::io::pipe().unwrap();
        // The reader is gone before the front writes a byte.
        drop(reader);
        let mut cmd = front(&store, &[]);
        cmd.args(["--list", "--format", format])
            .stdout(writer)
            .stderr(Stdio::piped());
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{format}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stderr), "", "{format}");
    }
}

/// A plugin that records its arguments (NUL-terminated) and environment,
/// writes known bytes to stdout and stderr, and exits 7.
fn recorder(store: &Store, dir: &Path) -> (PathBuf, PathBuf) {
    let args = store.scratch().join("args");
    let env = store.scratch().join("env");
    let body = format!(
        "for a in \"$@\"; do printf '%s\\0' \"$a\"; done >'{args}'\n\
         printf 'MCPEVAL=%s\\nMCPEVAL_HOME=%s\\nMCPEVAL_DEPTH=%s\\n' \
         \"$MCPEVAL\" \"$MCPEVAL_HOME\" \"$MCPEVAL_DEPTH\" >'{env}'\n\
         printf 'plugin out\\n'\n\
         printf 'plugin err\\n' >&2\n\
         exit 7",
        args = args.display(),
        env = env.display()
    );
    script(dir, "mcpeval-hello", &body, 0o755);
    (args, env)
}

fn env_lines(file: &Path) -> Vec<String> {
    fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn dispatch_hands_over_arguments_streams_and_status() {
    let store = Store::new();
    let dir = plugin_dir(&store, "bin");
    let (args_file, env_file) = recorder(&store, &dir);
    let args: Vec<OsString> = [
        OsStr::new("a"),
        OsStr::new("b c"),
        OsStr::new("--"),
        OsStr::new("--help"),
        OsStr::new("x"),
        OsStr::new(""),
        OsStr::from_bytes(b"\xff\xfe-not-utf8"),
    ]
    .iter()
    .map(|a| a.to_os_string())
    .collect();
    let mut cmd = front(&store, &[&dir]);
    cmd.arg("hello").args(&args);
    let out = output(cmd);

    assert_eq!(out.status.code(), Some(7));
    // Exactly the plugin's bytes: the front writes nothing before exec.
    assert_eq!(out.stdout, b"plugin out\n");
    assert_eq!(out.stderr, b"plugin err\n");
    let mut expected = Vec::new();
    for a in &args {
        expected.extend_from_slice(a.as_bytes());
        expected.push(0);
    }
    assert_eq!(fs::read(&args_file).unwrap(), expected);
    let front_path = canonical(bin("mcpeval"));
    assert_eq!(
        env_lines(&env_file),
        [
            format!("MCPEVAL={}", front_path.display()),
            format!("MCPEVAL_HOME={}", store.home().display()),
            "MCPEVAL_DEPTH=1".to_owned(),
        ]
    );
}

#[test]
fn without_home_the_command_still_learns_the_default_store() {
    let store = Store::new();
    let dir = plugin_dir(&store, "bin");
    let (_, env_file) = recorder(&store, &dir);
    let mut cmd = front(&store, &[&dir]);
    cmd.env_remove("MCPEVAL_HOME").arg("hello");
    assert_eq!(output(cmd).status.code(), Some(7));
    assert_eq!(
        env_lines(&env_file)[1],
        format!(
            "MCPEVAL_HOME={}",
            store.scratch().join(".local/share/mcpeval").display()
        )
    );
}

#[test]
fn home_flag_sets_the_store_for_the_command() {
    let store = Store::new();
    let dir = plugin_dir(&store, "bin");
    let (_, env_file) = recorder(&store, &dir);

    let mut cmd = front(&store, &[&dir]);
    cmd.args(["--home", "/elsewhere/store", "hello"]);
    assert_eq!(output(cmd).status.code(), Some(7));
    assert_eq!(env_lines(&env_file)[1], "MCPEVAL_HOME=/elsewhere/store");

    // A relative directory is made absolute against the caller's directory.
    let mut cmd = front(&store, &[&dir]);
    cmd.args(["--home=rel", "hello"])
        .current_dir(store.scratch());
    assert_eq!(output(cmd).status.code(), Some(7));
    assert_eq!(
        env_lines(&env_file)[1],
        format!("MCPEVAL_HOME={}", store.scratch().join("rel").display())
    );
}

#[test]
fn a_signal_ends_the_front_as_it_ends_the_command() {
    let store = Store::new();
    let dir = plugin_dir(&store, "bin");
    script(&dir, "mcpeval-die", "kill -TERM $$", 0o755);
    let mut cmd = front(&store, &[&dir]);
    cmd.arg("die");
    let out = output(cmd);
    assert_eq!(out.status.signal(), Some(libc::SIGTERM));
    assert_eq!(out.status.code(), None);
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn the_command_starts_with_sigpipe_at_its_default() {
    // Rust ignores SIGPIPE; a command run through the front must not
    // inherit that, or `mcpeval x | head` would leave it writing errors.
    let store = Store::new();
    let dir = plugin_dir(&store, "bin");
    script(&dir, "mcpeval-endless", "exec /usr/bin/yes", 0o755);
    let mut cmd = front(&store, &[&dir]);
    cmd.arg("endless")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 2];
    stdout.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"y\n");
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_typo_gets_a_suggestion_and_status_2() {
    let store = Store::new();
    let mut cmd = front(&store, &[]);
    cmd.arg("captuer");
    assert(cmd)
        .code(2)
        .stdout("")
        .stderr("mcpeval: error: no such command 'captuer'\n  hint: did you mean 'capture'?\n");

    // Third-party names are candidates too.
    let dir = plugin_dir(&store, "bin");
    script(&dir, "mcpeval-hello", "exit 0", 0o755);
    let mut cmd = front(&store, &[&dir]);
    cmd.arg("hellow");
    assert(cmd)
        .code(2)
        .stderr("mcpeval: error: no such command 'hellow'\n  hint: did you mean 'hello'?\n");
}

#[test]
fn names_that_are_not_command_names_are_refused() {
    let store = Store::new();
    let dir = plugin_dir(&store, "bin");
    let marker = store.scratch().join("ran");
    tripwire(&dir, "mcpeval-Foo", &marker);
    for name in ["../x", "Foo", "", "a/b"] {
        let mut cmd = front(&store, &[&dir]);
        cmd.arg(name);
        assert(cmd).code(2).stdout("").stderr(format!(
            "mcpeval: error: '{name}' is not a command name: names are lowercase letters, \
             digits and '-', starting with a letter or digit (like 'export-issues')\n"
        ));
    }
    assert!(!marker.exists());
}

#[test]
fn a_file_without_exec_bit_is_status_126_unless_a_later_one_runs() {
    let store = Store::new();
    let first = plugin_dir(&store, "first");
    let second = plugin_dir(&store, "second");
    let noexec = script(&first, "mcpeval-noexec", "exit 0", 0o644);

    let mut cmd = front(&store, &[&first]);
    cmd.arg("noexec");
    assert(cmd).code(126).stdout("").stderr(format!(
        "mcpeval: error: cannot run {p}: it is not executable\n  \
         hint: make it executable (chmod +x {p}) or remove it\n",
        p = noexec.display()
    ));

    // As in a shell, an executable copy later on PATH is the one that runs.
    script(&second, "mcpeval-noexec", "exit 3", 0o755);
    let mut cmd = front(&store, &[&first, &second]);
    cmd.arg("noexec");
    assert(cmd).code(3);
}

#[test]
fn a_missing_interpreter_is_status_127() {
    let store = Store::new();
    let dir = plugin_dir(&store, "bin");
    let path = dir.join("mcpeval-broken");
    crate::support::write_executable(&path, "#!/nonexistent/sh\nexit 0\n", 0o755);
    let mut cmd = front(&store, &[&dir]);
    cmd.arg("broken");
    assert(cmd).code(127).stdout("").stderr(format!(
        "mcpeval: error: cannot run {}: No such file or directory (os error 2)\n  \
         hint: if it is a script, check that the interpreter on its #! line is installed\n",
        path.display()
    ));
}

#[test]
fn a_link_back_to_the_front_is_refused_not_looped() {
    let store = Store::new();
    let dir = plugin_dir(&store, "bin");
    let link = dir.join("mcpeval-loop");
    symlink(bin("mcpeval"), &link).unwrap();
    let mut cmd = front(&store, &[&dir]);
    cmd.arg("loop");
    assert_within(cmd, Duration::from_secs(10))
        .code(126)
        .stderr(format!(
            "mcpeval: error: refusing to run {link}: it is this mcpeval ({front}), which would \
             only run itself again\n  hint: remove {link} or make it the real command\n",
            link = link.display(),
            front = canonical(bin("mcpeval")).display()
        ));
}

#[test]
fn a_wrapper_that_calls_back_in_a_loop_is_stopped() {
    let store = Store::new();
    let dir = plugin_dir(&store, "bin");
    let again = script(
        &dir,
        "mcpeval-again",
        "exec \"$MCPEVAL\" again \"$@\"",
        0o755,
    );
    let mut cmd = front(&store, &[&dir]);
    cmd.arg("again");
    assert_within(cmd, Duration::from_secs(10))
        .code(126)
        .stderr(format!(
            "mcpeval: error: refusing to run {p}: 32 nested mcpeval commands already run \
             (MCPEVAL_DEPTH=32), so a command is probably calling itself in a loop\n  \
             hint: check what {p} runs through $MCPEVAL\n",
            p = again.display()
        ));
}

#[test]
fn help_name_runs_the_command_with_help() {
    let store = Store::new();
    let mut cmd = front(&store, &[]);
    cmd.args(["help", "capture"]);
    let out = output(cmd);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Byte for byte what mcpeval-capture --help prints by itself, but for
    // the usage lines, which name the command as the user typed it.
    let mut direct = store.cmd("mcpeval-capture");
    direct.arg("--help");
    let direct = text(&output(direct).stdout);
    let own = "Usage: mcpeval-capture [OPTIONS] [--] <CMD> [ARGS]...\n       \
               mcpeval-capture [OPTIONS] --listen";
    let typed = "Usage: mcpeval capture [OPTIONS] [--] <CMD> [ARGS]...\n       \
                 mcpeval capture [OPTIONS] --listen";
    assert!(direct.contains(own), "{direct}");
    assert_eq!(text(&out.stdout), direct.replacen(own, typed, 1));

    // Exactly one argument, `--help`, reaches the command.
    let dir = plugin_dir(&store, "bin");
    script(&dir, "mcpeval-hello", "printf '%s|' \"$@\"", 0o755);
    let mut cmd = front(&store, &[&dir]);
    cmd.args(["help", "hello"]);
    let out = output(cmd);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "--help|");
    assert_eq!(text(&out.stderr), "");
}

#[test]
fn a_commands_usage_error_is_its_own_error_and_names_it_as_typed() {
    let store = Store::new();
    let usage = |usage: &str| {
        format!(
            "mcpeval-findings: error: unexpected argument '--bogus' found\n\n\
             Usage: {usage} [OPTIONS]\n\nFor more information, try '--help'.\n"
        )
    };
    let mut cmd = front(&store, &[]);
    cmd.args(["findings", "--bogus"]);
    assert(cmd)
        .code(2)
        .stdout("")
        .stderr(usage("mcpeval findings"));
    store
        .bin("mcpeval-findings")
        .arg("--bogus")
        .assert()
        .code(2)
        .stdout("")
        .stderr(usage("mcpeval-findings"));

    // Every command, by its own name and through the front.
    for name in crate::docs::binaries() {
        let Some(sub) = name.strip_prefix("mcpeval-") else {
            continue;
        };
        let error = format!("{name}: error: unexpected argument '--bogus' found\n");
        let direct = output({
            let mut cmd = store.cmd(&name);
            cmd.arg("--bogus");
            cmd
        });
        let fronted = output({
            let mut cmd = front(&store, &[]);
            cmd.args([sub, "--bogus"]);
            cmd
        });
        for (out, typed) in [(direct, name.clone()), (fronted, format!("mcpeval {sub}"))] {
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{typed}: {stderr}");
            assert!(stderr.starts_with(&error), "{typed}: {stderr}");
            assert!(
                stderr.contains(&format!("\nUsage: {typed} [OPTIONS]")),
                "{typed}: {stderr}"
            );
        }
        // The man page is the program's own, whoever runs the generator.
        let mut man = store.cmd(&name);
        man.args(["--generate", "man"])
            .env("MCPEVAL", bin("mcpeval"));
        let man = output(man);
        let checked_in = fs::read(crate::support::repo().join(format!("man/{name}.1"))).unwrap();
        assert!(man.stdout == checked_in, "{name}: man page differs");
    }
}

#[test]
fn front_help_and_version() {
    let store = Store::new();
    for flag in ["--help", "-h"] {
        let mut cmd = front(&store, &[]);
        cmd.arg(flag);
        let out = output(cmd);
        assert_eq!(out.status.code(), Some(0), "{flag}");
        assert_eq!(text(&out.stderr), "");
        let help = text(&out.stdout);
        assert!(
            help.contains("Usage: mcpeval [--home DIR] NAME [ARGS]..."),
            "{help}"
        );
        assert!(help.contains("\nPlugins:\n"), "{help}");
        assert!(
            help.contains("put an executable mcpeval-NAME on PATH"),
            "{help}"
        );
    }
    let mut cmd = front(&store, &[]);
    cmd.arg("--version");
    let out = output(cmd);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stdout),
        format!("mcpeval {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn front_flag_mistakes_are_status_2() {
    let store = Store::new();
    let cases: &[(&[&str], &str)] = &[
        (
            &[],
            "mcpeval: error: no command given\n  hint: run 'mcpeval --list' to see the commands, or 'mcpeval --help'\n",
        ),
        (
            &["--format", "json", "capture"],
            "mcpeval: error: --format applies to --list only\n  hint: to give --format to a command, put it after the command's name\n",
        ),
        (
            &["--list", "--format", "yaml"],
            "mcpeval: error: unknown --format 'yaml': use text or json\n",
        ),
    ];
    for (args, stderr) in cases {
        let mut cmd = front(&store, &[]);
        cmd.args(*args);
        assert(cmd).code(2).stdout("").stderr(*stderr);
    }
}

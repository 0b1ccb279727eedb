//! Man pages and completions are generated from the clap definitions and
//! checked in; this fails when a flag changed without `scripts/gen-docs`.

use crate::support::{Store, bin, repo};

/// Every binary of the suite, the front first, by its program name.
pub(crate) fn binaries() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("bins"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("mcpeval"))
        .collect();
    names.sort();
    names
}

fn generated(name: &str, kind: &str) -> Vec<u8> {
    let out = assert_cmd::Command::new(bin(name))
        .args(["--generate", kind])
        .assert()
        .success();
    out.get_output().stdout.clone()
}

#[test]
fn man_pages_and_completions_are_current() {
    let mut stale = Vec::new();
    for name in binaries() {
        let files = [
            ("man", format!("man/{name}.1")),
            ("complete-bash", format!("completions/bash/{name}")),
            ("complete-zsh", format!("completions/zsh/_{name}")),
            ("complete-fish", format!("completions/fish/{name}.fish")),
        ];
        for (kind, rel) in files {
            let on_disk = std::fs::read(repo().join(&rel)).unwrap_or_default();
            if on_disk != generated(&name, kind) {
                stale.push(rel);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated files (run scripts/gen-docs): {stale:?}"
    );
}

#[test]
fn every_binary_answers_help() {
    for name in binaries() {
        assert_cmd::Command::new(bin(&name))
            .arg("--help")
            .assert()
            .success()
            .stdout(predicates::str::contains("Usage"));
    }
}

/// Rust files under `dir`, recursively.
fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The bad-input table lives in its own page, which the README links.
#[test]
fn every_bad_input_row_names_a_test_that_exists() {
    assert!(
        doc("README.md").contains("](docs/bad-input.md)"),
        "the README links docs/bad-input.md"
    );
    let section = doc_section("docs/bad-input.md", "# When input is bad");
    let mut files = Vec::new();
    for dir in ["tests/suite", "tests/kit", "bins", "shared"] {
        sources(&repo().join(dir), &mut files);
    }
    let rows: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| input") && !l.starts_with("| ---"))
        .collect();
    assert!(rows.len() >= 30, "{} rows", rows.len());
    for row in rows {
        let test = row
            .trim_end_matches(" |")
            .rsplit(" | ")
            .next()
            .and_then(|cell| cell.strip_prefix('`')?.strip_suffix('`'))
            .unwrap_or_else(|| panic!("no test named in: {row}"));
        let (file, name) = (
            test.split("::").next().unwrap(),
            test.rsplit("::").next().unwrap(),
        );
        let found = files.iter().any(|path| {
            path.file_stem().is_some_and(|s| s == file)
                && std::fs::read_to_string(path)
                    .unwrap()
                    .contains(&format!("fn {name}("))
        });
        assert!(
            found,
            "docs/bad-input.md names {test}, which no {file}.rs defines"
        );
    }
}

/// The reader of `| head` may go away before a binary writes a byte: that
/// closed pipe is a quiet success (status 0, nothing on stderr) for every
/// binary, decided once where each one's main ends.
#[test]
fn generating_into_a_closed_pipe_is_a_quiet_success() {
    for name in binaries() {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(bin(&name))
            .args(["--generate", "man"])
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        assert_eq!(stderr, "", "{name}");
    }
}

/// The front's help is the first thing a user reads: a change to it is a
/// reviewed snapshot diff.
#[test]
fn the_front_help_reads_as_reviewed() {
    let store = Store::new();
    let out = store
        .bin("mcpeval")
        .arg("--help")
        .assert()
        .code(0)
        .stderr("");
    let help = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    insta::assert_snapshot!("mcpeval_help", help);
}

/// A file of the repository, by its path from the root.
fn doc(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Whether `line` opens or closes a fenced code block.
fn is_fence(line: &str) -> bool {
    line.starts_with("```")
}

/// The level of the heading `line` (outside a fence), if it is one.
fn heading_level(line: &str) -> Option<usize> {
    let level = line.len() - line.trim_start_matches('#').len();
    (level > 0 && line[level..].starts_with(' ')).then_some(level)
}

/// The section of the markdown file `rel` under the line `heading` (its
/// `#`s included), up to the next heading of the same level or above;
/// `#` lines inside fenced blocks are not headings.
fn doc_section(rel: &str, heading: &str) -> String {
    let text = doc(rel);
    let level = heading_level(heading).expect("a heading");
    let mut lines = text.lines();
    assert!(
        lines.any(|l| l == heading),
        "{rel} has a section {heading:?}"
    );
    let mut section = String::new();
    let mut fenced = false;
    for line in lines {
        fenced ^= is_fence(line);
        if !fenced && heading_level(line).is_some_and(|l| l <= level) {
            break;
        }
        section.push_str(line);
        section.push('\n');
    }
    section
}

/// The fenced blocks of the section `heading` of the markdown file `rel`,
/// in order, as (info string, body).
fn blocks(rel: &str, heading: &str) -> Vec<(String, String)> {
    let section = doc_section(rel, heading);
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in section.lines() {
        match (line.strip_prefix("```"), open.take()) {
            (Some(_), Some(block)) => blocks.push(block),
            (Some(info), None) => open = Some((info.to_owned(), String::new())),
            (None, Some((info, mut body))) => {
                body.push_str(line);
                body.push('\n');
                open = Some((info, body));
            }
            (None, None) => {}
        }
    }
    blocks
}

/// `text` with finding ids and run ids made the same in every store.
fn same_ids(text: &str) -> String {
    let store = Store::new();
    let text = store.redact_ids(text);
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("run=") {
        out.push_str(&rest[..at]);
        out.push_str("run=[RUN]");
        rest = rest[at + 4..].trim_start_matches(|c: char| c.is_ascii_hexdigit() || c == '-');
    }
    out.push_str(rest);
    out
}

/// The README's verify example: its script and the output it shows.
fn verify_example() -> (String, String) {
    let blocks = blocks("README.md", "## Verify a fix");
    let at = blocks
        .iter()
        .position(|(info, _)| info == "sh")
        .expect("a sh block");
    (blocks[at].1.clone(), blocks[at + 1].1.clone())
}

/// Runs `args` of git in `dir`, which must succeed; its stdout.
fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .env_clear()
        .env("PATH", crate::support::SYSTEM_PATH)
        .env("HOME", dir)
        .args([
            "-c",
            "user.name=docs",
            "-c",
            "user.email=docs@example.invalid",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "git {args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// A reader pastes the verify example into their own shell, so it keeps
/// to itself: one subshell, which makes a temporary directory, removes it
/// when it exits, and works only inside it.
#[test]
fn the_readme_verify_example_is_a_subshell_in_a_directory_it_removes() {
    let (script, _) = verify_example();
    let lines: Vec<&str> = script.lines().collect();
    assert_eq!(lines.first(), Some(&"("), "{script}");
    assert_eq!(lines.last(), Some(&")"), "{script}");
    let inner = &lines[1..lines.len() - 1];
    assert!(
        inner.iter().all(|l| l.is_empty() || l.starts_with("  ")),
        "every line between the parentheses is indented into the subshell:\n{script}"
    );
    let dir = inner
        .iter()
        .find_map(|l| l.trim().strip_suffix("=$(mktemp -d)"))
        .unwrap_or_else(|| panic!("a variable set to $(mktemp -d):\n{script}"));
    let trap = format!("trap 'rm -rf \"${dir}\"' EXIT");
    let cd = format!("cd \"${dir}\"");
    let at = |want: &str| inner.iter().position(|l| l.trim() == want);
    let (made, trapped, entered) = (
        at(&format!("{dir}=$(mktemp -d)")).unwrap(),
        at(&trap).unwrap_or_else(|| panic!("{trap}:\n{script}")),
        at(&cd).unwrap_or_else(|| panic!("{cd}:\n{script}")),
    );
    assert!(made < trapped && trapped < entered, "{script}");
    // Nothing before the cd writes a file: no redirection, no store.
    for line in &inner[..entered] {
        assert!(!line.contains('>'), "{line}");
    }
}

/// The verify example runs as printed on a fresh clone and leaves
/// nothing behind. In a git repository holding only the bundled corpus,
/// with the suite on PATH and a cleared environment, it prints the red
/// line, the hint and the green lines the README shows; afterwards the
/// clone's `git status` is as before, the temporary directory is gone, and
/// the shell that ran it is still in the clone with no MCPEVAL_* variable.
#[test]
fn the_readme_verify_example_runs_as_printed_and_leaves_nothing_behind() {
    let (script, shown) = verify_example();
    let store = Store::new();
    let clone = store.scratch().join("clone");
    let tmp = store.scratch().join("tmp");
    std::fs::create_dir_all(clone.join("corpus")).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let copied = std::process::Command::new("cp")
        .arg("-R")
        .arg(repo().join("corpus/demo"))
        .arg(clone.join("corpus/demo"))
        .status()
        .unwrap();
    assert!(copied.success());
    git(&clone, &["init", "-q"]);
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-q", "-m", "the bundled corpus"]);
    let status = [
        "status",
        "--porcelain",
        "--untracked-files=all",
        "--ignored",
    ];
    let before = git(&clone, &status);
    assert_eq!(before, "");

    // The shell the example is pasted into, which lists its environment
    // once the example is done.
    let env_after = store.scratch().join("env-after");
    let shell = format!(
        "{script}status=$?\nenv >'{}'\nexit $status\n",
        env_after.display()
    );
    let mut cmd = std::process::Command::new("bash");
    store.env(&mut cmd);
    let path = format!(
        "{}:{}",
        crate::support::bin_dir().display(),
        crate::support::SYSTEM_PATH
    );
    let out = cmd
        .env_remove("MCPEVAL_HOME")
        .env("PATH", path)
        .env("TMPDIR", &tmp)
        .args(["-c", &shell])
        .current_dir(&clone)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let shown = shown.trim_end();
    let printed: Vec<&str> = stdout.lines().collect();
    let last = printed[printed.len().saturating_sub(shown.lines().count())..].join("\n");
    assert_eq!(same_ids(&last), same_ids(shown), "{stderr}");

    assert_eq!(git(&clone, &status), before, "the clone is as it was");
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert!(!store.home().exists());
    let env = std::fs::read_to_string(&env_after).unwrap();
    let leaked: Vec<&str> = env.lines().filter(|l| l.starts_with("MCPEVAL")).collect();
    assert!(leaked.is_empty(), "leaked into the shell: {leaked:?}");
    let clone = clone.canonicalize().unwrap();
    assert!(
        env.lines().any(|l| l == format!("PWD={}", clone.display())),
        "the shell is still in the clone:\n{env}"
    );
}

/// The README is the first hour: what mcpeval is, how to set it up and
/// run it, and links to the rest. Reference belongs in docs/.
#[test]
fn the_readme_fits_in_300_lines() {
    let lines = doc("README.md").lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; move reference into docs/"
    );
}

/// The command table names every binary under bins/: a command a reader
/// cannot find in it does not exist for them.
#[test]
fn the_readme_command_table_names_every_binary() {
    let section = doc_section("README.md", "## Commands");
    let rows: Vec<&str> = section
        .lines()
        .filter(|l| l.starts_with("| `mcpeval"))
        .collect();
    for name in binaries() {
        let heads = match name.strip_prefix("mcpeval-") {
            Some(sub) => vec![format!("| `mcpeval {sub}`"), format!("| `mcpeval {sub} ")],
            None => vec!["| `mcpeval --list`".to_owned()],
        };
        assert!(
            rows.iter()
                .any(|row| heads.iter().any(|head| row.starts_with(head.as_str()))),
            "the README's command table has no row for {name}"
        );
    }
}

/// The markdown a reader meets: the README and every page under docs/,
/// as paths from the repository root.
fn markdown_pages() -> Vec<String> {
    let mut pages = vec!["README.md".to_owned()];
    for entry in std::fs::read_dir(repo().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            pages.push(format!("docs/{name}"));
        }
    }
    pages.sort();
    pages
}

/// `text` without its code spans: a run of backticks up to the next run
/// of the same length is code, not markup.
fn without_code_spans(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('`') {
        out.push_str(&rest[..at]);
        let run = rest[at..].len() - rest[at..].trim_start_matches('`').len();
        let after = &rest[at + run..];
        let mut closing = None;
        let mut from = 0;
        while let Some(next) = after[from..].find('`') {
            let start = from + next;
            let len = after[start..].len() - after[start..].trim_start_matches('`').len();
            if len == run {
                closing = Some(start + len);
                break;
            }
            from = start + len;
        }
        match closing {
            Some(end) => rest = &after[end..],
            None => {
                out.push_str(&rest[at..at + run]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The paragraphs of the markdown `text` outside fenced blocks, with
/// their code spans taken out: the text where a link can be.
fn prose(text: &str) -> Vec<String> {
    let mut paragraphs = Vec::new();
    let mut paragraph = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if is_fence(line) {
            fenced = !fenced;
        } else if !fenced && !line.trim().is_empty() {
            paragraph.push_str(line);
            paragraph.push('\n');
            continue;
        }
        if !paragraph.is_empty() {
            paragraphs.push(without_code_spans(&std::mem::take(&mut paragraph)));
        }
    }
    paragraphs.push(without_code_spans(&paragraph));
    paragraphs
}

/// The link targets in the markdown `text`: `[text](target)` and
/// `![alt](target)`, outside code.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for paragraph in prose(text) {
        let mut rest = paragraph.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            targets.push(rest[..end].trim().to_owned());
            rest = &rest[end..];
        }
    }
    targets
}

/// The anchors GitHub gives the headings of the markdown `text`: lower
/// case, spaces as hyphens, other punctuation dropped.
fn anchors(text: &str) -> Vec<String> {
    let mut anchors = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        fenced ^= is_fence(line);
        let Some(level) = heading_level(line).filter(|_| !fenced) else {
            continue;
        };
        let slug: String = line[level..]
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        anchors.push(slug);
    }
    anchors
}

/// Moving text into docs/ must not leave a reader at a dead link: every
/// relative link of the README and of docs/ names a file of the
/// repository, and an anchor in it names a heading of that file.
#[test]
fn every_relative_link_in_the_docs_points_at_a_file_that_exists() {
    let root = repo().canonicalize().unwrap();
    let mut checked = 0;
    for page in markdown_pages() {
        let here = std::path::Path::new(&page).parent().unwrap();
        for target in link_targets(&doc(&page)) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                repo().join(&page)
            } else {
                repo().join(here).join(path)
            };
            let file = file
                .canonicalize()
                .unwrap_or_else(|_| panic!("{page} links {target}, which does not exist"));
            assert!(
                file.starts_with(&root),
                "{page} links {target}, outside the repository"
            );
            if !anchor.is_empty() {
                let text = std::fs::read_to_string(&file).unwrap();
                assert!(
                    anchors(&text).iter().any(|a| a == anchor),
                    "{page} links {target}, and no heading there makes #{anchor}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} relative links found");
}

/// Every page under docs/ can be reached from the README.
#[test]
fn every_docs_page_is_linked_from_the_readme() {
    let targets = link_targets(&doc("README.md"));
    for page in markdown_pages().into_iter().filter(|p| p != "README.md") {
        assert!(
            targets
                .iter()
                .any(|t| t.split('#').next() == Some(page.as_str())),
            "the README links no {page}"
        );
    }
}

/// The demo, with its output read by a program rather than a terminal,
/// writes no colour escape, marks what the servers wrote, ends with the
/// finding closed and leaves no temporary store behind.
#[test]
fn the_demo_off_a_terminal_has_no_colour_and_leaves_no_store() {
    crate::support::Deps::python();
    let store = Store::new();
    let tmp = store.scratch().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = std::process::Command::new(repo().join("scripts/demo"));
    store.env(&mut cmd);
    let path = format!(
        "{}:{}",
        crate::support::bin_dir().display(),
        crate::support::SYSTEM_PATH
    );
    let out = cmd
        .env_remove("NO_COLOR")
        .env_remove("MCPEVAL_HOME")
        .env("PATH", path)
        .env("TMPDIR", &tmp)
        .arg("--no-build")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!out.stdout.contains(&0x1b) && !out.stderr.contains(&0x1b));
    // Red on the bug, then three greens on the same command: witnessed.
    assert!(
        stdout.contains(r#""state":"closed","streak":3,"witnessed":true"#),
        "{stdout}"
    );
    assert!(stderr.contains("\nserver: "), "{stderr}");
    let records = stdout.lines().filter(|l| l.contains("mcpeval.call/1"));
    assert_eq!(records.count(), 2, "{stdout}");
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// What bash offers for the words of `line` (the last one being
/// completed), with `path` as PATH, after sourcing the front's completion.
fn bash_completes(line: &[&str], path: &str) -> Vec<String> {
    let script = r#"source completions/bash/mcpeval
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _mcpeval
printf '%s\n' "${COMPREPLY[@]}""#;
    let out = std::process::Command::new("bash")
        .env_clear()
        .env("PATH", path)
        .current_dir(repo())
        .args(["-c", script, "bash"])
        .args(line)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.is_empty(), "{stderr}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `mcpeval <TAB>` offers the built-in commands and the plugins on PATH
/// (found when completing), and after a command's name its own flags and
/// values, by that command's generated completion; the zsh and fish
/// scripts at least parse, where those shells are installed.
#[test]
fn the_front_completes_commands_plugins_and_their_flags() {
    let store = Store::new();
    let plugins = store.scratch().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let foo = plugins.join("mcpeval-foo");
    std::fs::write(&foo, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&foo, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // Not executable, or not a valid name: not a command.
    std::fs::write(plugins.join("mcpeval-bar"), "#!/bin/sh\n").unwrap();
    let path = format!("{}:{}", plugins.display(), crate::support::SYSTEM_PATH);

    let names = bash_completes(&["mcpeval", ""], &path);
    for name in ["findings", "verify", "capture", "help", "foo"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    assert!(!names.iter().any(|n| n == "bar"), "{names:?}");
    assert_eq!(bash_completes(&["mcpeval", "fo"], &path), ["foo"]);
    assert_eq!(
        bash_completes(&["mcpeval", "--home", "/tmp", "fin"], &path),
        ["findings"]
    );
    let flags = bash_completes(&["mcpeval", "findings", "--"], &path);
    assert!(flags.iter().any(|f| f == "--format"), "{flags:?}");
    assert!(flags.iter().any(|f| f == "--state"), "{flags:?}");
    assert_eq!(
        bash_completes(&["mcpeval", "findings", "--format", "j"], &path),
        ["json"]
    );
    let verify = bash_completes(&["mcpeval", "--home", "/tmp", "verify", "--fin"], &path);
    assert_eq!(verify, ["--finding"]);
    assert_eq!(
        bash_completes(&["mcpeval", "--"], &path).first().unwrap(),
        "--home"
    );

    // A typed word that is not a command name never picks a file to
    // load: beside a copy of the script, `x/../evil` would name `evil`.
    let copy = store.scratch().join("completions");
    std::fs::create_dir_all(copy.join("mcpeval-x")).unwrap();
    std::fs::copy(
        repo().join("completions/bash/mcpeval"),
        copy.join("mcpeval"),
    )
    .unwrap();
    std::fs::write(copy.join("evil"), "echo sourced >&2\n").unwrap();
    let out = std::process::Command::new("bash")
        .env_clear()
        .env("PATH", &path)
        .current_dir(store.scratch())
        .args([
            "-c",
            "source completions/mcpeval; COMP_WORDS=(mcpeval x/../evil --); COMP_CWORD=2; _mcpeval",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");

    for (shell, file) in [
        ("zsh", "completions/zsh/_mcpeval"),
        ("fish", "completions/fish/mcpeval.fish"),
    ] {
        let Ok(out) = std::process::Command::new(shell)
            .args(["-n"])
            .arg(repo().join(file))
            .output()
        else {
            continue; // that shell is not installed here
        };
        assert!(
            out.status.success(),
            "{shell} -n {file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

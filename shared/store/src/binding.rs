//! Credit binding: the fingerprint of everything a probe result depends on.
//!
//! A green run earns credit only for exactly what ran: the case definition
//! and manifest version, the timeout, the referenced sandbox declaration,
//! the target command line, the evaluator's own executable and, on stdio,
//! the bytes of the server executable and of regular files passed as
//! arguments. Those files are pinned (resolved and hashed) before launch
//! and hashed again after the run; a change in between yields no result.
//!
//! What is hashed, precisely:
//! - the executable is found as `execvp` finds it (a name with a `/` is a
//!   path, else the first executable regular file along `PATH`), symlinks
//!   followed; the server is then started from that very path;
//! - a `#!` script is itself the executable file and is hashed; the
//!   interpreter it names is hashed too when it resolves (for
//!   `#!/usr/bin/env NAME`, NAME is looked up along `PATH`, since `env`
//!   itself says nothing about the server);
//! - an argument is a file argument when it names an existing regular file
//!   (relative to the working directory, symlinks followed); `--flag=path`
//!   forms are bound as text only.
//!
//! Over Streamable HTTP the target is the endpoint configuration: the URL
//! exactly as given and each extra header as its lower-cased name and a
//! salted fingerprint of its value, sorted, so the order of `--header`
//! flags and the case of their names do not matter. Nothing behind the
//! endpoint (its software, its data) is bound; no file is pinned.
//!
//! The fingerprint is salted and local: raw arguments, paths, URLs, header
//! values and sandbox prose never leave this module, and it covers observed
//! launch artifacts, not their dependency closure or the environment.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::endpoint::Endpoint;
use crate::hash::{self, Hasher};
use crate::salt::Salt;
use shared::canonical;
use shared::error::{Error, Result};
use shared::id::{DefinitionId, TargetId};
use shared::manifest::{Case, Manifest};

/// `PATH` used when the environment has none (as glibc's `execvp`).
const DEFAULT_PATH: &str = "/bin:/usr/bin";

/// The launch artifacts of a stdio target, pinned before launch.
#[derive(Debug, Clone)]
pub struct Pinned {
    /// `b-` and 16 hex digits.
    pub fingerprint: String,
    /// The case definition alone (see [`DefinitionId`]): what a red run
    /// and a closing streak must share for the closure to be witnessed.
    pub definition: DefinitionId,
    /// The target as written, without the bytes behind it (see
    /// [`TargetId`]): the other thing they must share.
    pub target: TargetId,
    /// The resolved executable to start (not canonicalized, so the server
    /// sees the path it would have seen); `None` when it did not resolve.
    pub program: Option<PathBuf>,
    files: Vec<PinnedFile>,
}

#[derive(Debug, Clone)]
struct PinnedFile {
    /// How the user named it, for the message when it changes.
    label: String,
    path: PathBuf,
    digest: Option<[u8; 32]>,
}

/// A pinned file whose bytes differ after the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// The file as the command line (or script) named it.
    pub file: String,
}

impl Changed {
    /// The status-6 error: no result is produced for this run.
    pub fn into_error(self) -> Error {
        Error::refused(format!(
            "{} changed during the run: its bytes differ from those pinned at launch, so no result was produced",
            self.file
        ))
        .with_hint("run the probe again once the server's files are stable")
    }
}

/// SHA-256 of the running executable: the evaluator fingerprint.
pub fn evaluator() -> Result<[u8; 32]> {
    let exe =
        std::env::current_exe().map_err(|e| Error::io("cannot find the running executable", e))?;
    sha256_file(&exe).map_err(|e| Error::io(format_args!("cannot read {}", exe.display()), e))
}

/// Resolves and hashes the target's files, and computes the fingerprint.
pub fn pin(
    salt: &Salt,
    manifest: &Manifest,
    case: &Case,
    argv: &[OsString],
    evaluator: &[u8; 32],
) -> Result<Pinned> {
    let Some(program_arg) = argv.first() else {
        return Err(Error::usage("missing the server command after --"));
    };
    let path_var = std::env::var_os("PATH");
    let program = resolve(program_arg, path_var.as_deref());
    let mut files = Vec::new();
    let label = program_arg.to_string_lossy().into_owned();

    let executable = match &program {
        None => Value::Null,
        Some(exe) => {
            let exe_file = pin_file(label.clone(), exe);
            let exe_hex = exe_file.digest.map(|d| hash::hex(&d));
            let interpreter = interpreter_of(exe, path_var.as_deref()).map(|(named, path)| {
                pin_file(format!("{named} (the interpreter {label} names)"), &path)
            });
            let interp_hex = interpreter
                .as_ref()
                .map(|f| f.digest.map(|d| hash::hex(&d)));
            files.push(exe_file);
            files.extend(interpreter);
            json!({"sha256": exe_hex, "interpreter": interp_hex})
        }
    };

    let mut arg_files = Vec::new();
    for (i, arg) in argv.iter().enumerate().skip(1) {
        let path = Path::new(arg);
        if fs::metadata(path).is_ok_and(|m| m.is_file()) {
            let file = pin_file(arg.to_string_lossy().into_owned(), path);
            arg_files.push(json!({"arg": i, "sha256": file.digest.map(|d| hash::hex(&d))}));
            files.push(file);
        }
    }

    let (case_value, sandbox) = definition(manifest, case);
    let target = json!({
        "transport": "stdio",
        // Arguments as raw bytes, so no two command lines collide.
        "argv": argv.iter().map(|a| hash::hex(a.as_bytes())).collect::<Vec<_>>(),
    });
    let document = json!({
        "binding": 1,
        "manifest_version": manifest.manifest_version,
        "case": case_value,
        "timeout_ms": case.timeout_ms,
        "sandbox": sandbox,
        "target": target,
        "evaluator": hash::hex(evaluator),
        "executable": executable,
        "files": arg_files,
    });
    Ok(Pinned {
        fingerprint: fingerprint(salt, &document),
        definition: definition_id(salt, &document),
        target: target_id(salt, &target),
        program,
        files,
    })
}

/// Computes the fingerprint of a Streamable HTTP target. Nothing is pinned:
/// what answers at the endpoint is outside the binding.
pub fn pin_endpoint(
    salt: &Salt,
    manifest: &Manifest,
    case: &Case,
    endpoint: &Endpoint,
    evaluator: &[u8; 32],
) -> Pinned {
    let mut headers: Vec<(String, String)> = endpoint
        .headers()
        .iter()
        .map(|(name, value)| {
            let name = name.as_str().to_ascii_lowercase();
            let value = salt.id16(&[b"binding/header", name.as_bytes(), value.as_bytes()]);
            (name, value)
        })
        .collect();
    headers.sort();
    let (case_value, sandbox) = definition(manifest, case);
    let document = json!({
        "binding": 1,
        "manifest_version": manifest.manifest_version,
        "case": case_value,
        "timeout_ms": case.timeout_ms,
        "sandbox": sandbox,
        "target": {
            "transport": "http",
            "url": endpoint.url_text(),
            "headers": headers,
        },
        "evaluator": hash::hex(evaluator),
    });
    // The endpoint with the headers sent to it: a red run made with
    // another credential (one the server refuses with an error) must not
    // witness a streak made with the right one.
    let target = document["target"].clone();
    Pinned {
        fingerprint: fingerprint(salt, &document),
        definition: definition_id(salt, &document),
        target: target_id(salt, &target),
        program: None,
        files: Vec::new(),
    }
}

/// The case (canonical, defaults filled in) and its sandbox declaration.
fn definition(manifest: &Manifest, case: &Case) -> (Value, Option<Value>) {
    let sandbox = case.sandbox.as_ref().map(|name| {
        json!({"name": name,
               "declaration": manifest.sandboxes.get(name).map(|s| s.declaration.as_str())})
    });
    let case_value: Value = serde_json::from_str(&case.canonical()).expect("canonical JSON parses");
    (case_value, sandbox)
}

/// The fingerprint of the case definition in a binding `document`: the
/// case, its manifest version, timeout and sandbox declaration.
fn definition_id(salt: &Salt, document: &Value) -> DefinitionId {
    let definition = json!({
        "manifest_version": document["manifest_version"],
        "case": document["case"],
        "timeout_ms": document["timeout_ms"],
        "sandbox": document["sandbox"],
    });
    let hex = salt.id16(&[b"definition/1", &canonical::to_vec(&definition)]);
    DefinitionId::parse(&format!("case-{hex}")).expect("16 hex digits")
}

/// The fingerprint of a target as written (a command line, a URL).
fn target_id(salt: &Salt, target: &Value) -> TargetId {
    let hex = salt.id16(&[b"target/1", &canonical::to_vec(target)]);
    TargetId::parse(&format!("target-{hex}")).expect("16 hex digits")
}

fn fingerprint(salt: &Salt, document: &Value) -> String {
    format!(
        "b-{}",
        salt.id16(&[b"binding/1", &canonical::to_vec(document)])
    )
}

impl Pinned {
    /// Hashes every pinned file again; the first that changed is reported.
    pub fn recheck(&self) -> Result<(), Changed> {
        for file in &self.files {
            let now = sha256_file(&file.path).ok();
            if now != file.digest {
                return Err(Changed {
                    file: file.label.clone(),
                });
            }
        }
        Ok(())
    }
}

fn pin_file(label: String, path: &Path) -> PinnedFile {
    // Follow symlinks once, now: a link re-pointed later is a change.
    let path = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let digest = sha256_file(&path).ok();
    PinnedFile {
        label,
        path,
        digest,
    }
}

/// Finds `program` as `execvp` would: a name containing `/` is a path;
/// otherwise the first executable regular file along `path_var`.
pub fn resolve(program: &OsStr, path_var: Option<&OsStr>) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    if program.as_bytes().contains(&b'/') {
        let path = PathBuf::from(program);
        return is_executable_file(&path).then_some(path);
    }
    let search = path_var.unwrap_or(OsStr::new(DEFAULT_PATH));
    std::env::split_paths(search)
        .map(|dir| {
            // An empty PATH entry means the working directory.
            if dir.as_os_str().is_empty() {
                PathBuf::from(".").join(program)
            } else {
                dir.join(program)
            }
        })
        .find(|candidate| is_executable_file(candidate))
}

fn is_executable_file(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The interpreter a `#!` script names, as written and as resolved.
fn interpreter_of(exe: &Path, path_var: Option<&OsStr>) -> Option<(String, PathBuf)> {
    let mut head = [0u8; 256];
    let n = read_prefix(exe, &mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let interpreter = words.next()?;
    if Path::new(interpreter).file_name() == Some(OsStr::new("env")) {
        // `env [-S] [-i] [NAME=value …] program …`: the program is the
        // first word that is neither an option nor an assignment.
        let named = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
        let path = resolve(OsStr::new(named), path_var)?;
        return Some((named.to_owned(), path));
    }
    let path = PathBuf::from(interpreter);
    fs::metadata(&path)
        .is_ok_and(|m| m.is_file())
        .then(|| (interpreter.to_owned(), path))
}

fn read_prefix(path: &Path, buf: &mut [u8]) -> io::Result<usize> {
    let mut file = File::open(path)?;
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

fn sha256_file(path: &Path) -> io::Result<[u8; 32]> {
    use sha2::Digest;
    let mut hasher = Hasher::new();
    let mut file = File::open(path)?;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const EVAL: [u8; 32] = [1; 32];

    fn salt() -> Salt {
        Salt::from_bytes([4; 32])
    }

    fn manifest(text: &str) -> Manifest {
        Manifest::parse(text).unwrap()
    }

    fn base(timeout: u64, declaration: &str, extra_case: bool) -> Manifest {
        let extra = if extra_case {
            r#",{"id":"x","finding":"finding-0123456789abcdef","probe":"degradation","tool":"y"}"#
        } else {
            ""
        };
        manifest(&format!(
            r#"{{"manifest_version":1,"sandboxes":{{"s":{{"declaration":"{declaration}"}}}},
               "cases":[{{"id":"c","finding":"finding-0123456789abcdef","probe":"instruction-fidelity",
               "sandbox":"s","timeout_ms":{timeout},"tool":"t"}}{extra}]}}"#
        ))
    }

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, body).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn fp(m: &Manifest, argv: &[&OsStr]) -> Pinned {
        let argv: Vec<OsString> = argv.iter().map(|a| a.to_os_string()).collect();
        pin(&salt(), m, m.case("c").unwrap(), &argv, &EVAL).unwrap()
    }

    #[test]
    fn what_changes_the_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let server = script(dir.path(), "server.sh", "#!/bin/sh\nexit 0\n");
        let data = dir.path().join("data.txt");
        fs::write(&data, "one").unwrap();
        let argv = [server.as_os_str(), data.as_os_str(), OsStr::new("--flag")];
        let m = base(100, "d", false);
        let first = fp(&m, &argv);
        assert!(shared::probe_result::is_binding(&first.fingerprint));
        // Unrelated cases and reformatting change nothing.
        assert_eq!(
            first.fingerprint,
            fp(&base(100, "d", true), &argv).fingerprint
        );
        // Each bound input does.
        let others = [
            fp(&base(101, "d", false), &argv).fingerprint,
            fp(&base(100, "e", false), &argv).fingerprint,
            fp(&m, &[server.as_os_str(), data.as_os_str()]).fingerprint,
            pin(
                &salt(),
                &m,
                m.case("c").unwrap(),
                &argv.map(|a| a.to_os_string()),
                &[2; 32],
            )
            .unwrap()
            .fingerprint,
            pin(
                &Salt::from_bytes([5; 32]),
                &m,
                m.case("c").unwrap(),
                &argv.map(|a| a.to_os_string()),
                &EVAL,
            )
            .unwrap()
            .fingerprint,
        ];
        for other in &others {
            assert_ne!(&first.fingerprint, other);
        }
        fs::write(&data, "two").unwrap();
        // The bytes behind the command line are the fix: the target and
        // the case stay, the binding moves.
        let fixed = fp(&m, &argv);
        assert_eq!(
            (&fixed.target, &fixed.definition),
            (&first.target, &first.definition)
        );
        assert_ne!(
            fp(&m, &[server.as_os_str(), data.as_os_str()]).target,
            first.target
        );
        assert_ne!(
            fp(&base(101, "d", false), &argv).definition,
            first.definition
        );
        assert_eq!(
            first.recheck(),
            Err(Changed {
                file: data.display().to_string()
            })
        );
        assert_ne!(first.fingerprint, fp(&m, &argv).fingerprint);
        fs::write(&server, "#!/bin/sh\nexit 1\n").unwrap();
        let edited = fp(&m, &argv);
        assert_ne!(first.fingerprint, edited.fingerprint);
        assert_eq!(edited.recheck(), Ok(()));
    }

    #[test]
    fn an_endpoint_binds_its_url_and_headers_not_their_order() {
        let m = base(100, "d", false);
        let case = m.case("c").unwrap();
        let bind = |url: &str, headers: &[&str]| {
            let headers: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
            let endpoint = Endpoint::parse(url, &headers).unwrap();
            pin_endpoint(&salt(), &m, case, &endpoint, &EVAL).fingerprint
        };
        let url = "http://127.0.0.1:3001/mcp";
        let first = bind(url, &["Authorization: Bearer a", "X-Team: blue"]);
        assert!(shared::probe_result::is_binding(&first));
        assert_eq!(
            first,
            bind(url, &["x-team:blue", "AUTHORIZATION:  Bearer a"])
        );
        let others = [
            bind(
                "http://127.0.0.1:3001/mcp/",
                &["Authorization: Bearer a", "X-Team: blue"],
            ),
            bind(url, &["Authorization: Bearer b", "X-Team: blue"]),
            bind(url, &["Authorization: Bearer a"]),
            bind(
                url,
                &["Authorization: Bearer a", "X-Team: blue", "X-Team: red"],
            ),
            bind(url, &["Authorization: Bearer a", "X-Other: blue"]),
        ];
        for other in &others {
            assert_ne!(&first, other);
        }
        let stdio = fp(&m, &[OsStr::new("/bin/true")]).fingerprint;
        assert_ne!(first, stdio);
        // The target is the URL with its headers, in any order: a red run
        // with another credential is another target.
        let target = |headers: &[&str]| {
            let headers: Vec<String> = headers.iter().map(|h| h.to_string()).collect();
            let endpoint = Endpoint::parse(url, &headers).unwrap();
            pin_endpoint(&salt(), &m, case, &endpoint, &EVAL).target
        };
        let ours = target(&["Authorization: Bearer a", "X-Team: blue"]);
        assert_eq!(ours, target(&["x-team:blue", "AUTHORIZATION:  Bearer a"]));
        assert_ne!(
            ours,
            target(&["Authorization: Bearer wrong", "X-Team: blue"])
        );
    }

    #[test]
    fn resolves_like_execvp_and_follows_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        fs::create_dir(&bin).unwrap();
        let real = script(dir.path(), "real.sh", "#!/bin/sh\n");
        symlink(&real, bin.join("srv")).unwrap();
        fs::write(bin.join("plain"), "not executable").unwrap();
        let path = std::env::join_paths([dir.path().join("none"), bin.clone()]).unwrap();
        assert_eq!(
            resolve(OsStr::new("srv"), Some(&path)),
            Some(bin.join("srv"))
        );
        assert_eq!(resolve(OsStr::new("plain"), Some(&path)), None);
        assert_eq!(resolve(OsStr::new("missing"), Some(&path)), None);
        assert_eq!(resolve(real.as_os_str(), None), Some(real.clone()));
        // Re-pointing the link is a change of the executable.
        let pinned = pin_file("srv".into(), &bin.join("srv"));
        assert_eq!(pinned.path, fs::canonicalize(&real).unwrap());
    }

    #[test]
    fn shebang_interpreters() {
        let dir = tempfile::tempdir().unwrap();
        let path = std::env::join_paths([dir.path()]).unwrap();
        let tool = script(dir.path(), "tool", "#!/bin/sh\n");
        let direct = script(dir.path(), "a", &format!("#!{} -x\n", tool.display()));
        assert_eq!(
            interpreter_of(&direct, Some(&path)),
            Some((tool.display().to_string(), tool.clone()))
        );
        let via_env = script(dir.path(), "b", "#!/usr/bin/env -S X=1 tool --flag\n");
        assert_eq!(
            interpreter_of(&via_env, Some(&path)),
            Some(("tool".into(), dir.path().join("tool")))
        );
        let binary = dir.path().join("c");
        fs::write(&binary, [0x7f, b'E', b'L', b'F']).unwrap();
        assert_eq!(interpreter_of(&binary, Some(&path)), None);
        let unknown = script(dir.path(), "d", "#!/usr/bin/env nothing-here\n");
        assert_eq!(interpreter_of(&unknown, Some(&path)), None);
    }
}

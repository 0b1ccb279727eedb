//! The MCP Inspector's command line (`inspector --cli`), a real client that
//! strips the first `--` of the server command and starts the server with
//! a small environment of its own: capture in front of a real server changes
//! nothing it prints, and serve answers it from the store named by `--home`.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::support::{Deps, Store, bin, contains, private_dir, repo, text};

/// `inspector --cli ARGS…` run in the store's scratch directory; asserts
/// success and returns its output.
fn inspector<S: AsRef<OsStr>>(store: &Store, args: &[S]) -> Output {
    let mut cmd = Command::new(Deps::node22());
    store.env(&mut cmd);
    let out = cmd
        .current_dir(store.scratch())
        .arg(Deps::inspector())
        .arg("--cli")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "inspector {:?}: {}{}",
        args.iter().map(|a| a.as_ref()).collect::<Vec<_>>(),
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

/// `args` as owned strings, paths included.
fn argv(args: &[&dyn AsRef<OsStr>]) -> Vec<std::ffi::OsString> {
    args.iter().map(|a| a.as_ref().to_owned()).collect()
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

#[test]
fn capture_in_front_of_a_real_server_changes_nothing_the_inspector_prints() {
    let store = Store::new();
    let everything = Deps::server_everything();
    let front = bin("mcpeval");
    let home = store.home();
    let methods: [&[&str]; 3] = [
        &["--method", "tools/list"],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "echo",
            "--tool-arg",
            "message=Zanzibar-7781",
        ],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "get-sum",
            "--tool-arg",
            "a=4417",
            "b=2",
        ],
    ];
    let mut printed = Vec::new();
    for method in methods {
        let mut direct = argv(&[&everything]);
        direct.extend(method.iter().map(Into::into));
        let before = store.records().len();
        let direct = inspector(&store, &direct);
        assert_eq!(store.records().len(), before);
        // No `--`: the inspector would strip it. The store goes in the
        // arguments: the inspector passes the server no MCPEVAL_HOME.
        let mut captured = argv(&[&front, &"capture", &"--home", &home, &everything]);
        captured.extend(method.iter().map(Into::into));
        let captured = inspector(&store, &captured);
        assert_eq!(
            text(&direct.stdout),
            text(&captured.stdout),
            "capture changed what the inspector printed for {method:?}"
        );
        printed.push(text(&direct.stdout));
    }
    // The same, and not the same nothing: the echo came back.
    assert!(printed[1].contains("Echo: Zanzibar-7781"), "{}", printed[1]);

    let records = store.records();
    let calls: Vec<(&Value, &Value, &Value)> = records
        .iter()
        .map(|r| (&r["tool"], &r["outcome"], &r["args_shape"]))
        .collect();
    assert_eq!(
        calls,
        [
            (&json!("echo"), &json!("ok"), &json!({"message": "string"})),
            (
                &json!("get-sum"),
                &json!("ok"),
                &json!({"a": "integer", "b": "integer"})
            ),
        ],
        "{records:#?}"
    );
    assert!(
        records
            .iter()
            .all(|r| r["server"] == "mcp-servers/everything"
                && r["transport"] == "stdio"
                && r["advertised"] == true)
    );
    let stored = store.all_bytes();
    for raw in ["Zanzibar-7781", "4417", "4419"] {
        assert!(!contains(&stored, raw), "{raw:?} leaked into the store");
    }
}

/// `value` with every number as a float, the one number type of JavaScript.
fn numbers_as_f64(value: &Value) -> Value {
    match value {
        Value::Number(n) => json!(n.as_f64().unwrap()),
        Value::Array(items) => items.iter().map(numbers_as_f64).collect(),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), numbers_as_f64(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The seed corpus indexed and promoted in `store`.
fn seed_store(store: &Store) {
    let dir = store.home().join("journals");
    private_dir(&dir);
    for entry in std::fs::read_dir(repo().join("corpus/seed/journals")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    for stage in ["mcpeval-index", "mcpeval-promote"] {
        store.bin(stage).assert().success();
    }
}

fn findings_json(store: &Store, home: &Path) -> Value {
    let out = store
        .bin("mcpeval-findings")
        .args([OsStr::new("--home"), home.as_os_str()])
        .args(["--format", "json"])
        .assert()
        .success();
    serde_json::from_slice::<Value>(&out.get_output().stdout).unwrap()["findings"].clone()
}

#[test]
fn serve_answers_the_inspector_from_the_store_named_by_home() {
    let store = Store::new();
    seed_store(&store);
    let home = store.home();
    let expected = findings_json(&store, &home);
    assert!(!expected.as_array().unwrap().is_empty());
    let front = bin("mcpeval");
    let serve = argv(&[&front, &"serve", &"--home", &home]);

    let mut list = serve.clone();
    list.extend(["--method".into(), "tools/list".into()]);
    let tools = json_of(&inspector(&store, &list));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, crate::serve::TOOLS);

    let mut call = serve.clone();
    call.extend(
        ["--method", "tools/call", "--tool-name", "list_findings"]
            .iter()
            .map(Into::into),
    );
    let result = json_of(&inspector(&store, &call));
    assert_eq!(result["isError"], false, "{result:#}");
    // The inspector prints JSON as JavaScript parsed it: 11.0 becomes 11.
    assert_eq!(
        numbers_as_f64(&result["structuredContent"]["findings"]),
        numbers_as_f64(&expected)
    );
    let first = expected[0]["id"].as_str().unwrap();
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(first),
        "{result:#}"
    );
}

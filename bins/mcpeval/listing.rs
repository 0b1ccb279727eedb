//! `mcpeval --list`: what each name runs, as text for people or JSON.
//!
//! The listing is data, so it goes to stdout through one handle and a closed
//! pipe ends it quietly. It must never run a listed program (not even for
//! `--help`): descriptions come from the built-in table, plugins show paths.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde_json::json;
use shared::Result;

use crate::args::Format;
use crate::builtin::{self, BUILTINS};
use shared::sibling::{Listed, Origin, Search};

/// Prints every command `search` finds, in name order.
pub fn write(search: &Search, format: Format) -> Result<()> {
    let commands = search.list();
    let mut out = BufWriter::new(io::stdout().lock());
    match format {
        Format::Json => {
            let json = to_json(&commands, |left_out| {
                cli::warn(
                    "mcpeval",
                    format!(
                        "{left_out:?} is not valid UTF-8, which JSON cannot carry; it is left out of the listing"
                    ),
                );
            });
            writeln!(out, "{json}")?;
        }
        Format::Text if commands.is_empty() => {
            // Nothing for stdout, but an empty screen deserves a reason.
            let place = search
                .own_dir()
                .map_or(String::new(), |d| format!(" in {} or", d.display()));
            cli::warn(
                "mcpeval",
                format!("no mcpeval-NAME commands found{place} on PATH"),
            );
        }
        Format::Text => write_text(&mut out, &commands)?,
    }
    out.flush()?;
    Ok(())
}

/// `{"commands":[{"name","path","origin","builtin","description","shadowed"}]}`.
///
/// JSON strings are Unicode, so a path that is not valid UTF-8 cannot be
/// printed as itself; rather than print another path in its place, the
/// listing leaves it out (a command, or one shadowed copy) and hands it to
/// `left_out`, which tells the user.
fn to_json(commands: &[Listed], mut left_out: impl FnMut(&Path)) -> serde_json::Value {
    let mut utf8 = |path: &Path| {
        let text = path.to_str();
        if text.is_none() {
            left_out(path);
        }
        text.map(str::to_owned)
    };
    let items: Vec<serde_json::Value> = commands
        .iter()
        .filter_map(|c| {
            let path = utf8(&c.path)?;
            let shadowed: Vec<String> = c.shadowed.iter().filter_map(|p| utf8(p)).collect();
            let about = builtin::about(&c.name);
            Some(json!({
                "name": c.name,
                "path": path,
                "origin": c.origin.as_str(),
                "builtin": about.is_some(),
                "description": about,
                "shadowed": shadowed,
            }))
        })
        .collect();
    json!({ "commands": items })
}

/// Two sections, built-in then plugins, with the second column aligned:
///
/// ```text
/// Built-in commands:
///   capture        Relay MCP traffic unchanged and journal every tool call, sanitized
///
/// Plugins:
///   hello          /opt/x/mcpeval-hello
///                  (shadows /usr/bin/mcpeval-hello)
/// ```
fn write_text(out: &mut impl Write, commands: &[Listed]) -> io::Result<()> {
    // Sized to the longest built-in name as well, so the layout does not
    // shift as commands are installed; a longer plugin name widens it.
    let width = BUILTINS
        .iter()
        .map(|b| b.name.len())
        .chain(commands.iter().map(|c| c.name.len()))
        .max()
        .unwrap_or(0)
        + 2;
    let (builtins, plugins): (Vec<&Listed>, Vec<&Listed>) = commands
        .iter()
        .partition(|c| builtin::about(&c.name).is_some());
    let mut first = true;
    for (title, section) in [("Built-in commands:", builtins), ("Plugins:", plugins)] {
        if section.is_empty() {
            continue;
        }
        if !std::mem::take(&mut first) {
            writeln!(out)?;
        }
        writeln!(out, "{title}")?;
        for c in section {
            let pad = " ".repeat(width + 2);
            match builtin::about(&c.name) {
                Some(about) => {
                    writeln!(out, "  {:width$}{about}", c.name)?;
                    // A built-in run from elsewhere than beside the front is
                    // worth knowing about: it may be another version.
                    if c.origin == Origin::Path {
                        writeln!(out, "{pad}(runs {})", c.path.display())?;
                    }
                }
                None => writeln!(out, "  {:width$}{}", c.name, c.path.display())?,
            }
            for s in &c.shadowed {
                writeln!(out, "{pad}(shadows {})", s.display())?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn listed(name: &str, path: &str, origin: Origin, shadowed: &[&str]) -> Listed {
        Listed {
            name: name.into(),
            path: PathBuf::from(path),
            origin,
            shadowed: shadowed.iter().map(PathBuf::from).collect(),
        }
    }

    #[test]
    fn text_is_aligned_in_two_sections() {
        let commands = [
            listed(
                "capture",
                "/s/mcpeval-capture",
                Origin::Sibling,
                &["/p/mcpeval-capture"],
            ),
            listed("hello", "/p/mcpeval-hello", Origin::Path, &[]),
            listed("index", "/p/mcpeval-index", Origin::Path, &[]),
        ];
        let mut out = Vec::new();
        write_text(&mut out, &commands).unwrap();
        let expected = format!(
            "Built-in commands:\n\
             \x20 capture        {}\n\
             \x20                (shadows /p/mcpeval-capture)\n\
             \x20 index          {}\n\
             \x20                (runs /p/mcpeval-index)\n\
             \n\
             Plugins:\n\
             \x20 hello          /p/mcpeval-hello\n",
            builtin::about("capture").unwrap(),
            builtin::about("index").unwrap(),
        );
        assert_eq!(String::from_utf8(out).unwrap(), expected);
    }

    #[test]
    fn json_carries_every_field() {
        let commands = [listed(
            "hello",
            "/p/mcpeval-hello",
            Origin::Path,
            &["/q/mcpeval-hello"],
        )];
        assert_eq!(
            to_json(&commands, |p| panic!("{p:?} left out")),
            json!({"commands": [{"name": "hello", "path": "/p/mcpeval-hello", "origin": "path",
                "builtin": false, "description": null, "shadowed": ["/q/mcpeval-hello"]}]})
        );
    }

    #[test]
    fn json_leaves_out_paths_that_are_not_utf8() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let odd = |p: &[u8]| PathBuf::from(OsStr::from_bytes(p));
        let mut hello = listed("hello", "/p/mcpeval-hello", Origin::Path, &[]);
        hello.shadowed = vec![
            odd(b"/\xff/mcpeval-hello"),
            PathBuf::from("/q/mcpeval-hello"),
        ];
        let mut other = listed("other", "", Origin::Path, &[]);
        other.path = odd(b"/\xfe/mcpeval-other");
        let mut left = Vec::new();
        let json = to_json(&[hello, other], |p| left.push(p.to_path_buf()));
        assert_eq!(
            json,
            json!({"commands": [{"name": "hello", "path": "/p/mcpeval-hello", "origin": "path",
                "builtin": false, "description": null, "shadowed": ["/q/mcpeval-hello"]}]})
        );
        assert_eq!(
            left,
            [odd(b"/\xff/mcpeval-hello"), odd(b"/\xfe/mcpeval-other")]
        );
    }
}

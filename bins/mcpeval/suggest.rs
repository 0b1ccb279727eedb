//! "Did you mean …?" for a mistyped command name.
//!
//! A typo should cost one glance, not a trip to `--list`. Suggestions are only
//! ever printed; this module must never pick a command to run in place of
//! the one typed, since a near miss may do something else entirely.

/// The largest edit distance still worth suggesting.
const MAX_DISTANCE: usize = 3;

/// How many suggestions to print at most.
const MAX_SUGGESTIONS: usize = 3;

/// Levenshtein distance between `a` and `b`, counted in characters.
pub fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    // One row of the classic table at a time: row[j] is the distance between
    // the prefix of `a` read so far and the first j characters of `b`.
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

/// The candidates within reach of `typed`, nearest first (ties by name),
/// without duplicates and without `typed` itself.
pub fn nearest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut close: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter(|c| *c != typed)
        .map(|c| (distance(typed, c), c))
        .filter(|(d, _)| *d <= MAX_DISTANCE)
        .collect();
    close.sort_unstable();
    close.dedup();
    close
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, c)| c)
        .collect()
}

/// `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'`.
pub fn or_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("", ""), 0);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("abc", ""), 3);
        assert_eq!(distance("captuer", "capture"), 2);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("index", "index"), 0);
        assert_eq!(distance("exprot-issues", "export-issues"), 2);
        assert_eq!(distance("é", "e"), 1);
    }

    #[test]
    fn nearest_first_then_by_name() {
        let names = ["capture", "close", "share", "serve", "capture", "probe"];
        assert_eq!(nearest("captuer", names), ["capture"]);
        // "shave" is one edit from share and two from serve.
        assert_eq!(nearest("shave", names), ["share", "serve"]);
        assert_eq!(nearest("zzzzzzzz", names), Vec::<&str>::new());
        assert_eq!(nearest("share", names), ["serve"]);
    }

    #[test]
    fn or_lists() {
        assert_eq!(or_list(&[]), "");
        assert_eq!(or_list(&["a"]), "'a'");
        assert_eq!(or_list(&["a", "b"]), "'a' or 'b'");
        assert_eq!(or_list(&["a", "b", "c"]), "'a', 'b' or 'c'");
    }
}

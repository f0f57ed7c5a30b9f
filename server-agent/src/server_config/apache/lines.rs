//! Apache's configuration syntax: logical lines (a trailing `\` continues one), words with
//! double and single quotes, section tags, and `${NAME}` substituted from `Define`s and the
//! server's environment as Apache does when it reads the file.

use std::collections::HashMap;

/// One logical line: its text and the physical lines it spans.
pub(super) struct Line {
    /// The text, trimmed, continuations joined.
    pub(super) text: String,
    /// Its first physical line.
    pub(super) first: usize,
    /// Its last physical line (Apache reports an `Include` by this one).
    pub(super) last: usize,
}

/// The logical lines of a file, comments and blank lines left out.
pub(super) fn logical_lines(text: &str) -> Vec<Line> {
    let mut out = Vec::new();
    let mut logical = String::new();
    let mut first = 0;
    for (i, raw) in text.lines().enumerate() {
        let piece = raw.trim();
        if logical.is_empty() {
            first = i + 1;
        }
        if let Some(cont) = piece.strip_suffix('\\') {
            logical.push_str(cont);
            logical.push(' ');
            continue;
        }
        logical.push_str(piece);
        let line = std::mem::take(&mut logical);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        out.push(Line {
            text: line.to_string(),
            first,
            last: i + 1,
        });
    }
    if !logical.trim().is_empty() {
        out.push(Line {
            text: logical.trim().to_string(),
            first,
            last: text.lines().count(),
        });
    }
    out
}

/// Splits a directive line into words, honouring double and single quotes.
pub(super) fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), '\\') => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                    started = false;
                }
            }
            (None, c) => cur.push(c),
        }
    }
    if started || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A section's opening tag (`<Files "x">`): its name and its arguments.
pub(super) fn section_open(line: &str) -> Option<(String, Vec<String>)> {
    let inner = line.strip_prefix('<')?.strip_suffix('>')?;
    if inner.starts_with('/') {
        return None;
    }
    let mut w = words(inner);
    if w.is_empty() {
        return None;
    }
    let name = w.remove(0);
    Some((name, w))
}

/// `line` with every `${NAME}` that `defines` knows replaced, and the names it does not know.
/// `${map:key}` (a RewriteMap lookup) is not a variable and stays as it is.
pub(super) fn substitute(line: &str, defines: &HashMap<String, String>) -> (String, Vec<String>) {
    let mut out = String::with_capacity(line.len());
    let mut unknown = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find('}') {
            Some(end)
                if !after[..end].is_empty()
                    && after[..end]
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                let name = &after[..end];
                match defines.get(name) {
                    Some(v) => out.push_str(v),
                    None => {
                        unknown.push(name.to_string());
                        out.push_str(&rest[i..i + 3 + end]);
                    }
                }
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    (out, unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_honour_quotes() {
        assert_eq!(
            words(r#"Header set X "a b" 'c d' e"#),
            ["Header", "set", "X", "a b", "c d", "e"]
        );
        assert_eq!(words(r#"Require "" x"#), ["Require", "", "x"]);
    }

    #[test]
    fn continued_lines_keep_their_first_and_last_line() {
        let l = logical_lines("# c\nA b \\\n  c\n\nD\n");
        assert_eq!(l.len(), 2);
        assert_eq!(
            (l[0].text.as_str(), l[0].first, l[0].last),
            ("A b  c", 2, 3)
        );
        assert_eq!((l[1].text.as_str(), l[1].first, l[1].last), ("D", 5, 5));
    }

    #[test]
    fn defines_are_substituted_and_unknown_ones_named() {
        let d: HashMap<String, String> = [("ROOT".to_string(), "/srv/www".to_string())].into();
        assert_eq!(
            substitute("<Directory ${ROOT}/private>", &d),
            ("<Directory /srv/www/private>".to_string(), vec![])
        );
        let (s, unknown) = substitute("DocumentRoot ${NOPE}/x", &d);
        assert_eq!(s, "DocumentRoot ${NOPE}/x");
        assert_eq!(unknown, ["NOPE"]);
        assert_eq!(
            substitute("RewriteRule ^(.*)$ ${users:$1}", &d).1,
            Vec::<String>::new()
        );
    }
}

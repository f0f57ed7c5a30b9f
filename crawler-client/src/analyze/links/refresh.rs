//! `<meta http-equiv="refresh" content="...">`: where a page sends its reader, read by the
//! HTML standard's "shared declarative refresh steps" (`5; url=/new`, `0;URL='/new'`,
//! `3, /new`, `/new` alone after the time). A refresh without a URL reloads the page itself
//! and leads nowhere new.

fn is_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0c' | '\r' | ' ')
}

/// The URL a refresh's `content` names, as written (to be resolved against the page's base);
/// none when it names none or does not parse.
pub(crate) fn target(content: &str) -> Option<&str> {
    let mut s = content.trim_start_matches(is_space);
    let digits = s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 && !s.starts_with('.') {
        return None;
    }
    s = s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    if s.is_empty() {
        return None;
    }
    let first = s.chars().next()?;
    if !(first == ';' || first == ',' || is_space(first)) {
        return None;
    }
    s = s.trim_start_matches(is_space);
    if let Some(rest) = s.strip_prefix([';', ',']) {
        s = rest;
    }
    s = s.trim_start_matches(is_space);
    if s.is_empty() {
        return None;
    }
    // `url=` may be left out, and a URL may begin with `u`: the standard only takes the
    // prefix when the whole of `url`, spaces and `=` are there.
    let url = match strip_url_equals(s) {
        Some(after) => unquote(after),
        None if s.starts_with(['u', 'U']) => s,
        None => unquote(s),
    };
    Some(url)
}

/// After `url`, spaces, `=` and spaces, if `s` starts so.
fn strip_url_equals(s: &str) -> Option<&str> {
    let head = s.get(..3)?;
    if !head.eq_ignore_ascii_case("url") {
        return None;
    }
    let rest = s[3..].trim_start_matches(is_space);
    let rest = rest.strip_prefix('=')?;
    Some(rest.trim_start_matches(is_space))
}

/// A quoted URL up to its closing quote.
fn unquote(s: &str) -> &str {
    match s.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let inner = &s[1..];
            inner.find(q).map_or(inner, |end| &inner[..end])
        }
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::target;

    #[test]
    fn every_form_of_refresh_names_its_url() {
        assert_eq!(target("5; url=/new"), Some("/new"));
        assert_eq!(target("0;URL='/new page'"), Some("/new page"));
        assert_eq!(target("0; url = \"/q\" trailing"), Some("/q"));
        assert_eq!(target("3, /new"), Some("/new"));
        assert_eq!(target("3 /new"), Some("/new"));
        assert_eq!(target(".5; url=/x"), Some("/x"));
        assert_eq!(target("1.5;url=/x"), Some("/x"));
        assert_eq!(target("0; 'quoted'"), Some("quoted"));
        // A URL beginning with `u` that is not `url=` is the URL.
        assert_eq!(target("0; upload.html"), Some("upload.html"));
        assert_eq!(target("0; url"), Some("url"));
        // No URL: a reload. No time: nothing.
        assert_eq!(target("5"), None);
        assert_eq!(target("5;"), None);
        assert_eq!(target("url=/x"), None);
        assert_eq!(target("5x; url=/x"), None);
        assert_eq!(target(""), None);
    }
}

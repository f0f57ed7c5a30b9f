//! Requests a server moves inside itself (nginx `error_page`, `try_files` fallbacks,
//! `rewrite ... last`; Apache `RewriteRule` to a local path, `ErrorDocument` with a local URL,
//! `FallbackResource`): the place a request starts in is judged by the place it ends in. A
//! move whose destination a hidden place could govern hides its start too, with both named.
//! A destination with variables is judged by its literal start, and one that only a pattern
//! could match is taken as reached (fail closed).

use super::matcher::{Candidate, Matcher};
use super::{Hidden, under_base};

/// One internal move: the place it starts in, where it was read, what it says, and the URL path
/// it leads to (variables and a query as written).
#[derive(Debug, Clone)]
pub(crate) struct Move {
    pub(crate) from: Matcher,
    pub(crate) at: String,
    pub(crate) text: String,
    pub(crate) to: String,
}

/// Where the site is: its base path and its docroot's spellings.
pub(crate) type Place<'a> = (&'a str, &'a [String]);

/// The hidden place a move to `to` could end in, if any.
fn reaches<'h>(
    hidden: &'h [Hidden],
    to: &str,
    (base_path, spellings): Place,
) -> Option<&'h Hidden> {
    // The query plays no part in choosing a place.
    let path = to.split('?').next().unwrap_or_default();
    let variable = |c: char| c == '$' || c == '%';
    let literal = path.split(variable).next().unwrap_or_default();
    let rel = under_base(literal, base_path)?;
    if !path.contains(variable) {
        let file = Candidate::file(&rel, base_path, spellings);
        return hidden.iter().find(|h| h.matcher.governs(&file));
    }
    let overlaps = |a: &str, b: &str| a.starts_with(b) || b.starts_with(a);
    hidden.iter().find(|h| match &h.matcher {
        Matcher::UrlPrefix(p) => overlaps(p, &rel),
        Matcher::UrlExact(p) => p.starts_with(&rel),
        // An anchored pattern is known by its literal start; any other could match anything.
        Matcher::UrlRegex(re) => {
            literal_start(re.as_str()).is_none_or(|start| overlaps(&start, literal))
        }
        // A directory, under any spelling of the docroot the destination may be in.
        Matcher::DirPrefix(p) => spellings.iter().any(|s| {
            let dir = format!("{}{rel}", s.trim_end_matches('/'));
            overlaps(&dir, p)
        }),
        _ => true,
    })
}

/// The literal text an anchored pattern (`^/reports/(.*)$`) begins with, if it has some.
fn literal_start(pattern: &str) -> Option<String> {
    let rest = pattern.strip_prefix('^')?;
    let start: String = rest
        .chars()
        .take_while(|c| !".*+?()[]{}|\\$^".contains(*c))
        .collect();
    (start.len() > 1).then_some(start)
}

/// Hides the start of every move whose destination a hidden place could govern, until no
/// more is (a move into a start hidden so is itself a destination hidden); returns the moves
/// that reach no hidden place yet (a place another file hides may still be their end).
pub(crate) fn settle(hidden: &mut Vec<Hidden>, mut moves: Vec<Move>, site: Place) -> Vec<Move> {
    loop {
        let mut added = false;
        let mut left = Vec::with_capacity(moves.len());
        for m in moves {
            match reaches(hidden, &m.to, site).map(|h| h.source.clone()) {
                Some(why) => {
                    hidden.push(Hidden {
                        matcher: m.from,
                        source: format!("{}: {}: the request ends where {why}", m.at, m.text),
                    });
                    added = true;
                }
                None => left.push(m),
            }
        }
        moves = left;
        if !added {
            return moves;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_anchored_pattern_is_known_by_its_literal_start() {
        use super::literal_start;
        assert_eq!(
            literal_start("^/reports/(.*)$").as_deref(),
            Some("/reports/")
        );
        assert_eq!(literal_start("^/a"), Some("/a".into()));
        assert_eq!(literal_start("\\.php$"), None);
        assert_eq!(literal_start("^(.*)$"), None);
        assert_eq!(literal_start("^/"), None);
    }
}

//! Where a site's cooperation is announced: `Sitemap:` and `Robots-RDF:` lines of robots.txt,
//! `Link` headers (`rel="hub"`, `rel="self"`), and the conventional places of the agent's
//! documents.

pub use crate::analyze::links::link_header;
use url::Url;

/// What robots.txt points to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pointers {
    /// `Sitemap:` lines, in order, each once.
    pub(crate) sitemaps: Vec<Url>,
    /// The `Robots-RDF:` line (the first).
    pub(crate) robots_rdf: Option<Url>,
}

/// Reads the cooperation lines of a robots.txt. Records are matched case-insensitively and
/// may stand anywhere (they belong to no group, RFC 9309 §2.2.4); relative values are
/// resolved against robots.txt; anything that is not an http(s) URL is skipped.
pub fn robots_txt_pointers(robots_url: &Url, body: &[u8]) -> Pointers {
    let mut p = Pointers::default();
    for line in String::from_utf8_lossy(body).lines() {
        let line = line.split('#').next().unwrap_or("");
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let Some(url) = robots_url
            .join(value)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
        else {
            continue;
        };
        match name.trim().to_ascii_lowercase().as_str() {
            "sitemap" if !p.sitemaps.contains(&url) => p.sitemaps.push(url),
            "robots-rdf" if p.robots_rdf.is_none() => p.robots_rdf = Some(url),
            _ => {}
        }
    }
    p
}

/// The delta endpoint of a resource, by the agent's convention: the changes endpoint's
/// directory, `delta/`, and the resource's path (RFC 3986 encoding kept as it is).
pub(crate) fn delta_url(changes: &Url, resource: &Url) -> Option<Url> {
    // The endpoint names a resource by its path alone: one with a query has none.
    if changes.origin() != resource.origin() || resource.query().is_some() {
        return None;
    }
    let path = resource.path().trim_start_matches('/');
    if path.is_empty() {
        return None;
    }
    changes.join(&format!("delta/{path}")).ok()
}

/// The dynamic changes endpoint (`changes`) and not the static feed (`changes.atom`): only the
/// endpoint answers `?since=`.
pub(crate) fn is_changes_endpoint(url: &Url) -> bool {
    url.path().ends_with("/changes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn robots_txt_lines_are_found_anywhere_and_resolved() {
        let base = Url::parse("http://e.org/robots.txt").unwrap();
        let body = b"User-agent: *\nDisallow: /private\nsitemap: /sitemap.xml # main\n\
            Robots-RDF: http://e.org/robots.rdf\nSITEMAP: http://e.org/sitemap.xml\n\
            Sitemap: ftp://e.org/x.xml\nRobots-RDF: /other.rdf\n";
        let p = robots_txt_pointers(&base, body);
        assert_eq!(
            p.sitemaps,
            [Url::parse("http://e.org/sitemap.xml").unwrap()]
        );
        assert_eq!(
            p.robots_rdf,
            Some(Url::parse("http://e.org/robots.rdf").unwrap())
        );
    }

    #[test]
    fn link_headers_give_every_relation() {
        let base = Url::parse("http://e.org/.well-known/webcoop/changes").unwrap();
        let v = r#"<http://e.org/.well-known/webcoop/hub>; rel="hub", <changes>; rel="self alternate"; title="a, b""#;
        let links = link_header(&base, v);
        assert_eq!(
            links,
            [
                (
                    Url::parse("http://e.org/.well-known/webcoop/hub").unwrap(),
                    "hub".to_string()
                ),
                (base.clone(), "self".to_string()),
                (base.clone(), "alternate".to_string()),
            ]
        );
        assert!(link_header(&base, "garbage; rel=hub").is_empty());
    }

    #[test]
    fn delta_urls_follow_the_agent_convention() {
        let changes = Url::parse("http://e.org/.well-known/webcoop/changes").unwrap();
        let page = Url::parse("http://e.org/docs/a%20b.html").unwrap();
        assert_eq!(
            delta_url(&changes, &page).unwrap().as_str(),
            "http://e.org/.well-known/webcoop/delta/docs/a%20b.html"
        );
        assert!(delta_url(&changes, &Url::parse("http://other.org/x").unwrap()).is_none());
        // A page with a query has no delta endpoint: the path alone names another resource.
        assert!(delta_url(&changes, &Url::parse("http://e.org/list/?page=2").unwrap()).is_none());
        assert!(is_changes_endpoint(&changes));
        assert!(!is_changes_endpoint(
            &Url::parse("http://e.org/.well-known/webcoop/changes.atom").unwrap()
        ));
    }
}

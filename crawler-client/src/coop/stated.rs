//! A claim is a link until proven. Every URL a site's documents state (robots.rdf, sitemaps,
//! the changes feed, snapshots, batches, ResourceSync lists, pushes) passes what a link found
//! in a page passes, and a little more: it is normalised as links are (no fragment, no session
//! parameter), carries no credentials, lies within the crawl's scope and limits, is a page of
//! the site itself, and is one the site's robots.txt allows the crawler. A page robots.txt
//! disallows is neither fetched nor kept, however it arrived: a page that comes with its
//! content (a snapshot, a batch) needs robots.txt known and allowing it.

use crate::analyze::scope::Refused;
use crate::analyze::url_norm::{self, Refusal};
use url::Url;

/// How a stated URL reaches the crawl.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// Named, to be fetched (robots.txt is checked again when it is).
    Named,
    /// With its content, to be kept without a request.
    WithContent,
}

/// Why another origin's URL is refused: a site speaks only for itself.
pub(crate) const NOT_OF_THE_SITE: &str = "it is not a page of the site";

/// Why a URL a site stated is not one of its pages the crawl may take, in words.
pub(crate) fn refusal(
    url: &Url,
    origin: &str,
    policy: &crate::analyze::scope::LinkPolicy,
    rules: Option<&crate::frontier::robots::Rules>,
    arrival: Arrival,
) -> Result<Url, &'static str> {
    let mut u = url.clone();
    url_norm::normalize(&mut u);
    if url_norm::origin_key(&u) != origin {
        return Err(NOT_OF_THE_SITE);
    }
    if let Err(e) = policy.admit(&u, 1) {
        return Err(match e {
            Refused::Trap(Refusal::Credentials) => "it carries credentials",
            Refused::Trap(_) => "it is not a URL the crawl follows",
            Refused::OutOfScope => "it is outside the crawl's scope",
            Refused::TooDeep => "it is deeper than the crawl goes",
        });
    }
    match (rules, arrival) {
        (Some(r), _) if !r.allows(&u) => Err("the site's robots.txt disallows it"),
        (None, Arrival::WithContent) => Err("the site's robots.txt is not known yet"),
        _ => Ok(u),
    }
}

/// A URL as logs may show it: never its credentials.
pub(crate) fn redacted(url: &Url) -> String {
    if url.username().is_empty() && url.password().is_none() {
        return url.to_string();
    }
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    format!("{u} (with credentials)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::scope::{Limits, LinkPolicy, Scope};
    use crate::frontier::robots::Rules;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn a_stated_url_is_held_to_what_a_link_is_held_to_and_more() {
        let site = "http://site.test";
        let policy = LinkPolicy::new(Scope::Host, &[u("http://site.test/")], Limits::default());
        let rules = Rules::from_fetch(
            Some(200),
            b"User-agent: *\nDisallow: /private/\n",
            "webcoop-crawl",
        );
        let take = |url: &str, arrival| refusal(&u(url), site, &policy, Some(&rules), arrival);
        assert_eq!(
            take("http://site.test/a.html#part", Arrival::Named)
                .unwrap()
                .as_str(),
            "http://site.test/a.html"
        );
        assert_eq!(
            take("http://site.test/a.html?PHPSESSID=1", Arrival::Named)
                .unwrap()
                .as_str(),
            "http://site.test/a.html"
        );
        assert_eq!(
            take("http://alice:hunter2@site.test/a.html", Arrival::Named),
            Err("it carries credentials")
        );
        assert_eq!(
            take("http://other.test/a.html", Arrival::Named),
            Err(NOT_OF_THE_SITE)
        );
        assert_eq!(
            take("http://site.test/private/a.html", Arrival::WithContent),
            Err("the site's robots.txt disallows it")
        );
        assert_eq!(
            refusal(
                &u("http://site.test/a.html"),
                site,
                &policy,
                None,
                Arrival::WithContent
            ),
            Err("the site's robots.txt is not known yet")
        );
        assert!(
            refusal(
                &u("http://site.test/a.html"),
                site,
                &policy,
                None,
                Arrival::Named
            )
            .is_ok()
        );
        let any = LinkPolicy::new(Scope::Any, &[u("http://site.test/")], Limits::default());
        assert_eq!(
            refusal(
                &u("http://other.test/a"),
                site,
                &any,
                Some(&rules),
                Arrival::Named
            ),
            Err("it is not a page of the site")
        );
        assert_eq!(
            redacted(&u("http://alice:hunter2@site.test/x")),
            "http://site.test/x (with credentials)"
        );
    }
}

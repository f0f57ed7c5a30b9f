//! What pages a generated site has, as the site itself says: the sitemaps its robots.txt names
//! and WordPress core's `wp-sitemap.xml`, walked with the protocol's bounded sitemap walk.

use super::Pacer;
use super::fetch::{Answer, OriginClient, Validators};
use crate::urls::site_path;
use url::Url;
use webcoop_protocol::sitemap::{SitemapWalk, WalkLimits};

/// What one reading of the sitemaps found.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Site paths of the pages listed.
    pub(crate) paths: Vec<String>,
    /// Sitemap files read.
    pub(crate) sitemaps: usize,
    /// URLs listed that are not pages of the site, with why.
    pub(crate) refused: Vec<(String, &'static str)>,
    /// What went wrong, for the log.
    pub(crate) problems: Vec<String>,
}

/// What the origin said of its robots.txt.
pub(crate) enum Robots {
    /// Its bytes.
    Body(Vec<u8>),
    /// It has none.
    Absent,
    /// It answered something else (a refusal, a redirect): the rules cannot be known, and
    /// nothing new is published until they can.
    Refused(String),
    /// It could not be asked (down, timed out, 5xx): nothing is concluded, what is
    /// published stays.
    Unreachable(String),
}

/// Asks the origin for its robots.txt.
pub(crate) fn robots_txt(client: &OriginClient, pacer: &mut Pacer) -> Robots {
    pacer.wait();
    match client.get("robots.txt", &Validators::default()) {
        Answer::Page(p) => Robots::Body(p.body),
        Answer::Gone => Robots::Absent,
        Answer::NotModified => Robots::Refused("answered 304 to an unconditional request".into()),
        Answer::Refused(why) => Robots::Refused(why),
        Answer::Unknown(why) => Robots::Unreachable(why),
    }
}

/// Where the site's sitemaps start: those robots.txt names on this site (never the agent's
/// own), then `wp-sitemap.xml`.
pub(crate) fn sitemap_roots(base: &Url, robots: Option<&[u8]>) -> Vec<Url> {
    let own = base.join(crate::publish::SITEMAP).ok();
    let mut roots: Vec<Url> = Vec::new();
    let text = robots.map(String::from_utf8_lossy).unwrap_or_default();
    for line in text.lines().take(10_000) {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        if !key.trim().eq_ignore_ascii_case("sitemap") {
            continue;
        }
        if let Ok(url) = Url::parse(value.trim())
            && site_path(base, &url, &[]).is_ok()
            && Some(&url) != own.as_ref()
            && !roots.contains(&url)
            && roots.len() < 16
        {
            roots.push(url);
        }
    }
    if let Ok(wp) = base.join("wp-sitemap.xml")
        && !roots.contains(&wp)
    {
        roots.push(wp);
    }
    roots
}

/// Walks the sitemaps from `roots`, each file fetched from the origin at the pacer's rate.
pub(crate) fn walk(
    client: &OriginClient,
    (base, queries): (&Url, &[String]),
    roots: Vec<Url>,
    max_paths: usize,
    pacer: &mut Pacer,
) -> Found {
    let mut found = Found::default();
    let limits = WalkLimits {
        max_sitemaps: 200,
        ..WalkLimits::default()
    };
    for root in roots {
        let mut walk = SitemapWalk::new(root, limits).with_scope(base);
        while let Some(pending) = walk.next_fetch() {
            let Ok(rel) = site_path(base, &pending.url, queries) else {
                walk.fetch_failed(&pending, "not on this site");
                continue;
            };
            pacer.wait();
            let body = match client.get(&rel, &Validators::default()) {
                Answer::Page(p) => p.body,
                // No such sitemap (a site without WordPress's): nothing to say.
                Answer::Gone => continue,
                Answer::NotModified => continue,
                Answer::Refused(why) | Answer::Unknown(why) => {
                    walk.fetch_failed(&pending, why);
                    continue;
                }
            };
            found.sitemaps += 1;
            for entry in walk.feed(&pending, &body) {
                match site_path(base, &entry.loc, queries) {
                    Ok(p) if found.paths.len() < max_paths => found.paths.push(p),
                    Ok(_) => {}
                    Err(why) => found.refused.push((entry.loc.to_string(), why)),
                }
            }
        }
        found
            .problems
            .extend(walk.problems().iter().map(|p| format!("{p:?}")));
    }
    found.paths.sort();
    found.paths.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_the_site_s_own_and_never_the_agent_s() {
        let base = Url::parse("http://blog.test/").unwrap();
        let robots = b"User-agent: *\nDisallow: /wp-admin/\nSitemap: http://blog.test/wp-sitemap.xml\n\
            sitemap: http://blog.test/sitemap.xml\nSitemap: http://evil.test/s.xml\nSitemap: http://blog.test/news.xml\n";
        let roots = sitemap_roots(&base, Some(robots));
        let names: Vec<&str> = roots.iter().map(Url::as_str).collect();
        assert_eq!(
            names,
            [
                "http://blog.test/wp-sitemap.xml",
                "http://blog.test/news.xml"
            ]
        );
        assert_eq!(sitemap_roots(&base, None).len(), 1);
    }
}

//! The snapshots being read, one per site, each with the list robots.rdf gave with it: the
//! owner of what a page read from a snapshot must agree with (robots.rdf lists it with the
//! SHA-256 its content has), of which pages were taken, and of whether the listing claims to
//! be complete (`super::absences`). The coordinator starts and ends them (`super::snapshots`).

use super::shared::{Reading, Said};
use crate::analyze::Link;
use crate::ids::HostId;
use std::collections::HashMap;
use url::Url;
use webcoop_protocol::validator::{EntityTag, Sha256Digest};

/// A URL robots.rdf lists, as its list is acted on.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    /// The URL.
    pub(crate) url: Url,
    /// Its modification time (ms).
    pub(crate) modified: i64,
    /// Its entity tag (the SHA-256 of its content, for a webcoop site).
    pub(crate) etag: Option<String>,
    /// Where its delta is.
    pub(crate) delta: Option<Url>,
    /// Its size in bytes, as listed.
    pub(crate) size: Option<u64>,
    /// Its share of the site's reads, as listed.
    pub(crate) popularity: Option<f64>,
}

impl Listed {
    /// As an announcement.
    pub(crate) fn said(&self) -> Said<'_> {
        Said {
            url: &self.url,
            modified: Some(self.modified),
            etag: self.etag.clone(),
            delta: self.delta.clone(),
            inline: None,
            popularity: self.popularity,
        }
    }
}

/// A snapshot being fetched, with the list it is checked against.
#[derive(Debug)]
pub(crate) struct PendingSnapshot {
    /// The listed URLs.
    list: Vec<Listed>,
    /// Each listed URL's entity tag, to check a page against.
    tags: HashMap<String, Option<String>>,
    /// URLs taken from the snapshot, with the content's SHA-256.
    taken: Vec<(Link, Sha256Digest)>,
    /// How the list is read once the snapshot ended: a first visit's, or a resync's (whose
    /// claims are weighed like any update).
    reading: Reading,
    /// The largest record the snapshot holds, as robots.rdf states it: larger listed files
    /// were left out of it, to be fetched alone.
    max_record: Option<u64>,
    /// Whether robots.rdf states that it names every page of the site (`wc:complete`): a
    /// link to a URL it does not name is then held (`super::absences`).
    complete: bool,
}

impl PendingSnapshot {
    /// A snapshot of a site whose robots.rdf lists `list`, read as `reading`, its largest
    /// record `max_record`, its listing `complete` or not.
    pub(crate) fn new(
        list: Vec<Listed>,
        reading: Reading,
        max_record: Option<u64>,
        complete: bool,
    ) -> PendingSnapshot {
        let tags = list
            .iter()
            .map(|l| (l.url.as_str().to_string(), l.etag.clone()))
            .collect();
        PendingSnapshot {
            list,
            tags,
            taken: Vec::new(),
            reading,
            max_record,
            complete,
        }
    }

    /// The listed URLs.
    pub(crate) fn list(&self) -> &[Listed] {
        &self.list
    }

    /// The pages taken from the snapshot, with their content's SHA-256.
    pub(crate) fn taken(&self) -> &[(Link, Sha256Digest)] {
        &self.taken
    }

    /// How the list is read once the snapshot ended.
    pub(crate) fn reading(&self) -> Reading {
        self.reading
    }

    /// The largest record the snapshot holds, as robots.rdf states it.
    pub(crate) fn max_record(&self) -> Option<u64> {
        self.max_record
    }
}

/// What a page read from a snapshot came to.
#[derive(Debug, PartialEq)]
pub(crate) enum PageRead {
    /// Taken: robots.rdf lists it with the SHA-256 its content has.
    Taken(Link, Sha256Digest),
    /// Not taken; `listed` when robots.rdf lists it with another tag (a refuted claim).
    Refused {
        /// Whether robots.rdf lists the URL.
        listed: bool,
    },
}

/// The snapshots being read, by site.
#[derive(Default)]
pub(crate) struct PendingSnapshots {
    by_host: HashMap<HostId, PendingSnapshot>,
}

impl PendingSnapshots {
    /// Whether a snapshot of `host` is being read.
    pub(crate) fn reading(&self, host: HostId) -> bool {
        self.by_host.contains_key(&host)
    }

    /// A snapshot of `host` is fetched now.
    pub(crate) fn start(&mut self, host: HostId, snapshot: PendingSnapshot) {
        self.by_host.insert(host, snapshot);
    }

    /// Whether a snapshot of `host` is being read whose listing names `url`.
    pub(crate) fn lists(&self, host: HostId, url: &str) -> bool {
        self.by_host
            .get(&host)
            .is_some_and(|p| p.tags.contains_key(url))
    }

    /// Whether a snapshot of `host` is being read whose listing claims to be complete and does
    /// not name `url` (a link to it is the site's claim that nothing is there).
    pub(crate) fn claims_absent(&self, host: HostId, url: &str) -> bool {
        self.by_host
            .get(&host)
            .is_some_and(|p| p.complete && !p.tags.contains_key(url))
    }

    /// A page read from `host`'s snapshot, with its content's entity tag `validator`: taken
    /// when robots.rdf lists it with that tag, a SHA-256.
    pub(crate) fn read_page(
        &mut self,
        host: HostId,
        url: &str,
        validator: Option<&str>,
    ) -> PageRead {
        let Some(p) = self.by_host.get_mut(&host) else {
            return PageRead::Refused { listed: false };
        };
        let listed = p.tags.get(url);
        let agrees = matches!((listed, validator), (Some(Some(tag)), Some(v)) if tag == v);
        let digest = validator
            .and_then(|v| v.parse::<EntityTag>().ok())
            .and_then(|t| Sha256Digest::from_etag(&t));
        match (agrees, digest, Url::parse(url)) {
            (true, Some(d), Ok(u)) => {
                let link = Link::to(&u);
                p.taken.push((link.clone(), d));
                PageRead::Taken(link, d)
            }
            _ => PageRead::Refused {
                listed: listed.is_some(),
            },
        }
    }

    /// The snapshot of `host` ended: taken, to be acted on.
    pub(crate) fn end(&mut self, host: HostId) -> Option<PendingSnapshot> {
        self.by_host.remove(&host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(path: &str, body: &[u8]) -> Listed {
        Listed {
            url: Url::parse(&format!("http://a.test{path}")).unwrap(),
            modified: 0,
            etag: Some(Sha256Digest::of(body).etag().to_string()),
            delta: None,
            size: None,
            popularity: None,
        }
    }

    #[test]
    fn a_page_is_taken_only_with_the_tag_its_listing_gives_it() {
        let mut s = PendingSnapshots::default();
        let host = HostId(1);
        let tag = |b: &[u8]| Sha256Digest::of(b).etag().to_string();
        assert_eq!(
            s.read_page(host, "http://a.test/", Some(&tag(b"home"))),
            PageRead::Refused { listed: false }
        );
        let list = vec![listed("/", b"home"), listed("/a", b"a")];
        s.start(
            host,
            PendingSnapshot::new(list, Reading::First, Some(10), true),
        );
        assert!(s.reading(host) && s.lists(host, "http://a.test/a"));
        assert!(
            s.claims_absent(host, "http://a.test/b") && !s.claims_absent(host, "http://a.test/a")
        );
        assert!(matches!(
            s.read_page(host, "http://a.test/", Some(&tag(b"home"))),
            PageRead::Taken(_, d) if d == Sha256Digest::of(b"home")
        ));
        // Listed with another content: a refuted claim; not listed: nothing said.
        assert_eq!(
            s.read_page(host, "http://a.test/a", Some(&tag(b"other"))),
            PageRead::Refused { listed: true }
        );
        assert_eq!(
            s.read_page(host, "http://a.test/z", Some(&tag(b"z"))),
            PageRead::Refused { listed: false }
        );
        let p = s.end(host).unwrap();
        assert_eq!(
            (p.taken().len(), p.list().len(), p.max_record()),
            (1, 2, Some(10))
        );
        assert!(!s.reading(host) && !s.claims_absent(host, "http://a.test/b"));
    }

    #[test]
    fn a_listing_that_does_not_claim_completeness_holds_nothing() {
        let mut s = PendingSnapshots::default();
        s.start(
            HostId(2),
            PendingSnapshot::new(vec![listed("/", b"h")], Reading::Update, None, false),
        );
        assert!(!s.claims_absent(HostId(2), "http://a.test/elsewhere"));
    }
}

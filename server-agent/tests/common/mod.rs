//! A temporary site (docroot, state and output directories) and readers for what the agent
//! published there, parsed with the protocol crate.

#![allow(dead_code)]

use chrono::{TimeZone, Utc};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use webcoop_agent::Agent;
use webcoop_agent::{AgentOptions, Config};
use webcoop_protocol::changes_feed::{self, ChangesFeed, FeedLimits};
use webcoop_protocol::clock::ManualClock;
use webcoop_protocol::robots_rdf::{self, RdfLimits, RobotsRdf};
use webcoop_protocol::sitemap::{self, Leniency, SitemapDocument, SitemapLimits, UrlEntry};

pub(crate) const BASE: &str = "https://site.example/";

pub(crate) struct Site {
    pub tmp: tempfile::TempDir,
    pub docroot: PathBuf,
    pub clock: Arc<ManualClock>,
    /// The web server the agent asks about each file.
    pub server: webcoop_testkit::static_site::StaticServer,
}

impl Site {
    pub(crate) fn new() -> Site {
        let tmp = tempfile::tempdir().unwrap();
        let docroot = tmp.path().join("www");
        std::fs::create_dir(&docroot).unwrap();
        let docroot = docroot.canonicalize().unwrap();
        let server = webcoop_testkit::static_site::StaticServer::serve(&docroot);
        Site {
            tmp,
            docroot,
            server,
            clock: Arc::new(ManualClock::new(
                Utc.timestamp_opt(1_800_000_000, 0).unwrap(),
            )),
        }
    }

    pub(crate) fn cli(&self) -> AgentOptions {
        AgentOptions {
            docroot: Some(self.docroot.clone()),
            base_url: Some(BASE.into()),
            state: Some(self.tmp.path().join("state")),
            debounce_ms: Some(0),
            server_url: Some(self.server.url()),
            ..AgentOptions::default()
        }
    }

    pub(crate) fn agent_with(&self, cli: AgentOptions) -> Agent {
        Agent::open(Config::from_options(cli).unwrap(), self.clock.clone()).unwrap()
    }

    /// An agent on this site, after its start-up scan and publication.
    pub(crate) fn start(&self) -> Agent {
        let mut agent = self.agent_with(self.cli());
        agent.full_scan(false).unwrap();
        agent.publish().unwrap();
        agent
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.docroot.join(rel)
    }

    pub(crate) fn write(&self, rel: &str, content: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub(crate) fn tick(&self, secs: u64) {
        self.clock.advance(std::time::Duration::from_secs(secs));
    }

    pub(crate) fn clock_now(&self) -> chrono::DateTime<Utc> {
        use webcoop_protocol::clock::Clock;
        self.clock.now()
    }

    pub(crate) fn out(&self) -> &Path {
        &self.docroot
    }

    pub(crate) fn listing(&self) -> RobotsRdf {
        read_listing(self.out()).expect("robots.rdf")
    }

    /// URL -> (size, etag) of every item of robots.rdf.
    pub(crate) fn listed(&self) -> BTreeMap<String, (u64, String)> {
        self.listing()
            .items
            .into_iter()
            .map(|i| {
                (
                    i.url.to_string(),
                    (i.size.unwrap(), i.etag.unwrap().to_string()),
                )
            })
            .collect()
    }

    pub(crate) fn sitemap_urls(&self) -> Vec<UrlEntry> {
        read_sitemap_urls(self.out())
    }

    pub(crate) fn feed(&self) -> ChangesFeed {
        changes_feed::parse(
            &std::fs::read(self.out().join(".well-known/webcoop/changes.atom")).unwrap(),
            &FeedLimits::default(),
        )
        .unwrap()
    }
}

pub(crate) fn url(rel: &str) -> String {
    format!("{BASE}{rel}")
}

/// robots.rdf in `dir` with the items of its parts, when it is an index; none when there is
/// no robots.rdf. Panics on a document that does not read: the agent must only publish whole
/// ones.
pub(crate) fn read_listing(dir: &Path) -> Option<RobotsRdf> {
    let read = |name: &str| {
        let bytes = std::fs::read(dir.join(name)).ok()?;
        Some(robots_rdf::parse(&bytes, &RdfLimits::default()).expect("a whole robots.rdf"))
    };
    let index = read("robots.rdf")?;
    let parts: Vec<RobotsRdf> = index
        .channel
        .parts
        .iter()
        .map(|p| {
            let name = p.url.path().rsplit('/').next().unwrap_or_default();
            read(name).expect("every part the index names")
        })
        .collect();
    Some(
        index
            .assemble(parts, usize::MAX)
            .expect("parts one level deep"),
    )
}

/// Every URL of sitemap.xml, following an index to its gzip parts.
pub(crate) fn read_sitemap_urls(dir: &Path) -> Vec<UrlEntry> {
    let root = std::fs::read(dir.join("sitemap.xml")).unwrap();
    match sitemap::parse(&root, &SitemapLimits::default(), Leniency::Strict)
        .unwrap()
        .document
    {
        SitemapDocument::UrlSet(urls) => urls,
        SitemapDocument::Index(refs) => refs
            .iter()
            .flat_map(|r| {
                let name = r.loc.path().trim_start_matches('/').to_string();
                let bytes = std::fs::read(dir.join(name)).unwrap();
                match sitemap::parse(&bytes, &SitemapLimits::default(), Leniency::Strict)
                    .unwrap()
                    .document
                {
                    SitemapDocument::UrlSet(urls) => urls,
                    SitemapDocument::Index(_) => panic!("nested index"),
                }
            })
            .collect(),
    }
}

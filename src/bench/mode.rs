//! How the crawler keeps its copy fresh in a run: the seven ways of webcoop's agent, the
//! baselines, and the six ways the web already says when it changes (no agent on the site).

use super::web_signals::Signal;

/// How the crawler keeps its copy fresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Every page refetched whole on the crawler's schedule.
    Poll,
    /// Every page asked "changed since?" on the crawler's schedule.
    Conditional,
    /// The site's metadata (robots.rdf, the changes feed) polled; changed pages fetched.
    Meta,
    /// As `Meta`, changed pages fetched as deltas.
    Delta,
    /// Changes pushed by the site's hub; changed pages fetched whole.
    Push,
    /// Changes pushed with inline deltas.
    PushDelta,
    /// Crawled once before the measurement and never again: how a copy left alone decays,
    /// the baseline the others are bought against.
    Once,
    /// Every page asked "changed since?" on the crawler's schedule, by the optimal policy
    /// (pages weighted by OPIC importance).
    Optimal,
    /// As `Optimal`, with the site's listing read: each page's stated popularity (its share
    /// of reads, from the access log) added to its weight.
    Listing,
    /// No agent: a sitemap whose `<lastmod>` the site updates at each edit.
    Sitemap,
    /// No agent: an RSS 2.0 feed of the newest changed pages.
    Rss,
    /// No agent: an Atom 1.0 feed of the newest changed pages.
    Atom,
    /// No agent: a JSON Feed 1.1 of the newest changed pages.
    JsonFeed,
    /// No agent: an Atom feed naming a WebSub hub on another origin, which the site pings at
    /// each edit and which delivers the feed signed with sha512.
    Websub,
    /// No agent: each edit's URL submitted to the crawler's IndexNow endpoint under a key the
    /// site's key file proves.
    Indexnow,
}

impl Mode {
    /// Every mode, in the order of the table.
    pub const ALL: [Mode; 15] = [
        Mode::Once,
        Mode::Poll,
        Mode::Conditional,
        Mode::Optimal,
        Mode::Listing,
        Mode::Meta,
        Mode::Delta,
        Mode::Push,
        Mode::PushDelta,
        Mode::Sitemap,
        Mode::Rss,
        Mode::Atom,
        Mode::JsonFeed,
        Mode::Websub,
        Mode::Indexnow,
    ];

    /// The modes of the web as it is (no agent), in the order of the table.
    pub const WEB: [Mode; 6] = [
        Mode::Sitemap,
        Mode::Rss,
        Mode::Atom,
        Mode::JsonFeed,
        Mode::Websub,
        Mode::Indexnow,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Poll => "poll",
            Mode::Conditional => "conditional",
            Mode::Meta => "meta",
            Mode::Delta => "delta",
            Mode::Push => "push",
            Mode::PushDelta => "push-delta",
            Mode::Once => "once",
            Mode::Optimal => "optimal",
            Mode::Listing => "listing",
            Mode::Sitemap => "sitemap",
            Mode::Rss => "rss",
            Mode::Atom => "atom",
            Mode::JsonFeed => "json-feed",
            Mode::Websub => "websub",
            Mode::Indexnow => "indexnow",
        }
    }

    /// The mode named `s`.
    pub fn parse(s: &str) -> Result<Mode, String> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Mode::ALL.iter().map(|m| m.name()).collect();
                format!("unknown mode {s:?}: {}", names.join(", "))
            })
    }

    /// The crawler's `--coop`: the web's modes run at the default (everything the site
    /// offers), on a site without the agent.
    pub(crate) fn coop(self) -> &'static str {
        match self {
            Mode::Once | Mode::Poll | Mode::Conditional | Mode::Optimal => "off",
            Mode::Listing => "listing",
            Mode::Meta => "meta",
            Mode::Delta => "delta",
            Mode::Push | Mode::PushDelta => "push",
            Mode::Sitemap | Mode::Rss | Mode::Atom | Mode::JsonFeed | Mode::Websub => "push",
            Mode::Indexnow => "push",
        }
    }

    /// The crawler's refresh policy: uniform is polling as the baseline knows it (every page
    /// once per cycle; the optimal policy would give up on the few pages that change most,
    /// which make most of the changes).
    pub(crate) fn policy(self) -> &'static str {
        match self {
            Mode::Optimal | Mode::Listing => "optimal",
            _ => "uniform",
        }
    }

    /// Whether the crawler listens for WebSub deliveries.
    pub(crate) fn pushed(self) -> bool {
        matches!(self, Mode::Push | Mode::PushDelta | Mode::Websub)
    }

    /// The signal a site without the agent sends, for the web's modes.
    pub fn signal(self) -> Option<Signal> {
        match self {
            Mode::Sitemap => Some(Signal::Sitemap),
            Mode::Rss => Some(Signal::Rss),
            Mode::Atom => Some(Signal::Atom),
            Mode::JsonFeed => Some(Signal::JsonFeed),
            Mode::Websub => Some(Signal::Websub),
            Mode::Indexnow => Some(Signal::Indexnow),
            _ => None,
        }
    }

    /// Whether webcoop's agent runs beside the site.
    pub fn agent(self) -> bool {
        self.signal().is_none()
    }
}

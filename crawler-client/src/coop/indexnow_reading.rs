//! The coordinator's side of IndexNow (`super::indexnow`, `super::indexnow_server`): a
//! submission's URLs wait for its key's proof; the key file is fetched from the site through its
//! own queue (its robots.txt and politeness hold), and once it proves the key the URLs become
//! due, each held to what any URL a site states is held to. A site with a proved key tells of
//! its changes: its pages are left to it, as to a changes feed, kept by the safety-net visit.

use super::indexnow::Proof;
use super::indexnow_server::IndexNowServer;
use super::shared::Reach;
use super::state::CoopState;
use super::stated::Arrival;
use super::{CoopJob, MetaKind};
use crate::analyze::Link;
use crate::clock::now_ms;
use crate::ids::HostId;
use url::Url;
use webcoop_protocol::indexnow::Submission;

impl CoopState {
    /// The IndexNow endpoint, told of each key's proof.
    pub(crate) fn attach_indexnow(&mut self, server: IndexNowServer) {
        self.indexnow = Some(server);
    }

    /// A submission for `host` arrived (the endpoint checked its form, scope and rate).
    pub(crate) fn indexnow_submitted(&mut self, r: &mut Reach<'_>, host: HostId, sub: &Submission) {
        let origin = r.origin(host);
        let taken = self.site(host).indexnow.submitted(
            (&sub.key, &sub.key_file, sub.located),
            &sub.urls,
            now_ms(),
        );
        if taken.refused {
            tracing::info!(
                "{origin}: IndexNow submission of {} URLs ignored: its key was refused",
                sub.urls.len()
            );
            return;
        }
        if let Some(file) = taken.fetch {
            tracing::info!("{origin}: IndexNow key submitted; fetching {file} to prove it");
            if let Some(server) = &self.indexnow {
                server.set_proof(&sub.key, &file, Proof::Asked);
            }
            r.frontier.push_coop(
                host,
                CoopJob::Fetch {
                    kind: MetaKind::IndexNowKey,
                    url: file,
                    etag: None,
                    last_modified: None,
                },
            );
        }
        if taken.dropped > 0 {
            tracing::info!(
                "{origin}: {} submitted URLs dropped (outside the key's folder, or too many waiting)",
                taken.dropped
            );
        }
        self.indexnow_due(r, host, &taken.due);
    }

    /// The key file at `url` answered (`body`: none for no file or an error).
    pub(crate) fn indexnow_key_answered(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        url: &Url,
        body: Option<&[u8]>,
    ) {
        let origin = r.origin(host);
        let before = self.covers(host);
        let (key, proved, due) = self.site(host).indexnow.answered(url, body, now_ms());
        if let (Some(server), Some(key)) = (&self.indexnow, &key) {
            let proof = if proved {
                Proof::Proved
            } else {
                Proof::Refused
            };
            server.set_proof(key, url, proof);
        }
        if proved {
            tracing::info!(
                "{origin}: IndexNow key proved by {url}; {} submitted URLs due",
                due.len()
            );
        } else {
            tracing::warn!("{origin}: {url} does not hold the IndexNow key submitted; refused");
        }
        let after = self.covers(host);
        if before != after
            && let Some(s) = r.schedule.as_deref_mut()
        {
            s.set_host_covered(host, after);
        }
        self.indexnow_due(r, host, &due);
    }

    /// Submitted URLs whose key is proved: each of the site's own pages the crawl may take
    /// is fetched (queued if new, due now if known).
    fn indexnow_due(&mut self, r: &mut Reach<'_>, host: HostId, urls: &[Url]) {
        let mut n = 0;
        for u in urls {
            let Some(page) = self.stated_url(r, host, u, Arrival::Named) else {
                continue;
            };
            let link = Link::to(&page);
            if r.frontier.seen(link.fp) {
                self.due_now(r, host, &link);
            } else {
                r.out.links.push(link);
            }
            n += 1;
        }
        self.site(host).stats.announced += n;
    }
}

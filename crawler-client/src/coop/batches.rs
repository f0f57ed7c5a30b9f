//! Batches: a believed site's changes asked with the content of the changed pages
//! (`changes?since=N&bodies=1`, [`webcoop_protocol::batch`]), so a crawler that was away
//! catches up in one request per page of changes instead of one per changed page. A page is
//! taken only if the change the batch lists for it names the digest its content has; anything
//! else is announced as usual and fetched. A few pages taken are fetched again once recorded,
//! to check the site, as any claim is.

use super::ledger::Claim;
use super::shared::{BatchPage, Reach};
use super::state::CoopState;
use super::stated::Arrival;
use super::{CoopMode, MetaError};
use crate::analyze::Link;
use crate::clock::now_ms;
use crate::fetch::outcome::{CoopFetched, RecordSlot};
use crate::ids::{Fp, HostId};
use std::collections::{HashMap, HashSet};
use url::Url;
use webcoop_protocol::batch;
use webcoop_protocol::changes_feed::ChangeKind;

impl CoopState {
    /// Whether the changes of `host` are asked with their pages' content: always where no
    /// deltas are used, else while catching up (a delta is smaller than a page, but a crawl
    /// that was away would ask one per changed page).
    pub(crate) fn asks_bodies(&self, r: &Reach<'_>, host: HostId) -> bool {
        self.config.batches
            && self.config.mode >= CoopMode::Meta
            && !r.frontier.is_shared()
            && self.sites.get(host).is_some_and(|s| {
                !s.no_batches
                    && s.trust.believed(self.config.trust_min)
                    && (s.catching_up || !self.config.uses_deltas())
            })
    }

    /// Whether an answer of the changes endpoint is a batch.
    pub(crate) fn is_batch(got: &CoopFetched) -> bool {
        got.header("content-type")
            .and_then(|t| t.split(';').next())
            .is_some_and(|t| t.trim().eq_ignore_ascii_case(batch::MEDIA_TYPE))
    }

    /// A batch answered: the pages it carries that its changes vouch for are handed to the
    /// loop, and its changes applied (those pages then need no fetch).
    pub(crate) fn batch_answered(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        url: &Url,
        got: &CoopFetched,
        secs: Option<f64>,
    ) -> Result<(), MetaError> {
        let b = match batch::parse(&got.body, batch::MAX_CONTENT_BYTES as usize) {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(
                    "{}: {url}: {e}; asking its changes without content from now on",
                    r.origin(host)
                );
                self.site(host).no_batches = true;
                return Err(MetaError::Batch(Box::new(e)));
            }
        };
        let archived = match &got.record {
            Some(RecordSlot::New(rec)) => Some(rec.id.clone()),
            _ => None,
        };
        let mut taken = HashSet::new();
        if self.asks_bodies(r, host) {
            // The newest change of each URL, by its sequence number wherever it stands in the
            // document: a batch carrying two versions of a page vouches for the later one.
            let mut newest: HashMap<&str, (u64, ChangeKind, Option<String>)> = HashMap::new();
            for e in &b.feed.entries {
                let here = (e.seq, e.kind, e.etag.as_ref().map(ToString::to_string));
                newest
                    .entry(e.url.as_str())
                    .and_modify(|held| {
                        if here.0 > held.0 {
                            *held = here.clone();
                        }
                    })
                    .or_insert(here);
            }
            let mut pages = Vec::new();
            for entry in b.entries {
                let vouched = newest
                    .get(entry.url.as_str())
                    .is_some_and(|(_, kind, tag)| {
                        *kind != ChangeKind::Deleted
                            && tag.as_deref() == Some(&entry.sha256.etag().to_string())
                    });
                if !vouched {
                    self.site(host).stats.refuted += 1;
                    continue;
                }
                pages.push(entry);
            }
            let mut kept: HashSet<String> = HashSet::new();
            for entry in pages {
                let Ok(page) = Url::parse(&entry.url) else {
                    continue;
                };
                let Some(page) = self.stated_url(r, host, &page, Arrival::WithContent) else {
                    continue;
                };
                // One page per URL: fragments and session parameters name the same page.
                if !kept.insert(page.as_str().to_string()) {
                    continue;
                }
                let link = Link::to(&page);
                let known = r.pages.known(link.fp);
                if r.frontier.seen(link.fp) && known.is_none() {
                    continue; // queued: fetched as usual
                }
                taken.insert(entry.url.clone());
                taken.insert(page.as_str().to_string());
                let tag = entry.sha256.etag().to_string();
                if known
                    .as_ref()
                    .is_some_and(|k| k.validator.as_deref() == Some(&tag))
                {
                    continue; // held already (pushed, or fetched since)
                }
                let depth = r
                    .schedule
                    .as_deref()
                    .and_then(|s| s.page(link.fp))
                    .map_or(1, |p| p.depth);
                self.site(host).stats.from_batch += 1;
                let mut entry = entry;
                entry.url = page.as_str().to_string();
                r.out.batch.push(BatchPage {
                    host,
                    link,
                    depth,
                    known,
                    entry,
                    from: (url.clone(), archived.clone()),
                });
            }
        }
        let site = self.site(host);
        site.changes_etag = got.header("etag").map(str::to_string);
        site.last_poll = Some(now_ms());
        self.apply_feed(r, host, b.feed, secs, false, &taken);
        Ok(())
    }

    /// A page taken from a batch was recorded: it counts as handed over by the site until
    /// fetched live, and is fetched again to check the site now and then (more the less is
    /// known of it), whole, its content compared with the batch's.
    pub(crate) fn batch_recorded(
        &mut self,
        r: &mut Reach<'_>,
        host: HostId,
        fp: Fp,
        url: &str,
        digest: Option<webcoop_protocol::validator::Sha256Digest>,
    ) {
        self.handed.hand(host, fp, url, digest);
        let share = super::trust::check_share(self.config.check_share, &self.site(host).trust);
        if !self.chance(share) {
            return;
        }
        let Ok(u) = Url::parse(url) else {
            return;
        };
        let claim = digest.map_or(Claim::Unchanged, Claim::Matches);
        self.ledger.expect(fp, host, claim);
        self.site(host).stats.checks += 1;
        self.due_now(r, host, &Link::with_fp(&u, fp));
    }
}

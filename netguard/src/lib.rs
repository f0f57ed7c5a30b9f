//! Where webcoop's outgoing connections may go: the crawler's (pages, redirects, robots.txt,
//! sitemaps, listings, deltas, hub subscriptions) and the agent hub's callbacks alike.
//!
//! A website or a subscriber names the URLs; without a check anyone could make a crawler or a
//! hub fetch from the network it sits in (SSRF) and, for the crawler, archive the answer. The
//! check is made on addresses, after name resolution, for every connection: a URL's IP literal
//! before the request, and every address a name resolves to inside the HTTP client's
//! resolver, so the address connected to is the address checked (no rebinding between a check
//! and the connection).

// A function over 100 lines is split where its parts can be named (tests apart).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod policy;
mod ranges;
mod resolver;

pub use policy::{NetPolicy, Refusal, RefusalCounter};
pub use ranges::{Class, classify};
pub use resolver::{GuardedResolver, ResolveError};

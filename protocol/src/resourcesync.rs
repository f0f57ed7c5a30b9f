//! ResourceSync (ANSI/NISO Z39.99-2017, specification 1.1): the documents digital libraries
//! and archives read to keep a copy of a site, as sitemaps with the `rs:` terms.
//!
//! A site names its capability list in its Source Description at `/.well-known/resourcesync`;
//! the capability list names a Resource List (every resource with its length, media type and
//! SHA-256, at one moment), a Change List (what changed since, from the change log) and a
//! Resource Dump (the resources in one ZIP package with its manifest).

use crate::dates::push_w3cdtf;
use crate::validator::Sha256Digest;
use crate::xml_write::push_attr;
use chrono::{DateTime, SubsecRound, Utc};

/// The ResourceSync namespace.
pub const NS: &str = "http://www.openarchives.org/rs/terms/";
/// Where a site's Source Description is, from its root.
pub const SOURCE_DESCRIPTION: &str = ".well-known/resourcesync";
/// Where webcoop's other ResourceSync documents are, from the site's root.
pub const DIRECTORY: &str = ".well-known/webcoop/resourcesync/";
/// The Capability List's file name in [`DIRECTORY`].
pub const CAPABILITY_LIST: &str = "capabilitylist.xml";
/// The Resource List's file name.
pub const RESOURCE_LIST: &str = "resourcelist.xml";
/// The Change List's file name.
pub const CHANGE_LIST: &str = "changelist.xml";
/// The Resource Dump's file name.
pub const RESOURCE_DUMP: &str = "resourcedump.xml";
/// Most URLs in one document (the sitemap protocol's bound).
pub const MAX_URLS: usize = 50_000;

const HEAD: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n";
const TAIL: &str = "</urlset>\n";

/// What a document is, or what one it points at is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Capability {
    /// The Source Description.
    Description,
    /// A Capability List.
    CapabilityList,
    /// A Resource List.
    ResourceList,
    /// A Change List.
    ChangeList,
    /// A Resource Dump.
    ResourceDump,
    /// The manifest of a Resource Dump's package.
    ResourceDumpManifest,
    /// A Change Notification channel (the topic a WebSub hub pushes change notifications on).
    ChangeListNotification,
    /// A Framework Notification: a document of the framework itself changed.
    FrameworkNotification,
}

impl Capability {
    /// Its name in `rs:md capability`.
    pub fn as_str(self) -> &'static str {
        match self {
            Capability::Description => "description",
            Capability::CapabilityList => "capabilitylist",
            Capability::ResourceList => "resourcelist",
            Capability::ChangeList => "changelist",
            Capability::ResourceDump => "resourcedump",
            Capability::ResourceDumpManifest => "resourcedump-manifest",
            Capability::ChangeListNotification => "changelist-notification",
            Capability::FrameworkNotification => "framework-notification",
        }
    }
}

/// One resource as a Resource List (or a dump's manifest) describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// Its URL.
    pub loc: String,
    /// When it last changed (written to the second, as clients compare file times).
    pub lastmod: DateTime<Utc>,
    /// SHA-256 of its content.
    pub sha256: Sha256Digest,
    /// Its length in bytes.
    pub length: u64,
    /// Its media type.
    pub media_type: String,
}

/// What happened to a resource, in a Change List.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// It appeared.
    Created,
    /// Its content changed.
    Updated,
    /// It is gone.
    Deleted,
}

impl Change {
    /// Its name in `rs:md change`.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Created => "created",
            Change::Updated => "updated",
            Change::Deleted => "deleted",
        }
    }
}

/// One change of a Change List.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangeItem {
    /// The resource's URL.
    pub loc: String,
    /// What happened.
    pub change: Change,
    /// When.
    pub datetime: DateTime<Utc>,
    /// The new content's digest, length and media type (none for a deletion).
    pub content: Option<(Sha256Digest, u64, String)>,
}

/// `<rs:md .../>` with these attributes.
fn push_md(out: &mut String, indent: &str, attrs: &[(&str, &str)]) {
    out.push_str(indent);
    out.push_str("<rs:md");
    for (name, value) in attrs {
        out.push(' ');
        out.push_str(name);
        out.push_str("=\"");
        push_attr(out, value);
        out.push('"');
    }
    out.push_str("/>\n");
}

/// `<rs:ln rel=".." href=".."/>`.
fn push_ln(out: &mut String, indent: &str, rel: &str, href: &str) {
    out.push_str(indent);
    out.push_str("<rs:ln rel=\"");
    push_attr(out, rel);
    out.push_str("\" href=\"");
    push_attr(out, href);
    out.push_str("\"/>\n");
}

fn push_loc(out: &mut String, loc: &str) {
    out.push_str("  <url>\n    <loc>");
    crate::xml_write::push_text(out, loc);
    out.push_str("</loc>\n");
}

fn seconds(t: DateTime<Utc>) -> String {
    let mut s = String::with_capacity(24);
    push_w3cdtf(&mut s, t.trunc_subsecs(0));
    s
}

fn hash(d: &Sha256Digest) -> String {
    format!("sha-256:{}", d.to_hex())
}

/// The Source Description: one capability list.
pub fn source_description(capability_list: &str) -> String {
    let mut out = String::from(HEAD);
    push_md(&mut out, "  ", &[("capability", "description")]);
    push_loc(&mut out, capability_list);
    push_md(&mut out, "    ", &[("capability", "capabilitylist")]);
    out.push_str("  </url>\n");
    out.push_str(TAIL);
    out
}

/// A Capability List: `up` is the Source Description; a notification channel names the
/// WebSub `hub` its topic is pushed by.
pub fn capability_list(up: &str, hub: Option<&str>, entries: &[(Capability, &str)]) -> String {
    let mut out = String::from(HEAD);
    push_ln(&mut out, "  ", "up", up);
    push_md(&mut out, "  ", &[("capability", "capabilitylist")]);
    for (capability, loc) in entries {
        push_loc(&mut out, loc);
        push_md(&mut out, "    ", &[("capability", capability.as_str())]);
        if let (Capability::ChangeListNotification | Capability::FrameworkNotification, Some(hub)) =
            (capability, hub)
        {
            push_ln(&mut out, "    ", "hub", hub);
        }
        out.push_str("  </url>\n");
    }
    out.push_str(TAIL);
    out
}

/// A Resource List (or, with [`Capability::ResourceDumpManifest`], a dump's manifest, where
/// each resource names its `path` in the package) of `resources` at `at`.
pub fn resource_list<'a>(
    capability: Capability,
    up: &str,
    at: DateTime<Utc>,
    resources: impl IntoIterator<Item = (&'a Resource, Option<&'a str>)>,
) -> String {
    let mut out = String::from(HEAD);
    push_ln(&mut out, "  ", "up", up);
    push_md(
        &mut out,
        "  ",
        &[("capability", capability.as_str()), ("at", &seconds(at))],
    );
    for (r, path) in resources {
        push_loc(&mut out, &r.loc);
        out.push_str("    <lastmod>");
        out.push_str(&seconds(r.lastmod));
        out.push_str("</lastmod>\n");
        let length = r.length.to_string();
        let hash = hash(&r.sha256);
        let mut attrs = vec![
            ("hash", hash.as_str()),
            ("length", length.as_str()),
            ("type", r.media_type.as_str()),
        ];
        if let Some(p) = path {
            attrs.push(("path", p));
        }
        push_md(&mut out, "    ", &attrs);
        out.push_str("  </url>\n");
    }
    out.push_str(TAIL);
    out
}

/// A Resource List index naming its `parts` (each a Resource List of at most [`MAX_URLS`]).
pub fn resource_list_index(up: &str, at: DateTime<Utc>, parts: &[String]) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n",
    );
    push_ln(&mut out, "  ", "up", up);
    push_md(
        &mut out,
        "  ",
        &[("capability", "resourcelist"), ("at", &seconds(at))],
    );
    for p in parts {
        out.push_str("  <sitemap>\n    <loc>");
        crate::xml_write::push_text(&mut out, p);
        out.push_str("</loc>\n  </sitemap>\n");
    }
    out.push_str("</sitemapindex>\n");
    out
}

/// A Change List of `changes` (oldest first) from `from` on.
pub fn change_list(up: &str, from: DateTime<Utc>, changes: &[ChangeItem]) -> String {
    let mut out = String::from(HEAD);
    push_ln(&mut out, "  ", "up", up);
    push_md(
        &mut out,
        "  ",
        &[("capability", "changelist"), ("from", &seconds(from))],
    );
    push_changes(&mut out, changes);
    out.push_str(TAIL);
    out
}

/// A Change Notification (ResourceSync Change Notification 1.0.1): `changes` as a hub pushes
/// them on a `changelist-notification` channel.
pub fn change_notification(changes: &[ChangeItem]) -> String {
    let mut out = String::from(HEAD);
    push_md(&mut out, "  ", &[("capability", "changelist-notification")]);
    push_changes(&mut out, changes);
    out.push_str(TAIL);
    out
}

/// A Framework Notification: the document at `loc` (of `capability`) was updated at `at`; a
/// destination that missed changes reads it again (a new Resource List after a gap).
pub fn framework_notification(loc: &str, capability: Capability, at: DateTime<Utc>) -> String {
    let mut out = String::from(HEAD);
    push_md(&mut out, "  ", &[("capability", "framework-notification")]);
    push_loc(&mut out, loc);
    push_md(
        &mut out,
        "    ",
        &[
            ("capability", capability.as_str()),
            ("change", "updated"),
            ("datetime", &seconds(at)),
        ],
    );
    out.push_str("  </url>\n");
    out.push_str(TAIL);
    out
}

fn push_changes(out: &mut String, changes: &[ChangeItem]) {
    for c in changes {
        push_loc(out, &c.loc);
        let datetime = seconds(c.datetime);
        out.push_str("    <lastmod>");
        out.push_str(&datetime);
        out.push_str("</lastmod>\n");
        match &c.content {
            Some((sha, length, media_type)) => {
                let (hash, length) = (hash(sha), length.to_string());
                push_md(
                    out,
                    "    ",
                    &[
                        ("change", c.change.as_str()),
                        ("datetime", &datetime),
                        ("hash", &hash),
                        ("length", &length),
                        ("type", media_type),
                    ],
                );
            }
            None => push_md(
                out,
                "    ",
                &[("change", c.change.as_str()), ("datetime", &datetime)],
            ),
        }
        out.push_str("  </url>\n");
    }
}

/// A Resource Dump: one package (a ZIP file at `package`, of `length` bytes and digest `sha`)
/// holding the resources at `at`.
pub fn resource_dump(
    up: &str,
    at: DateTime<Utc>,
    package: &str,
    sha: &Sha256Digest,
    length: u64,
) -> String {
    let mut out = String::from(HEAD);
    push_ln(&mut out, "  ", "up", up);
    push_md(
        &mut out,
        "  ",
        &[("capability", "resourcedump"), ("at", &seconds(at))],
    );
    push_loc(&mut out, package);
    out.push_str("    <lastmod>");
    out.push_str(&seconds(at));
    out.push_str("</lastmod>\n");
    let (hash, length) = (hash(sha), length.to_string());
    push_md(
        &mut out,
        "    ",
        &[
            ("type", "application/zip"),
            ("hash", &hash),
            ("length", &length),
        ],
    );
    out.push_str("  </url>\n");
    out.push_str(TAIL);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn documents_carry_the_terms_clients_read() {
        let at = Utc.timestamp_millis_opt(1_800_000_000_250).unwrap();
        let r = Resource {
            loc: "https://e.org/a&b.html".into(),
            lastmod: at,
            sha256: Sha256Digest::of(b"x"),
            length: 1,
            media_type: "text/html".into(),
        };
        let list = resource_list(
            Capability::ResourceList,
            "https://e.org/cl.xml",
            at,
            [(&r, None)],
        );
        assert!(list.contains("<rs:md capability=\"resourcelist\" at=\"2027-01-15T08:00:00Z\"/>"));
        assert!(
            list.contains("<loc>https://e.org/a&amp;b.html</loc>"),
            "{list}"
        );
        assert!(list.contains(&format!(
            "hash=\"sha-256:{}\"",
            Sha256Digest::of(b"x").to_hex()
        )));
        let changes = change_list(
            "https://e.org/cl.xml",
            at,
            &[ChangeItem {
                loc: "https://e.org/gone.html".into(),
                change: Change::Deleted,
                datetime: at,
                content: None,
            }],
        );
        assert!(changes.contains("<rs:md change=\"deleted\" datetime=\"2027-01-15T08:00:00Z\"/>"));
        let sd = source_description("https://e.org/cl.xml");
        assert!(sd.contains("capability=\"description\""));
    }
}

//! Telling which of our formats a document is, from its first element.

use crate::compression::is_gzip;
use quick_xml::events::Event;
use quick_xml::reader::NsReader;

/// The documents this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentKind {
    /// RSS 1.0 (`rdf:RDF`): robots.rdf.
    RobotsRdf,
    /// A sitemaps.org `urlset` or `sitemapindex` (plain or gzip).
    Sitemap,
    /// An Atom `feed`: the changes feed.
    ChangesFeed,
    /// An RFC 9842 dcz delta.
    DczDelta,
}

/// Guesses the kind of `bytes` from magic bytes or the root element's local name, without
/// validating anything; `None` when it is none of ours.
pub fn sniff(bytes: &[u8]) -> Option<DocumentKind> {
    if is_gzip(bytes) {
        return Some(DocumentKind::Sitemap);
    }
    if bytes.starts_with(&crate::delta::dcz::MAGIC) {
        return Some(DocumentKind::DczDelta);
    }
    let mut reader = NsReader::from_reader(bytes);
    // The root comes within the first few events (declaration, comments, DTD).
    for _ in 0..64 {
        match reader.read_event().ok()? {
            Event::Start(e) | Event::Empty(e) => {
                return match e.local_name().as_ref() {
                    "RDF" => Some(DocumentKind::RobotsRdf),
                    "urlset" | "sitemapindex" => Some(DocumentKind::Sitemap),
                    "feed" => Some(DocumentKind::ChangesFeed),
                    _ => None,
                };
            }
            Event::Eof => return None,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffs_each_kind() {
        assert_eq!(
            sniff(b"<?xml version=\"1.0\"?>\n<!-- c --><rdf:RDF xmlns:rdf=\"x\"/>"),
            Some(DocumentKind::RobotsRdf)
        );
        assert_eq!(sniff(b"<urlset/>"), Some(DocumentKind::Sitemap));
        assert_eq!(sniff(b"<sitemapindex/>"), Some(DocumentKind::Sitemap));
        assert_eq!(
            sniff(b"<feed xmlns=\"http://www.w3.org/2005/Atom\">"),
            Some(DocumentKind::ChangesFeed)
        );
        assert_eq!(
            sniff(&crate::compression::gzip(b"<urlset/>", 1)),
            Some(DocumentKind::Sitemap)
        );
        assert_eq!(
            sniff(&crate::delta::dcz::encode(b"a", b"b", 1).unwrap()),
            Some(DocumentKind::DczDelta)
        );
        assert_eq!(sniff(b"<html><body/></html>"), None);
        assert_eq!(sniff(b"plain text"), None);
        assert_eq!(sniff(b""), None);
    }
}

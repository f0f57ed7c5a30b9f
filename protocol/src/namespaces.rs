//! XML namespace names used by the formats (each with its exact spelling: RDF's ends in `#`).

/// RDF syntax (`rdf:RDF`, `rdf:about`, `rdf:Seq`, `rdf:li`, `rdf:resource`).
pub const RDF: &str = "http://www.w3.org/1999/02/22-rdf-syntax-ns#";
/// RSS 1.0 core (`channel`, `item`, `title`, `link`, `items`).
pub const RSS1: &str = "http://purl.org/rss/1.0/";
/// Dublin Core elements 1.1 (`dc:date`, `dc:format`), the RSS 1.0 mod_dublincore module.
pub const DC: &str = "http://purl.org/dc/elements/1.1/";
/// Dublin Core terms (`dcterms:modified`), accepted when reading robots.rdf written by others.
pub const DCTERMS: &str = "http://purl.org/dc/terms/";
/// RSS 1.0 mod_syndication (`sy:updatePeriod`, `sy:updateFrequency`, `sy:updateBase`).
pub const SY: &str = "http://purl.org/rss/1.0/modules/syndication/";
/// Atom 1.0 (RFC 4287).
pub const ATOM: &str = "http://www.w3.org/2005/Atom";
/// sitemaps.org protocol 0.9.
pub const SITEMAP: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";
/// webcoop's own elements (`wc:size`, `wc:etag`, `wc:seq`, `wc:delta`, ...).
pub const WEBCOOP: &str = "https://webcoop.dev/ns/1.0#";
/// Scheme of the Atom `category` that says what kind of change an entry is.
pub const CHANGE_SCHEME: &str = "https://webcoop.dev/ns/1.0#change";

/// The namespaces this crate reads, as a cheap tag instead of a string compare per element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ns {
    Rdf,
    Rss1,
    Dc,
    DcTerms,
    Sy,
    Atom,
    Sitemap,
    Webcoop,
    /// No namespace at all (an unprefixed name without a default namespace in scope).
    None,
    /// A namespace none of the formats use.
    Other,
}

impl Ns {
    pub(crate) fn from_uri(uri: &str) -> Ns {
        match uri {
            RDF => Ns::Rdf,
            RSS1 => Ns::Rss1,
            DC => Ns::Dc,
            DCTERMS => Ns::DcTerms,
            SY => Ns::Sy,
            ATOM => Ns::Atom,
            SITEMAP => Ns::Sitemap,
            WEBCOOP => Ns::Webcoop,
            _ => Ns::Other,
        }
    }
}

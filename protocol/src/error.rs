//! Errors of the document parsers: each names the format, what was wrong and where.

use std::fmt;

/// Which document a parser was reading, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `robots.rdf` (RSS 1.0).
    RobotsRdf,
    /// A sitemaps.org `urlset` or `sitemapindex`.
    Sitemap,
    /// The Atom changes feed.
    ChangesFeed,
    /// The changes feed as CBOR (webcoop hub to webcoop subscriber).
    ChangesCbor,
    /// An XML-RPC update ping (`weblogUpdates.ping`).
    XmlRpcPing,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::RobotsRdf => "robots.rdf",
            Format::Sitemap => "sitemap",
            Format::ChangesFeed => "changes feed",
            Format::ChangesCbor => "CBOR changes feed",
            Format::XmlRpcPing => "XML-RPC ping",
        })
    }
}

/// Why a document could not be read. Never a panic: every malformed input ends here.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    /// The bytes are not well-formed XML.
    #[error("{format}: not well-formed XML near byte {position}: {message}")]
    Xml {
        /// Document being read.
        format: Format,
        /// Byte offset where the reader stopped.
        position: u64,
        /// The XML reader's description.
        message: String,
    },
    /// The document stops before its root element is closed.
    #[error("{format}: document ends inside <{open_element}> (truncated?)")]
    Truncated {
        /// Document being read.
        format: Format,
        /// The innermost element still open at the end.
        open_element: String,
    },
    /// A reference to an entity other than the five XML ones (`&lt;` ...) or a character
    /// reference. DTD entities are never expanded: this is how billion-laughs documents end.
    #[error(
        "{format}: entity reference &{name}; is not allowed (only &lt; &gt; &amp; &apos; &quot; and character references)"
    )]
    UndefinedEntity {
        /// Document being read.
        format: Format,
        /// The entity's name.
        name: String,
    },
    /// The root element is not the one the format requires (name or namespace).
    #[error("{format}: root element is <{found}> in namespace {found_ns:?}, expected {expected}")]
    WrongRoot {
        /// Document being read.
        format: Format,
        /// Local name found.
        found: String,
        /// Namespace found (empty when none).
        found_ns: String,
        /// What the format requires, e.g. `<rdf:RDF> in http://www.w3.org/1999/02/22-rdf-syntax-ns#`.
        expected: &'static str,
    },
    /// A required element or attribute is absent.
    #[error("{format}: {context} lacks {missing}")]
    Missing {
        /// Document being read.
        format: Format,
        /// Where, e.g. `item 17` or `channel`.
        context: String,
        /// What, e.g. `<link>`.
        missing: &'static str,
    },
    /// A value that does not parse (a date, URL, number, entity tag).
    #[error("{format}: {context}: bad {field} {value:?}: {reason}")]
    BadValue {
        /// Document being read.
        format: Format,
        /// Where, e.g. `item 17`.
        context: String,
        /// Which field, e.g. `<dc:date>`.
        field: &'static str,
        /// The offending text (cut to 200 characters).
        value: String,
        /// Why it was refused.
        reason: String,
    },
    /// The document is larger than a limit (bytes, items, nesting, decompressed size).
    #[error("{format}: {what} exceeds the limit of {limit}")]
    Limit {
        /// Document being read.
        format: Format,
        /// What was counted.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// The compressed document is corrupt.
    #[error("{format}: cannot decompress: {message}")]
    Decompress {
        /// Document being read.
        format: Format,
        /// The decoder's description.
        message: String,
    },
    /// The document contradicts itself (e.g. an item missing from the channel's table of contents).
    #[error("{format}: {message}")]
    Inconsistent {
        /// Document being read.
        format: Format,
        /// What does not agree.
        message: String,
    },
}

/// A [`ParseError::BadValue`] with its value cut by [`excerpt`].
pub(crate) fn bad_value(
    format: Format,
    context: &str,
    field: &'static str,
    value: &str,
    reason: impl ToString,
) -> ParseError {
    ParseError::BadValue {
        format,
        context: context.to_string(),
        field,
        value: excerpt(value),
        reason: reason.to_string(),
    }
}

/// Cuts an offending value for an error message so a huge bad input does not make a huge error.
pub(crate) fn excerpt(value: &str) -> String {
    const MAX: usize = 200;
    if value.len() <= MAX {
        return value.to_string();
    }
    let mut end = MAX;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &value[..end])
}

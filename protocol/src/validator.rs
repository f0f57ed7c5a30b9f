//! Validators: what identifies a version of a resource on the wire.
//!
//! Two digests serve two purposes. [`Sha256Digest`] is the one protocols name: the strong entity
//! tag of a version is derived from it, and RFC 9842 names a dictionary (the version a client
//! holds) by it. [`FastDigest`] (XXH3-64) is for the agent's own change detection, where only
//! "did these bytes change" matters and SHA-256 would be wasted work.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use sha2::{Digest, Sha256};
use std::fmt;
use std::str::FromStr;

/// SHA-256 of a version's exact bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha256Digest(pub [u8; 32]);

impl Sha256Digest {
    /// Digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Sha256Digest(Sha256::digest(bytes).into())
    }

    /// The strong entity tag of the version with this digest: `"` + base64url(SHA-256) + `"`.
    pub fn etag(&self) -> EntityTag {
        EntityTag {
            weak: false,
            tag: URL_SAFE_NO_PAD.encode(self.0),
        }
    }

    /// Appends the characters of [`Sha256Digest::etag`] between its quotes, without allocating.
    pub fn push_etag_tag(&self, out: &mut String) {
        URL_SAFE_NO_PAD.encode_string(self.0, out);
    }

    /// The digest an entity tag of ours carries, if it is one of ours.
    pub fn from_etag(etag: &EntityTag) -> Option<Self> {
        let bytes = URL_SAFE_NO_PAD.decode(etag.tag.as_bytes()).ok()?;
        bytes.try_into().ok().map(Sha256Digest)
    }

    /// Lowercase hex, as the `X-Hub-Signature` and log lines write digests.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The value of an RFC 9842 `Available-Dictionary` header: a structured-field byte
    /// sequence, `:` + base64(SHA-256) + `:`.
    pub fn to_structured_field(&self) -> String {
        format!(":{}:", STANDARD.encode(self.0))
    }

    /// Parses an `Available-Dictionary` header value (RFC 9842 §2.2, RFC 8941 byte sequence).
    pub fn from_structured_field(value: &str) -> Result<Self, ValidatorError> {
        let inner = value
            .trim()
            .strip_prefix(':')
            .and_then(|v| v.strip_suffix(':'))
            .ok_or_else(|| ValidatorError::new(value, "a byte sequence is written :base64:"))?;
        let bytes = STANDARD
            .decode(inner)
            .map_err(|e| ValidatorError::new(value, format!("bad base64: {e}")))?;
        let len = bytes.len();
        bytes
            .try_into()
            .map(Sha256Digest)
            .map_err(|_| ValidatorError::new(value, format!("{len} bytes, a SHA-256 is 32")))
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Digest({})", self.to_hex())
    }
}

/// SHA-256 over data that arrives in pieces (files too large to hold in memory).
#[derive(Debug, Clone, Default)]
pub struct Sha256Stream(Sha256);

impl Sha256Stream {
    /// Adds bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The digest of everything added.
    pub fn finish(self) -> Sha256Digest {
        Sha256Digest(self.0.finalize().into())
    }
}

/// XXH3-64 of a version's bytes: the agent's cheap "did this change" check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FastDigest(pub u64);

impl FastDigest {
    /// Digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        FastDigest(xxhash_rust::xxh3::xxh3_64(bytes))
    }
}

/// An HTTP entity tag (RFC 9110 §8.8.3): an opaque quoted string, strong or weak (`W/`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EntityTag {
    /// `W/` prefix: the tag only promises semantic equivalence.
    pub weak: bool,
    /// The characters between the quotes.
    pub tag: String,
}

/// Why a validator or header value could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad validator {value:?}: {reason}")]
pub struct ValidatorError {
    /// The offending text.
    pub value: String,
    /// Why.
    pub reason: String,
}

impl ValidatorError {
    fn new(value: &str, reason: impl Into<String>) -> Self {
        ValidatorError {
            value: crate::error::excerpt(value),
            reason: reason.into(),
        }
    }
}

fn is_etagc(c: char) -> bool {
    // etagc = %x21 / %x23-7E / obs-text; obs-text (%x80-FF) is bytes, so any non-ASCII char.
    c == '!' || ('#'..='~').contains(&c) || !c.is_ascii()
}

impl EntityTag {
    /// A strong tag; `tag` must not contain `"`, controls or spaces.
    pub fn strong(tag: impl Into<String>) -> Result<Self, ValidatorError> {
        let tag = tag.into();
        match tag.chars().find(|c| !is_etagc(*c)) {
            Some(c) => Err(ValidatorError::new(
                &tag,
                format!("{c:?} is not allowed in an entity tag"),
            )),
            None => Ok(EntityTag { weak: false, tag }),
        }
    }

    /// Strong comparison (RFC 9110 §8.8.3.2): both strong and the same characters.
    pub fn strong_eq(&self, other: &EntityTag) -> bool {
        !self.weak && !other.weak && self.tag == other.tag
    }

    /// Weak comparison: the same characters, whatever the `W/` prefixes.
    pub fn weak_eq(&self, other: &EntityTag) -> bool {
        self.tag == other.tag
    }
}

impl fmt::Display for EntityTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.weak {
            f.write_str("W/")?;
        }
        write!(f, "\"{}\"", self.tag)
    }
}

impl FromStr for EntityTag {
    type Err = ValidatorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let (weak, rest) = match t.strip_prefix("W/") {
            Some(rest) => (true, rest),
            None => (false, t),
        };
        let inner = rest
            .strip_prefix('"')
            .and_then(|r| r.strip_suffix('"'))
            .ok_or_else(|| ValidatorError::new(s, "an entity tag is a quoted string"))?;
        let mut etag = EntityTag::strong(inner).map_err(|e| ValidatorError::new(s, e.reason))?;
        etag.weak = weak;
        Ok(etag)
    }
}

/// The value of an `If-None-Match` request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfNoneMatch {
    /// `*`: any current representation.
    Any,
    /// A list of entity tags.
    Tags(Vec<EntityTag>),
}

impl IfNoneMatch {
    /// Parses `*` or a comma-separated list of entity tags (commas inside quotes are part of a tag).
    pub fn parse(value: &str) -> Result<Self, ValidatorError> {
        let v = value.trim();
        if v == "*" {
            return Ok(IfNoneMatch::Any);
        }
        let mut tags = Vec::new();
        let mut rest = v;
        loop {
            rest = rest.trim_start_matches([' ', '\t', ',']);
            if rest.is_empty() {
                break;
            }
            let start_quote = if rest.starts_with("W/") { 2 } else { 0 };
            if !rest[start_quote..].starts_with('"') {
                return Err(ValidatorError::new(value, "expected a quoted entity tag"));
            }
            let close = rest[start_quote + 1..]
                .find('"')
                .ok_or_else(|| ValidatorError::new(value, "unterminated entity tag"))?
                + start_quote
                + 1;
            tags.push(rest[..=close].parse::<EntityTag>()?);
            rest = &rest[close + 1..];
            let next = rest.trim_start_matches([' ', '\t']);
            if !(next.is_empty() || next.starts_with(',')) {
                return Err(ValidatorError::new(
                    value,
                    "entity tags must be separated by commas",
                ));
            }
        }
        if tags.is_empty() {
            return Err(ValidatorError::new(value, "no entity tag"));
        }
        Ok(IfNoneMatch::Tags(tags))
    }

    /// Whether a representation with `current` as its tag matches (weak comparison, as RFC 9110
    /// §13.1.2 specifies for If-None-Match): a match means "answer 304".
    pub fn matches(&self, current: &EntityTag) -> bool {
        match self {
            IfNoneMatch::Any => true,
            IfNoneMatch::Tags(tags) => tags.iter().any(|t| t.weak_eq(current)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_of_content_is_strong_and_reversible() {
        let d = Sha256Digest::of(b"hello");
        let etag = d.etag();
        assert!(!etag.weak);
        assert_eq!(etag.tag.len(), 43);
        assert_eq!(Sha256Digest::from_etag(&etag), Some(d));
        assert_eq!(etag.to_string().parse::<EntityTag>().unwrap(), etag);
        assert_ne!(Sha256Digest::of(b"hello!").etag(), etag);
    }

    #[test]
    fn available_dictionary_header_matches_rfc9842_example_shape() {
        let d = Sha256Digest::of(b"dictionary");
        let sf = d.to_structured_field();
        assert!(sf.starts_with(':') && sf.ends_with(':'));
        assert_eq!(Sha256Digest::from_structured_field(&sf).unwrap(), d);
        // The example value of RFC 9842 §2.2 decodes to 32 bytes.
        assert!(
            Sha256Digest::from_structured_field(":pZGm1Av0IEBKARczz7exkNYsZb8LzaMrV7J32a2fFG4=:")
                .is_ok()
        );
        assert!(Sha256Digest::from_structured_field("pZGm1Av0").is_err());
        assert!(Sha256Digest::from_structured_field(":aGVsbG8=:").is_err());
        assert!(Sha256Digest::from_structured_field(":!!:").is_err());
    }

    #[test]
    fn entity_tags_parse_and_compare_as_rfc9110_says() {
        let strong: EntityTag = "\"xyzzy\"".parse().unwrap();
        let weak: EntityTag = "W/\"xyzzy\"".parse().unwrap();
        assert!(weak.weak && !strong.weak);
        assert!(strong.weak_eq(&weak));
        assert!(!strong.strong_eq(&weak));
        assert!(strong.strong_eq(&strong.clone()));
        assert_eq!(weak.to_string(), "W/\"xyzzy\"");
        for bad in [
            "xyzzy",
            "\"xy\"zzy\"",
            "W/xyzzy",
            "\"a b\"",
            "\"unterminated",
        ] {
            assert!(bad.parse::<EntityTag>().is_err(), "{bad}");
        }
        assert_eq!("\"\"".parse::<EntityTag>().unwrap().tag, "");
    }

    #[test]
    fn if_none_match_lists() {
        let current: EntityTag = "\"b\"".parse().unwrap();
        assert!(IfNoneMatch::parse("*").unwrap().matches(&current));
        let list = IfNoneMatch::parse("\"a\", W/\"b\" ,\"c,d\"").unwrap();
        assert_eq!(
            list,
            IfNoneMatch::Tags(vec![
                "\"a\"".parse().unwrap(),
                "W/\"b\"".parse().unwrap(),
                "\"c,d\"".parse().unwrap()
            ])
        );
        assert!(list.matches(&current));
        assert!(!IfNoneMatch::parse("\"a\"").unwrap().matches(&current));
        for bad in ["", "a", "\"a\" \"b\"", "\"a", ","] {
            assert!(IfNoneMatch::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn streamed_digest_equals_one_shot() {
        let mut s = Sha256Stream::default();
        s.update(b"hel");
        s.update(b"lo");
        assert_eq!(s.finish(), Sha256Digest::of(b"hello"));
    }

    #[test]
    fn fast_digest_tells_changes_apart() {
        assert_eq!(FastDigest::of(b"abc"), FastDigest::of(b"abc"));
        assert_ne!(FastDigest::of(b"abc"), FastDigest::of(b"abd"));
    }
}

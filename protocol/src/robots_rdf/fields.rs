//! Reading one field of robots.rdf: a URL or a date, or the error naming what was wrong.

use crate::dates::parse_w3cdtf;
use crate::error::{Format, ParseError, bad_value};
use chrono::{DateTime, Utc};
use url::Url;

/// The format every error of this module names.
pub(super) const FORMAT: Format = Format::RobotsRdf;

/// A field whose value could not be taken, and why.
pub(super) fn bad(
    context: &str,
    field: &'static str,
    value: &str,
    reason: impl ToString,
) -> ParseError {
    bad_value(FORMAT, context, field, value, reason)
}

/// A URL field.
pub(super) fn parse_url(context: &str, field: &'static str, text: &str) -> Result<Url, ParseError> {
    Url::parse(text.trim()).map_err(|e| bad(context, field, text, e))
}

/// A W3C-DTF date field.
pub(super) fn parse_date(
    context: &str,
    field: &'static str,
    text: &str,
) -> Result<DateTime<Utc>, ParseError> {
    parse_w3cdtf(text).map_err(|e| bad(context, field, text, e))
}

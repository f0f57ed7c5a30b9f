//! Dates on the wire: W3C-DTF (sitemaps, Dublin Core, Atom's RFC 3339 subset) and HTTP-date,
//! and how much to trust a timestamp a server claims.

use chrono::{
    DateTime, Datelike, FixedOffset, NaiveDate, NaiveTime, Offset, SecondsFormat, TimeZone, Utc,
};
use std::time::SystemTime;

/// Why a date string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a {expected} date: {reason}")]
pub struct DateError {
    /// Which syntax was expected (`W3C-DTF`, `HTTP`).
    pub expected: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

fn w3c_err(reason: impl Into<String>) -> DateError {
    DateError {
        expected: "W3C-DTF",
        reason: reason.into(),
    }
}

/// Formats a time as W3C-DTF in UTC: `2026-11-21T10:00:00Z`, with fractional seconds only
/// when the time has them. This is also valid RFC 3339, as Atom requires.
pub fn format_w3cdtf(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Appends `t` as W3C-DTF (same output as [`format_w3cdtf`]) without allocating: the
/// writers call this once per item of documents with hundreds of thousands of items.
pub fn push_w3cdtf(out: &mut String, t: DateTime<Utc>) {
    use chrono::Timelike;
    let year = t.year();
    if !(0..=9999).contains(&year) {
        out.push_str(&format_w3cdtf(t));
        return;
    }
    let two = |out: &mut String, n: u32| {
        out.push(char::from(b'0' + (n / 10) as u8));
        out.push(char::from(b'0' + (n % 10) as u8));
    };
    let y = year as u32;
    two(out, y / 100);
    two(out, y % 100);
    out.push('-');
    two(out, t.month());
    out.push('-');
    two(out, t.day());
    out.push('T');
    two(out, t.hour());
    out.push(':');
    two(out, t.minute());
    out.push(':');
    // A leap second is stored as 59 s + 1e9 ns.
    let nanos = t.nanosecond();
    two(out, t.second() + nanos / 1_000_000_000);
    let frac = nanos % 1_000_000_000;
    if frac != 0 {
        // Same digits as chrono's AutoSi: milli, micro or nanoseconds.
        let (value, width) = if frac.is_multiple_of(1_000_000) {
            (frac / 1_000_000, 3)
        } else if frac.is_multiple_of(1_000) {
            (frac / 1_000, 6)
        } else {
            (frac, 9)
        };
        out.push('.');
        let digits = format!("{value:0width$}");
        out.push_str(&digits);
    }
    out.push('Z');
}

/// Parses every granularity of the W3C-DTF profile of ISO 8601: `YYYY`, `YYYY-MM`, `YYYY-MM-DD`,
/// `YYYY-MM-DDThh:mmTZD`, `YYYY-MM-DDThh:mm:ssTZD` and `YYYY-MM-DDThh:mm:ss.sTZD`, where TZD is
/// `Z` or `+hh:mm`/`-hh:mm`. Dates without a time are midnight UTC. Surrounding whitespace is
/// ignored; a time without a zone designator is refused (the profile requires it).
pub fn parse_w3cdtf(text: &str) -> Result<DateTime<Utc>, DateError> {
    let s = text.trim();
    let b = s.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Result<u32, DateError> {
        let part = s
            .get(range.clone())
            .ok_or_else(|| w3c_err(format!("{s:?} is too short")))?;
        if part.is_empty() || !part.bytes().all(|c| c.is_ascii_digit()) {
            return Err(w3c_err(format!(
                "expected digits at {}..{} of {s:?}",
                range.start, range.end
            )));
        }
        part.parse::<u32>().map_err(|e| w3c_err(e.to_string()))
    };
    let expect = |at: usize, ch: u8| -> Result<(), DateError> {
        if b.get(at) == Some(&ch) {
            Ok(())
        } else {
            Err(w3c_err(format!(
                "expected {:?} at byte {at} of {s:?}",
                ch as char
            )))
        }
    };
    let year = digits(0..4)? as i32;
    if b.len() == 4 {
        return date_at_midnight(year, 1, 1, s);
    }
    expect(4, b'-')?;
    let month = digits(5..7)?;
    if b.len() == 7 {
        return date_at_midnight(year, month, 1, s);
    }
    expect(7, b'-')?;
    let day = digits(8..10)?;
    if b.len() == 10 {
        return date_at_midnight(year, month, day, s);
    }
    expect(10, b'T')?;
    let hour = digits(11..13)?;
    expect(13, b':')?;
    let minute = digits(14..16)?;
    let mut pos = 16;
    let mut second = 0;
    let mut nanos = 0;
    if b.get(pos) == Some(&b':') {
        second = digits(17..19)?;
        pos = 19;
        if b.get(pos) == Some(&b'.') {
            let start = pos + 1;
            let mut end = start;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            if end == start {
                return Err(w3c_err(format!("a decimal point without digits in {s:?}")));
            }
            // Keep nanosecond precision; further digits cannot be represented and are dropped.
            let frac = &s[start..end.min(start + 9)];
            nanos = frac.parse::<u32>().map_err(|e| w3c_err(e.to_string()))?
                * 10u32.pow(9 - frac.len() as u32);
            pos = end;
        }
    }
    let offset = parse_tzd(&s[pos..], s)?;
    let date = NaiveDate::from_ymd_opt(year, month, day)
        .ok_or_else(|| w3c_err(format!("{s:?} is not a calendar date")))?;
    // A leap second (60) is legal W3C-DTF; chrono represents it as 59 s + 1e9 ns.
    let (second, nanos) = if second == 60 {
        (59, nanos + 1_000_000_000)
    } else {
        (second, nanos)
    };
    let time = NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)
        .ok_or_else(|| w3c_err(format!("{s:?} is not a time of day")))?;
    offset
        .from_local_datetime(&date.and_time(time))
        .single()
        .map(|t| t.with_timezone(&Utc))
        .ok_or_else(|| w3c_err(format!("{s:?} is out of range")))
}

fn date_at_midnight(year: i32, month: u32, day: u32, s: &str) -> Result<DateTime<Utc>, DateError> {
    NaiveDate::from_ymd_opt(year, month, day)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|t| Utc.from_utc_datetime(&t))
        .ok_or_else(|| w3c_err(format!("{s:?} is not a calendar date")))
}

fn parse_tzd(tzd: &str, whole: &str) -> Result<FixedOffset, DateError> {
    match tzd.as_bytes() {
        [b'Z'] | [b'z'] => Ok(Utc.fix()),
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2]
            if [h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()) =>
        {
            let hours = i32::from((h1 - b'0') * 10 + (h2 - b'0'));
            let minutes = i32::from((m1 - b'0') * 10 + (m2 - b'0'));
            if hours > 23 || minutes > 59 {
                return Err(w3c_err(format!(
                    "time zone {tzd:?} out of range in {whole:?}"
                )));
            }
            let secs = (hours * 60 + minutes) * 60;
            let secs = if *sign == b'-' { -secs } else { secs };
            FixedOffset::east_opt(secs)
                .ok_or_else(|| w3c_err(format!("bad time zone in {whole:?}")))
        }
        [] => Err(w3c_err(format!(
            "{whole:?} has a time but no time zone (Z or +hh:mm)"
        ))),
        _ => Err(w3c_err(format!(
            "bad time zone designator {tzd:?} in {whole:?}"
        ))),
    }
}

/// Formats an HTTP-date (IMF-fixdate, RFC 9110 §5.6.7): `Sat, 21 Nov 2026 10:00:00 GMT`.
/// Sub-second precision is dropped, as the format has none.
pub fn format_http_date(t: DateTime<Utc>) -> String {
    httpdate::fmt_http_date(SystemTime::from(t))
}

/// Parses an HTTP-date in any of the three forms RFC 9110 requires recipients to accept
/// (IMF-fixdate, obsolete RFC 850, asctime).
pub fn parse_http_date(text: &str) -> Result<DateTime<Utc>, DateError> {
    httpdate::parse_http_date(text.trim())
        .map(DateTime::<Utc>::from)
        .map_err(|e| DateError {
            expected: "HTTP",
            reason: format!("{:?}: {e}", crate::error::excerpt(text)),
        })
}

/// How far a server's claimed timestamp can be believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampTrust {
    /// Plausible: use it as it is.
    Trusted(DateTime<Utc>),
    /// Up to a day in the future (clock skew, time zone bugs): read as "now".
    ClampedToNow(DateTime<Utc>),
    /// Before 1993, before the Web was in general use: a default or broken clock.
    BeforeWeb,
    /// More than a day in the future: not a real modification time.
    FarFuture,
}

impl TimestampTrust {
    /// The time to use, if any.
    pub fn usable(self) -> Option<DateTime<Utc>> {
        match self {
            TimestampTrust::Trusted(t) | TimestampTrust::ClampedToNow(t) => Some(t),
            TimestampTrust::BeforeWeb | TimestampTrust::FarFuture => None,
        }
    }
}

/// Sanitises a server timestamp as Castillo's WIRE does (thesis App. A): before 1993 it is
/// ignored, up to 24 hours ahead of `now` it is clamped to `now`, further ahead it is ignored.
pub fn sanitize_server_time(claimed: DateTime<Utc>, now: DateTime<Utc>) -> TimestampTrust {
    if claimed.year() < 1993 {
        TimestampTrust::BeforeWeb
    } else if claimed <= now {
        TimestampTrust::Trusted(claimed)
    } else if claimed - now <= chrono::Duration::hours(24) {
        TimestampTrust::ClampedToNow(now)
    } else {
        TimestampTrust::FarFuture
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .unwrap()
    }

    #[test]
    fn every_w3cdtf_granularity_parses() {
        assert_eq!(parse_w3cdtf("1997").unwrap(), utc("1997-01-01T00:00:00Z"));
        assert_eq!(
            parse_w3cdtf("1997-07").unwrap(),
            utc("1997-07-01T00:00:00Z")
        );
        assert_eq!(
            parse_w3cdtf("1997-07-16").unwrap(),
            utc("1997-07-16T00:00:00Z")
        );
        assert_eq!(
            parse_w3cdtf("1997-07-16T19:20+01:00").unwrap(),
            utc("1997-07-16T18:20:00Z")
        );
        assert_eq!(
            parse_w3cdtf("1997-07-16T19:20:30+01:00").unwrap(),
            utc("1997-07-16T18:20:30Z")
        );
        assert_eq!(
            parse_w3cdtf("1997-07-16T19:20:30.45+01:00").unwrap(),
            utc("1997-07-16T18:20:30.45Z")
        );
        assert_eq!(
            parse_w3cdtf(" 2004-12-31T23:59:59Z\n").unwrap(),
            utc("2004-12-31T23:59:59Z")
        );
        assert_eq!(
            parse_w3cdtf("2004-12-31T20:00:00-05:30").unwrap(),
            utc("2005-01-01T01:30:00Z")
        );
    }

    #[test]
    fn bad_w3cdtf_is_refused_with_a_reason() {
        for bad in [
            "",
            "97",
            "1997-13",
            "1997-02-30",
            "1997-07-16T19:20",
            "1997-07-16T25:00Z",
            "1997-07-16T19:20:30.Z",
            "1997-07-16 19:20:30Z",
            "1997-07-16T19:20:30+0100",
            "1997-07-16T19:20:30+24:00",
            "yesterday",
            "2004-12-31T23:59:59Zjunk",
        ] {
            let err = parse_w3cdtf(bad).unwrap_err();
            assert_eq!(err.expected, "W3C-DTF", "{bad:?}");
        }
    }

    #[test]
    fn w3cdtf_round_trips_with_and_without_fractions() {
        let t = utc("2026-11-21T10:00:00Z");
        assert_eq!(format_w3cdtf(t), "2026-11-21T10:00:00Z");
        let t = utc("2026-11-21T10:00:00.25Z");
        assert_eq!(format_w3cdtf(t), "2026-11-21T10:00:00.250Z");
        assert_eq!(parse_w3cdtf(&format_w3cdtf(t)).unwrap(), t);
    }

    #[test]
    fn push_w3cdtf_matches_format_w3cdtf() {
        for s in [
            "2026-11-21T10:00:00Z",
            "0999-01-02T03:04:05Z",
            "2026-11-21T10:00:00.25Z",
            "2026-11-21T10:00:00.000001Z",
            "2026-11-21T10:00:00.123456789Z",
        ] {
            let t = utc(s);
            let mut out = String::new();
            push_w3cdtf(&mut out, t);
            assert_eq!(out, format_w3cdtf(t), "{s}");
        }
    }

    #[test]
    fn http_dates_in_all_three_forms() {
        let t = utc("1994-11-06T08:49:37Z");
        assert_eq!(format_http_date(t), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap(), t);
        assert_eq!(
            parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT").unwrap(),
            t
        );
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994").unwrap(), t);
        assert!(parse_http_date("06/11/1994").is_err());
    }

    #[test]
    fn server_times_are_sanitised_as_the_thesis_does() {
        let now = utc("2026-11-21T12:00:00Z");
        assert_eq!(
            sanitize_server_time(utc("1992-12-31T23:59:59Z"), now),
            TimestampTrust::BeforeWeb
        );
        assert_eq!(
            sanitize_server_time(utc("1993-01-01T00:00:00Z"), now).usable(),
            Some(utc("1993-01-01T00:00:00Z"))
        );
        assert_eq!(
            sanitize_server_time(utc("2026-11-22T11:00:00Z"), now),
            TimestampTrust::ClampedToNow(now)
        );
        assert_eq!(
            sanitize_server_time(utc("2026-11-22T12:00:01Z"), now),
            TimestampTrust::FarFuture
        );
        assert_eq!(sanitize_server_time(now, now), TimestampTrust::Trusted(now));
    }
}

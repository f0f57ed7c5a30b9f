//! The `X-Robots-Tag` response header: the same `noindex`, `nofollow` and `none` as
//! `<meta name="robots">`, for any media type, and optionally for one crawler only
//! (`X-Robots-Tag: otherbot: nofollow`). The field may come several times, and a value may
//! switch crawler midway (`googlebot: nofollow, otherbot: noindex`).

/// What the header asks of this crawler.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RobotsTag {
    /// Keep the page out of an index.
    pub(crate) noindex: bool,
    /// Follow none of its links.
    pub(crate) nofollow: bool,
}

/// Directives that carry a value after a colon; anything else before a colon names a crawler.
const WITH_VALUE: &[&str] = &[
    "unavailable_after",
    "max-snippet",
    "max-image-preview",
    "max-video-preview",
];

/// Whether `s` can be a crawler's product token (letters, digits, `-`, `_`, `.`).
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// What the `X-Robots-Tag` fields `values` ask of the crawler whose product token is `agent`:
/// directives for no crawler in particular and those for `agent` (case-insensitively).
pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>, agent: &str) -> RobotsTag {
    let mut tag = RobotsTag::default();
    for value in values {
        // Each field starts for every crawler.
        let mut applies = true;
        for item in value.split(',') {
            let mut directive = item.trim();
            if let Some((before, after)) = directive.split_once(':') {
                let before = before.trim();
                if WITH_VALUE.iter().any(|d| before.eq_ignore_ascii_case(d)) {
                    continue;
                }
                if !is_token(before) {
                    // A piece of a date or of something unknown: nothing we act on.
                    continue;
                }
                applies = before.eq_ignore_ascii_case(agent);
                directive = after.trim();
            }
            if !applies {
                continue;
            }
            if directive.eq_ignore_ascii_case("noindex") {
                tag.noindex = true;
            } else if directive.eq_ignore_ascii_case("nofollow") {
                tag.nofollow = true;
            } else if directive.eq_ignore_ascii_case("none") {
                tag.noindex = true;
                tag.nofollow = true;
            }
        }
    }
    tag
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: &str = "webcoop-crawl";

    fn tag(values: &[&str]) -> RobotsTag {
        parse(values.iter().copied(), US)
    }

    #[test]
    fn directives_for_every_crawler() {
        assert_eq!(tag(&[]), RobotsTag::default());
        assert!(tag(&["nofollow"]).nofollow);
        assert!(!tag(&["nofollow"]).noindex);
        assert_eq!(
            tag(&["NoIndex , NOFOLLOW"]),
            RobotsTag {
                noindex: true,
                nofollow: true
            }
        );
        assert_eq!(tag(&["none"]), tag(&["noindex, nofollow"]));
        assert_eq!(tag(&["all"]), RobotsTag::default());
        // Several fields add up.
        assert_eq!(tag(&["noindex", "nofollow"]), tag(&["none"]));
    }

    #[test]
    fn directives_for_one_crawler_apply_only_to_it() {
        assert!(tag(&["webcoop-crawl: nofollow"]).nofollow);
        assert!(tag(&["WebCoop-Crawl:nofollow"]).nofollow);
        assert!(!tag(&["otherbot: nofollow"]).nofollow);
        assert!(!tag(&["otherbot: noindex, nofollow"]).nofollow);
        // A new field is for every crawler again.
        assert!(tag(&["otherbot: noindex", "nofollow"]).nofollow);
        // A value switching crawler midway.
        let t = tag(&["otherbot: noindex, webcoop-crawl: nofollow"]);
        assert_eq!((t.noindex, t.nofollow), (false, true));
        let t = tag(&["webcoop-crawl: noindex, otherbot: nofollow"]);
        assert_eq!((t.noindex, t.nofollow), (true, false));
    }

    #[test]
    fn values_with_colons_and_garbage_do_not_switch_crawler_or_panic() {
        let t = tag(&["unavailable_after: Sunday, 01-Sep-2030 15:00:00 GMT, nofollow"]);
        assert!(t.nofollow, "the date's colons and commas are passed over");
        assert!(tag(&["max-snippet: 20, noindex"]).noindex);
        for junk in [
            "",
            ",,,",
            ":",
            "::nofollow",
            "\u{0}nofollow",
            "webcoop-crawl",
            "a b: nofollow",
            &"x".repeat(100_000),
            &format!("{}: nofollow", "a".repeat(65)),
        ] {
            let t = tag(&[junk]);
            assert!(!t.nofollow && !t.noindex, "{junk:.40}");
        }
    }
}

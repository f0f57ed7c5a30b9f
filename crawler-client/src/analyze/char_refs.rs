//! Character references in an attribute value, decoded as the HTML standard's tokenizer does
//! ("Character reference state" with an attribute value as the return state): the longest
//! name of the standard's table (html-escape's copy of `entities.json`), the legacy names
//! also without `;`, but not when a `=` or a letter or digit follows such a name (`?a=1&copy=2`
//! keeps its `&copy=`); numeric references with 0, surrogates and numbers past U+10FFFF as
//! U+FFFD and 0x80-0x9F as the windows-1252 characters; and U+0000 as U+FFFD.

use html_escape::NAMED_ENTITIES;
use std::borrow::Cow;

/// The names a page may write without `;` (the standard's table's entries without it).
const LEGACY: &[&str] = &[
    "AElig", "AMP", "Aacute", "Acirc", "Agrave", "Aring", "Atilde", "Auml", "COPY", "Ccedil",
    "ETH", "Eacute", "Ecirc", "Egrave", "Euml", "GT", "Iacute", "Icirc", "Igrave", "Iuml", "LT",
    "Ntilde", "Oacute", "Ocirc", "Ograve", "Oslash", "Otilde", "Ouml", "QUOT", "REG", "THORN",
    "Uacute", "Ucirc", "Ugrave", "Uuml", "Yacute", "aacute", "acirc", "acute", "aelig", "agrave",
    "amp", "aring", "atilde", "auml", "brvbar", "ccedil", "cedil", "cent", "copy", "curren", "deg",
    "divide", "eacute", "ecirc", "egrave", "eth", "euml", "frac12", "frac14", "frac34", "gt",
    "iacute", "icirc", "iexcl", "igrave", "iquest", "iuml", "laquo", "lt", "macr", "micro",
    "middot", "nbsp", "not", "ntilde", "oacute", "ocirc", "ograve", "ordf", "ordm", "oslash",
    "otilde", "ouml", "para", "plusmn", "pound", "quot", "raquo", "reg", "sect", "shy", "sup1",
    "sup2", "sup3", "szlig", "thorn", "times", "uacute", "ucirc", "ugrave", "uml", "uuml",
    "yacute", "yen", "yuml",
];

/// The longest name in the table.
const NAME_MAX: usize = 32;

fn named(name: &[u8]) -> Option<&'static str> {
    // The names pages use most, before a binary search of 2,125 (a tenth of a link-heavy
    // page's extraction was spent comparing names).
    let common = match name {
        b"amp" => Some("&"),
        b"lt" => Some("<"),
        b"gt" => Some(">"),
        b"quot" => Some("\""),
        b"nbsp" => Some("\u{A0}"),
        _ => None,
    };
    if common.is_some() {
        return common;
    }
    NAMED_ENTITIES
        .binary_search_by(|(n, _)| (*n).cmp(name))
        .ok()
        .map(|i| NAMED_ENTITIES[i].1)
}

/// `value` (an attribute's value) with its character references decoded.
pub(crate) fn decode_attribute(value: &str) -> Cow<'_, str> {
    if memchr::memchr2(b'&', b'\0', value.as_bytes()).is_none() {
        return Cow::Borrowed(value);
    }
    let b = value.as_bytes();
    let mut out = String::with_capacity(value.len());
    let mut i = 0;
    // Bytes up to `copied` are in `out`; only ASCII is ever consumed as a reference, so every
    // cut is at a character boundary.
    let mut copied = 0;
    while i < b.len() {
        match b[i] {
            b'\0' => {
                out.push_str(&value[copied..i]);
                out.push('\u{FFFD}');
                i += 1;
                copied = i;
            }
            b'&' => {
                if let Some((text, len)) = reference(&b[i + 1..]) {
                    out.push_str(&value[copied..i]);
                    out.push_str(&text);
                    i += 1 + len;
                    copied = i;
                } else {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&value[copied..]);
    Cow::Owned(out)
}

/// The reference starting after a `&` in an attribute value: its text and the bytes it
/// took; none where the `&` stays as written.
fn reference(b: &[u8]) -> Option<(Cow<'static, str>, usize)> {
    match b.first()? {
        b'#' => numeric(&b[1..]).map(|(c, len)| (Cow::Owned(c.to_string()), 1 + len)),
        c if c.is_ascii_alphanumeric() => {
            let run = b
                .iter()
                .take(NAME_MAX + 1)
                .take_while(|c| c.is_ascii_alphanumeric())
                .count();
            if b.get(run) == Some(&b';')
                && let Some(text) = named(&b[..run])
            {
                return Some((Cow::Borrowed(text), run + 1));
            }
            // The longest legacy name the run begins with, unless what follows it would make
            // it part of a query (`=`, or a letter or digit).
            let legacy = (1..=run.min(6)).rev().find(|len| {
                LEGACY
                    .binary_search_by(|l| l.as_bytes().cmp(&b[..*len]))
                    .is_ok()
            })?;
            let next = b.get(legacy);
            if next.is_some_and(|c| *c == b'=' || c.is_ascii_alphanumeric()) {
                return None;
            }
            named(&b[..legacy]).map(|text| (Cow::Borrowed(text), legacy))
        }
        _ => None,
    }
}

/// A numeric reference after `&#`: its character and the bytes it took.
fn numeric(b: &[u8]) -> Option<(char, usize)> {
    let (hex, start) = match b.first() {
        Some(b'x' | b'X') => (true, 1),
        _ => (false, 0),
    };
    let digits = b[start..]
        .iter()
        .take_while(|c| {
            if hex {
                c.is_ascii_hexdigit()
            } else {
                c.is_ascii_digit()
            }
        })
        .count();
    if digits == 0 {
        return None;
    }
    let radix = if hex { 16 } else { 10 };
    // Past U+10FFFF the value only needs to be known too large.
    let n = b[start..start + digits].iter().fold(0u32, |n, c| {
        let d = (*c as char).to_digit(radix).unwrap_or(0);
        n.saturating_mul(radix).saturating_add(d)
    });
    let mut len = start + digits;
    if b.get(len) == Some(&b';') {
        len += 1;
    }
    let c = match n {
        0 => '\u{FFFD}',
        0x80..=0x9F => {
            let byte = [n as u8];
            let (text, _) = encoding_rs::WINDOWS_1252.decode_without_bom_handling(&byte);
            text.chars().next().unwrap_or('\u{FFFD}')
        }
        n => char::from_u32(n).unwrap_or('\u{FFFD}'),
    };
    Some((c, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_decode_as_the_standard_says() {
        let d = |s: &str| decode_attribute(s).into_owned();
        assert_eq!(d("/a?x=1&amp;y=2"), "/a?x=1&y=2");
        assert_eq!(d("/caf&eacute;"), "/café");
        // Legacy names decode without `;`, but not before `=` or a letter or digit.
        assert_eq!(d("/a?x=&copy"), "/a?x=©");
        assert_eq!(d("/a?x=1&copy=2"), "/a?x=1&copy=2");
        assert_eq!(d("/a?x=1&copyx"), "/a?x=1&copyx");
        assert_eq!(d("/a?&not;in"), "/a?¬in");
        assert_eq!(d("/a?&notin"), "/a?&notin");
        assert_eq!(d("/a?&notin;"), "/a?∉");
        assert_eq!(d("/a?&not-x"), "/a?¬-x");
        // Not a name: left as written.
        assert_eq!(d("/a?&zz;&"), "/a?&zz;&");
        // Numbers: 0 and out of range become U+FFFD; 0x80-0x9F the windows-1252 characters.
        assert_eq!(d("/&#0;x"), "/\u{FFFD}x");
        assert_eq!(d("/&#x80;"), "/€");
        assert_eq!(d("/&#x81;"), "/\u{81}");
        assert_eq!(d("/&#150;"), "/–");
        assert_eq!(d("/&#xD800;"), "/\u{FFFD}");
        assert_eq!(d("/&#99999999999999;"), "/\u{FFFD}");
        assert_eq!(d("/&#65"), "/A");
        assert_eq!(d("/&#x;"), "/&#x;");
        assert_eq!(d("/a\0b"), "/a\u{FFFD}b");
        assert_eq!(d("/é&amp;é"), "/é&é");
    }

    #[test]
    fn the_legacy_names_are_in_the_table() {
        assert!(
            LEGACY.windows(2).all(|w| w[0] < w[1]),
            "sorted, for the search"
        );
        for name in LEGACY {
            assert!(named(name.as_bytes()).is_some(), "{name}");
            assert!(name.len() <= 6, "{name}");
        }
        assert!(NAMED_ENTITIES.iter().all(|(n, _)| n.len() <= NAME_MAX));
    }
}

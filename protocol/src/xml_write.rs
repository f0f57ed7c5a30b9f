//! Escaping for the document writers: text and attribute values that every XML 1.0 parser
//! reads back exactly.
//!
//! quick-xml's `escape` covers `& < > ' "` but not what XML 1.0 cannot carry literally: a bare
//! `\r` (normalised to `\n` by readers), tabs and newlines in attributes (normalised to spaces)
//! and control characters (not allowed at all). Those are written as character references or,
//! for the forbidden ones, replaced by U+FFFD.

/// Whether `c` may appear in an XML 1.0 document (the `Char` production).
pub(crate) fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// Whether `bytes` hold anything [`push_escaped`] must change. Written as a branch-free fold,
/// separately for text and attributes, so the compiler vectorises it: most text (URLs, paths,
/// dates) has nothing to escape and is copied as it is.
fn needs_escaping<const IN_ATTR: bool>(bytes: &[u8]) -> bool {
    bytes.iter().fold(false, |acc, &b| {
        let control = if IN_ATTR {
            b < 0x20
        } else {
            (b < 0x20) & (b != b'\t') & (b != b'\n')
        };
        let quote = IN_ATTR & ((b == b'"') | (b == b'\''));
        acc | control | quote | (b == b'&') | (b == b'<') | (b == b'>') | (b == 0xEF)
    })
}

fn push_escaped(out: &mut String, s: &str, in_attr: bool) {
    let bytes = s.as_bytes();
    let clean = if in_attr {
        !needs_escaping::<true>(bytes)
    } else {
        !needs_escaping::<false>(bytes)
    };
    if clean {
        out.push_str(s);
        return;
    }
    // Everything that needs escaping is ASCII, except U+FFFE and U+FFFF (EF BF BE/BF in UTF-8),
    // so a byte scan finds candidates and only those are decoded.
    let special = |b: u8| match b {
        b'&' | b'<' | b'>' | b'\r' | 0xEF => true,
        b'"' | b'\'' | b'\n' | b'\t' => in_attr,
        0..=0x1F => true,
        _ => false,
    };
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !special(b) {
            i += 1;
            continue;
        }
        let replacement = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' => "&apos;",
            b'\r' => "&#13;",
            b'\n' => "&#10;",
            b'\t' => "&#9;",
            0xEF => {
                if bytes.get(i + 1) == Some(&0xBF) && matches!(bytes.get(i + 2), Some(0xBE | 0xBF))
                {
                    out.push_str(&s[start..i]);
                    out.push('\u{FFFD}');
                    i += 3;
                    start = i;
                } else {
                    i += 1;
                }
                continue;
            }
            _ => "\u{FFFD}",
        };
        out.push_str(&s[start..i]);
        out.push_str(replacement);
        i += 1;
        start = i;
    }
    out.push_str(&s[start..]);
}

/// Appends `s` as element text.
pub(crate) fn push_text(out: &mut String, s: &str) {
    push_escaped(out, s, false);
}

/// Appends `s` as a double-quoted attribute value (without the quotes).
pub(crate) fn push_attr(out: &mut String, s: &str) {
    push_escaped(out, s, true);
}

/// Appends `<name>text</name>` on its own line, indented.
pub(crate) fn leaf(out: &mut String, indent: &str, name: &str, text: &str) {
    out.push_str(indent);
    out.push('<');
    out.push_str(name);
    out.push('>');
    push_text(out, text);
    out.push_str("</");
    out.push_str(name);
    out.push_str(">\n");
}

/// Appends `<name attr="value"/>` on its own line, indented.
pub(crate) fn empty_with_attr(out: &mut String, indent: &str, name: &str, attr: &str, value: &str) {
    out.push_str(indent);
    out.push('<');
    out.push_str(name);
    out.push(' ');
    out.push_str(attr);
    out.push_str("=\"");
    push_attr(out, value);
    out.push_str("\"/>\n");
}

/// Replaces what XML 1.0 cannot carry, so a writer's caller can know what will be read back.
pub fn xml_safe(s: &str) -> String {
    s.chars()
        .map(|c| if is_xml_char(c) { c } else { '\u{FFFD}' })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_scan_agrees_with_the_char_rules() {
        let samples = [
            "plain ascii",
            "\u{FFFE}x\u{FFFF}y\u{FFFD}z\u{EFFF}",
            "é日本\u{1F600}\u{0}\u{1F}\u{7F}\u{80}",
            "tab\there\nline\r\n",
            "&<>\"'",
        ];
        let ascii: String = (0u8..128).map(char::from).collect();
        let singles: Vec<String> = (0u8..128).map(|b| char::from(b).to_string()).collect();
        for s in samples
            .iter()
            .copied()
            .chain([ascii.as_str()])
            .chain(singles.iter().map(String::as_str))
        {
            for in_attr in [false, true] {
                let mut fast = String::new();
                push_escaped(&mut fast, s, in_attr);
                let mut slow = String::new();
                for c in s.chars() {
                    match c {
                        '&' => slow.push_str("&amp;"),
                        '<' => slow.push_str("&lt;"),
                        '>' => slow.push_str("&gt;"),
                        '\r' => slow.push_str("&#13;"),
                        '"' if in_attr => slow.push_str("&quot;"),
                        '\'' if in_attr => slow.push_str("&apos;"),
                        '\n' if in_attr => slow.push_str("&#10;"),
                        '\t' if in_attr => slow.push_str("&#9;"),
                        c if !is_xml_char(c) => slow.push('\u{FFFD}'),
                        c => slow.push(c),
                    }
                }
                assert_eq!(fast, slow, "{s:?} in_attr={in_attr}");
            }
        }
    }

    #[test]
    fn escapes_what_xml_would_otherwise_change() {
        let mut out = String::new();
        push_text(&mut out, "a<b>&c\r\n\"'\u{1}");
        assert_eq!(out, "a&lt;b&gt;&amp;c&#13;\n\"'\u{FFFD}");
        let mut out = String::new();
        push_attr(&mut out, "x\"y'\t\n");
        assert_eq!(out, "x&quot;y&apos;&#9;&#10;");
    }
}

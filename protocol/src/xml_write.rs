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

fn push_escaped(out: &mut String, s: &str, in_attr: bool) {
    let needs = |c: char| {
        matches!(c, '&' | '<' | '>' | '\r')
            || (in_attr && matches!(c, '"' | '\'' | '\n' | '\t'))
            || !is_xml_char(c)
    };
    let mut rest = s;
    while let Some(pos) = rest.find(needs) {
        out.push_str(&rest[..pos]);
        let c = rest[pos..].chars().next().unwrap_or('\u{FFFD}');
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push_str("&#9;"),
            _ => out.push('\u{FFFD}'),
        }
        rest = &rest[pos + c.len_utf8()..];
    }
    out.push_str(rest);
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
    fn escapes_what_xml_would_otherwise_change() {
        let mut out = String::new();
        push_text(&mut out, "a<b>&c\r\n\"'\u{1}");
        assert_eq!(out, "a&lt;b&gt;&amp;c&#13;\n\"'\u{FFFD}");
        let mut out = String::new();
        push_attr(&mut out, "x\"y'\t\n");
        assert_eq!(out, "x&quot;y&apos;&#9;&#10;");
    }
}

//! What of a generated page does not count as a change: parts a server writes anew for every
//! request, which no reader would call an edit.
//!
//! The rule, applied to text only (HTML, XML, JSON, scripts), before the page's change digest:
//! - **HTML comments** are left out (`<!-- generated in 0.12 s -->`, cache plugins' stamps);
//! - the **value of any key whose name contains `nonce`, `csrf`, `xsrf` or `token`** is left out,
//!   in all the forms a page carries one: `key=value` (query strings, attributes), `"key":
//!   "value"` (JSON, scripts), and a hidden `<input name="..." value="...">` or `<meta
//!   name="..." content="...">` in either attribute order.
//!
//! Everything else counts: a page whose text, links or markup moved is changed. The page as
//! served, volatile parts and all, is still what is kept and published; only the decision
//! "did it change" ignores them.

use regex::bytes::Regex;
use std::sync::LazyLock;

/// Names of keys whose values are per-request secrets.
const SECRET: &str = r"[A-Za-z0-9_\-]*(?:nonce|csrf|xsrf|token)[A-Za-z0-9_\-]*";

static COMMENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)<!--.*?-->").unwrap_or_else(|_| unreachable_rule()));
static KEY_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r#"(?i)({SECRET})(\\?["']?\s*[:=]\s*\\?["']?)[A-Za-z0-9+/_.%\-]+"#
    ))
    .unwrap_or_else(|_| unreachable_rule())
});
static NAME_THEN_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r#"(?i)(name=["']{SECRET}["'][^>]*?\b(?:value|content)=["'])[^"']*"#
    ))
    .unwrap_or_else(|_| unreachable_rule())
});
static VALUE_THEN_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r#"(?i)(\b(?:value|content)=["'])[^"']*(["'][^>]*?name=["']{SECRET}["'])"#
    ))
    .unwrap_or_else(|_| unreachable_rule())
});

/// The rules are constants checked by the tests; a failure to compile one is a bug here.
fn unreachable_rule() -> Regex {
    // Matches nothing: the page is then digested whole, which is never wrong, only strict.
    Regex::new(r"[^\s\S]").unwrap_or_else(|_| std::process::abort())
}

/// The page with its volatile parts left out, for the change digest (`text` says whether its
/// media type is text; other bodies are taken whole).
pub(crate) fn stable_part(body: &[u8], text: bool) -> std::borrow::Cow<'_, [u8]> {
    if !text {
        return std::borrow::Cow::Borrowed(body);
    }
    let out = COMMENT.replace_all(body, &b""[..]);
    let out = KEY_VALUE.replace_all(&out, &b"${1}${2}_"[..]).into_owned();
    let out = NAME_THEN_VALUE
        .replace_all(&out, &b"${1}_"[..])
        .into_owned();
    let out = VALUE_THEN_NAME
        .replace_all(&out, &b"${1}_${2}"[..])
        .into_owned();
    std::borrow::Cow::Owned(out)
}

/// The change digest: XXH3-64 of the stable part.
pub(crate) fn change_digest(body: &[u8], text: bool) -> u64 {
    xxhash_rust::xxh3::xxh3_64(&stable_part(body, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(nonce: &str, token: &str, stamp: &str, text: &str) -> String {
        format!(
            r#"<html><head><meta name="csrf-token" content="{token}">
<script>var wpApiSettings = {{"root":"http:\/\/blog.test\/wp-json\/","nonce":"{nonce}"}};</script>
<!-- Dynamic page generated in {stamp} seconds. --></head><body>
<form><input type="hidden" id="_wpnonce" name="_wpnonce" value="{nonce}" />
<input value="{token}" type="hidden" name="authenticity_token"></form>
<a href="/wp-admin/post.php?action=edit&amp;_wpnonce={nonce}">edit</a>
<p>{text}</p></body></html>"#
        )
    }

    #[test]
    fn pages_differing_only_in_nonces_tokens_and_comments_are_the_same() {
        let a = page("3f9a1c2b7d", "tok-AAAA1111", "0.123", "Hello world.");
        let b = page("88e0d4aa01", "tok-BBBB2222", "0.456", "Hello world.");
        assert_ne!(a, b);
        assert_eq!(
            change_digest(a.as_bytes(), true),
            change_digest(b.as_bytes(), true)
        );
    }

    #[test]
    fn an_edit_is_a_change_wherever_it_is() {
        let a = page("n1", "t1", "0.1", "Hello world.");
        for edited in [
            page("n1", "t1", "0.1", "Hello world!"),
            a.replace("href=\"/wp-admin", "href=\"/elsewhere"),
            a.replace("<p>", "<p class=\"x\">"),
        ] {
            assert_ne!(
                change_digest(a.as_bytes(), true),
                change_digest(edited.as_bytes(), true)
            );
        }
        // A word that merely contains "token" in the text is text, not a secret.
        let t1 = "<p>The token ring was fast.</p>";
        let t2 = "<p>The token ring was slow.</p>";
        assert_ne!(
            change_digest(t1.as_bytes(), true),
            change_digest(t2.as_bytes(), true)
        );
        // Binary bodies are taken whole.
        assert_ne!(
            change_digest(b"<!--a-->", false),
            change_digest(b"<!--b-->", false)
        );
    }
}

//! Apache's request variables and expressions (`ap_expr`: `<If>`, `Require expr`,
//! `RewriteCond expr`) read for one question: could the outcome differ between the judge and
//! a stranger asking for the same URL? Variables of the URL and the server are the same for
//! everyone; the client's address, headers, cookies, environment and the time are not, and
//! neither is anything not known here.

/// Server variables that are the same for every client asking for a given URL (the judge
/// sends the site's own `Host`; a listed URL has no query).
#[rustfmt::skip]
const SAME_FOR_ALL: &[&str] = &[
    "request_uri", "request_filename", "script_filename", "script_name", "script_url",
    "script_uri", "document_root", "document_uri", "http_host", "server_name", "server_port",
    "server_addr", "https", "request_scheme", "path_info", "request_method", "context_prefix",
    "context_document_root", "server_admin", "server_software", "api_version", "query_string",
    "is_subreq", "request_filename", "handler",
];

/// Functions of `ap_expr` whose result depends only on their arguments or on files.
#[rustfmt::skip]
const PURE_FUNCTIONS: &[&str] = &[
    "tolower", "toupper", "escape", "unescape", "base64", "unbase64", "md5", "sha1", "file",
    "filemod", "filesize", "replace", "split", "join", "strlen",
];

/// Operators of `ap_expr` that test who asks (the client's address, or a subrequest made as
/// the client).
const WHO_ASKS_OPERATORS: &[&str] = &["-r", "-ipmatch", "-a", "-u"];

/// Whether a variable name (as in `%{NAME}`) is the same for every client.
fn same_for_all(var: &str) -> bool {
    SAME_FOR_ALL.contains(&var.to_ascii_lowercase().as_str())
}

/// The first thing in a mod_rewrite test string or substitution that may differ between
/// clients (`%{REMOTE_ADDR}`, `%{HTTP:X-Forwarded-For}`, `%{ENV:x}`, a map lookup
/// `${map:...}`), if any.
pub(crate) fn rewrite_who_asks(arg: &str) -> Option<String> {
    let mut rest = arg;
    while let Some(start) = rest.find("%{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Some(format!("{arg} (an unclosed %{{)"));
        };
        let var = &after[..end];
        if !same_for_all(var) {
            return Some(format!("%{{{var}}}"));
        }
        rest = &after[end + 1..];
    }
    // A RewriteMap lookup (`${name:key}`): maps can be random or programs.
    if let Some(i) = arg.find("${")
        && arg[i..].contains(':')
    {
        return Some(format!("the map lookup in {arg}"));
    }
    None
}

/// The first thing in an `ap_expr` expression that may differ between clients, if any.
pub(crate) fn expr_who_asks(expr: &str) -> Option<String> {
    let bytes = expr.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let b = bytes[i];
        if let Some(q) = quote {
            if b == b'\\' {
                i += 2;
                continue;
            }
            if b == q {
                quote = None;
            } else if b == b'%' && bytes.get(i + 1) == Some(&b'{') {
                // Variables are interpolated inside strings too.
                if let Some(v) = variable_at(expr, i) {
                    return Some(v);
                }
            }
            i += 1;
            continue;
        }
        match b {
            b'"' | b'\'' => quote = Some(b),
            b'%' if bytes.get(i + 1) == Some(&b'{') => {
                if let Some(v) = variable_at(expr, i) {
                    return Some(v);
                }
            }
            b'-' if i == 0 || !bytes[i - 1].is_ascii_alphanumeric() => {
                let word: String = expr[i + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .collect();
                let op = format!("-{}", word.to_ascii_lowercase());
                if WHO_ASKS_OPERATORS.contains(&op.as_str()) {
                    return Some(format!("the operator {op}"));
                }
            }
            b if b.is_ascii_alphabetic() => {
                let word: String = expr[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let after = expr[i + word.len()..].trim_start();
                if after.starts_with('(')
                    && !PURE_FUNCTIONS.contains(&word.to_ascii_lowercase().as_str())
                {
                    return Some(format!("the function {word}()"));
                }
                i += word.len();
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The variable `%{...}` at `i`, if it may differ between clients.
fn variable_at(expr: &str, i: usize) -> Option<String> {
    let after = &expr[i + 2..];
    let Some(end) = after.find('}') else {
        return Some("an unclosed %{".into());
    };
    let var = &after[..end];
    (!same_for_all(var)).then(|| format!("%{{{var}}}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions_that_name_who_asks_are_found() {
        for e in [
            "-R '127.0.0.1/32'",
            "-R '10.0.0.0/8' || %{REQUEST_URI} =~ /x/",
            "%{REMOTE_ADDR} == '127.0.0.1'",
            "%{REMOTE_ADDR} -ipmatch '10.0.0.0/8'",
            "req('X-Forwarded-For') =~ /^10\\./",
            "%{HTTP_USER_AGENT} =~ /bot/",
            "reqenv('local') == '1'",
            "'%{REMOTE_ADDR}' == '::1'",
            "%{TIME_HOUR} < 9",
            "-A '/private/'",
        ] {
            assert!(expr_who_asks(e).is_some(), "{e}");
        }
        for e in [
            "%{REQUEST_URI} =~ m#^/docs/#",
            "-f %{REQUEST_FILENAME}",
            "%{HTTPS} != 'on'",
            "tolower(%{HTTP_HOST}) == 'www.example.org'",
            "%{QUERY_STRING} =~ /debug/",
            "-T '1'",
        ] {
            assert_eq!(expr_who_asks(e), None, "{e}");
        }
    }

    #[test]
    fn rewrite_arguments() {
        assert!(rewrite_who_asks("%{REMOTE_ADDR}").is_some());
        assert!(rewrite_who_asks("%{HTTP:X-Forwarded-For}").is_some());
        assert!(rewrite_who_asks("%{ENV:local}").is_some());
        assert!(rewrite_who_asks("${users:%{REQUEST_URI}}").is_some());
        assert_eq!(rewrite_who_asks("%{REQUEST_FILENAME}"), None);
        assert_eq!(rewrite_who_asks("^/old/(.*)$"), None);
        assert_eq!(rewrite_who_asks("/new/$1"), None);
    }
}

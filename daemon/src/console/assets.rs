//! The consoles' shared stylesheet and script, embedded in both binaries.

/// The stylesheet both consoles use.
pub const CSS: &str = include_str!("assets/console.css");

/// The script both consoles use: API calls, the live event stream, charts and tables.
pub const JS: &str = include_str!("assets/console.js");

/// A console's page: the head both share (stylesheet, the shared script and the console's own
/// `script`, titled after `binary`) around `body`, the console's `<header>` and `<main>`.
pub fn page(binary: &str, script: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{binary} console</title>\n\
         <link rel=\"stylesheet\" href=\"/assets/console.css\">\n\
         <script src=\"/assets/console.js\" defer></script>\n\
         <script src=\"/assets/{script}\" defer></script>\n</head>\n<body>\n{body}</body>\n</html>\n"
    )
}

/// `Content-Security-Policy` of every console page: scripts, styles and connections from the
/// console itself only, so nothing a crawled site or a file name puts in a table can run.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

#[cfg(test)]
mod tests {
    #[test]
    fn a_page_loads_the_shared_and_its_own_script() {
        let html = super::page("webcoop-x", "x.js", "<main>hi</main>\n");
        assert!(html.starts_with("<!doctype html>\n<html lang=\"en\">"));
        assert!(html.contains("<title>webcoop-x console</title>"));
        assert!(html.contains("<script src=\"/assets/console.js\" defer></script>"));
        assert!(html.contains("<script src=\"/assets/x.js\" defer></script>\n</head>"));
        assert!(html.ends_with("<body>\n<main>hi</main>\n</body>\n</html>\n"));
    }
}

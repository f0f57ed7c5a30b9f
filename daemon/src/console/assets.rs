//! The consoles' shared stylesheet and script, embedded in both binaries.

/// The stylesheet both consoles use.
pub const CSS: &str = include_str!("assets/console.css");

/// The script both consoles use: API calls, the live event stream, charts and tables.
pub const JS: &str = include_str!("assets/console.js");

/// `Content-Security-Policy` of every console page: scripts, styles and connections from the
/// console itself only, so nothing a crawled site or a file name puts in a table can run.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

//! Media types of files, and which are text (versioned for deltas) or binary (tracked only).

/// The media type a web server would send for `path`, from its extension.
pub(crate) fn of_path(path: &str) -> &'static str {
    // A directory's URL: the index page a server answers there (and a generated site's page).
    if path.is_empty() || path.ends_with('/') {
        return "text/html";
    }
    let ext = path.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    if ext.contains('/') {
        return "application/octet-stream";
    }
    mime_guess::from_ext(ext)
        .first_raw()
        .unwrap_or("application/octet-stream")
}

/// Whether a media type is text that deltas and diffs make sense for.
pub(crate) fn is_text(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.starts_with("text/")
        || essence.ends_with("+xml")
        || essence.ends_with("+json")
        || matches!(
            essence,
            "application/xml"
                | "application/json"
                | "application/javascript"
                | "application/x-javascript"
                | "application/ecmascript"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_by_extension() {
        assert_eq!(of_path("a/index.html"), "text/html");
        assert_eq!(of_path("style.css"), "text/css");
        assert_eq!(of_path("logo.png"), "image/png");
        assert_eq!(of_path("README"), "application/octet-stream");
        assert_eq!(of_path("dir.d/file"), "application/octet-stream");
        assert_eq!(of_path("2026/11/hello-world/"), "text/html");
        assert_eq!(of_path(""), "text/html");
        assert!(is_text(of_path("x.html")));
        assert!(is_text(of_path("x.svg")));
        assert!(is_text(of_path("x.json")));
        assert!(is_text("text/html; charset=utf-8"));
        assert!(!is_text(of_path("x.png")));
        assert!(!is_text(of_path("x.tar.gz")));
    }
}

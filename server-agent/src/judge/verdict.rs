//! What the web server's answer means for a file: public, refused (with the reason shown in
//! the log and the console), or no verdict at all when the server could not be asked.

use std::fmt;

/// The web server's judgment of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Answered 200 with exactly the file's bytes: the file is what anyone gets.
    Public,
    /// Anything else: the file is not published.
    Refused(Refusal),
    /// No answer to judge by (unreachable, timed out, busy): nothing changes until it answers.
    Unknown(String),
}

/// Why the server's answer refuses a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// A status other than 200 (and not a redirect).
    Status(u16),
    /// A redirect, and where to.
    Redirect(u16, String),
    /// 200, but not the file's bytes: the server runs it, or serves something else there.
    NotTheFile,
    /// 200 with a content coding although identity was asked.
    Coded(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Status(s) => write!(f, "the server answers {s}"),
            Refusal::Redirect(s, to) if to.is_empty() => write!(f, "the server answers {s}"),
            Refusal::Redirect(s, to) => write!(f, "the server answers {s} (to {to})"),
            Refusal::NotTheFile => {
                f.write_str("the server runs this file: its answer is not the file")
            }
            Refusal::Coded(c) => write!(
                f,
                "the server answers with {c} coding although identity was asked: not the file"
            ),
        }
    }
}

impl Refusal {
    /// The reason as stored and shown.
    pub(crate) fn reason(&self) -> String {
        self.to_string()
    }
}

/// Reads what a response says: `status`, its `Location`, its `Content-Encoding`, and whether
/// its body is the file's bytes (`same`, once read). 429 and 503 are a busy server, not a
/// verdict.
pub(crate) fn of_response(
    status: u16,
    location: Option<&str>,
    coding: Option<&str>,
    same: impl FnOnce() -> Result<bool, String>,
) -> Verdict {
    match status {
        200 => {
            if let Some(c) = coding
                .map(str::trim)
                .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("identity"))
            {
                return Verdict::Refused(Refusal::Coded(c.chars().take(40).collect()));
            }
            match same() {
                Ok(true) => Verdict::Public,
                Ok(false) => Verdict::Refused(Refusal::NotTheFile),
                Err(e) => Verdict::Unknown(e),
            }
        }
        429 | 503 => Verdict::Unknown(format!("the server is busy ({status})")),
        300..=399 => Verdict::Refused(Refusal::Redirect(
            status,
            location.unwrap_or("").chars().take(200).collect(),
        )),
        s => Verdict::Refused(Refusal::Status(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_file_itself_with_200_is_public() {
        assert_eq!(of_response(200, None, None, || Ok(true)), Verdict::Public);
        assert_eq!(
            of_response(200, None, Some("identity"), || Ok(true)),
            Verdict::Public
        );
        assert_eq!(
            of_response(200, None, None, || Ok(false)),
            Verdict::Refused(Refusal::NotTheFile)
        );
        assert_eq!(
            of_response(200, None, Some("gzip"), || Ok(true)),
            Verdict::Refused(Refusal::Coded("gzip".into()))
        );
        for s in [401, 403, 404, 410, 500, 502, 504, 206, 204] {
            assert_eq!(
                of_response(s, None, None, || Ok(true)),
                Verdict::Refused(Refusal::Status(s)),
                "{s}"
            );
        }
        assert_eq!(
            of_response(302, Some("/login"), None, || Ok(true)),
            Verdict::Refused(Refusal::Redirect(302, "/login".into()))
        );
        // A busy server or a body cut short decides nothing.
        assert!(matches!(
            of_response(503, None, None, || Ok(true)),
            Verdict::Unknown(_)
        ));
        assert!(matches!(
            of_response(429, None, None, || Ok(true)),
            Verdict::Unknown(_)
        ));
        assert!(matches!(
            of_response(200, None, None, || Err("reset".into())),
            Verdict::Unknown(_)
        ));
    }

    #[test]
    fn reasons_read_as_the_console_shows_them() {
        assert_eq!(Refusal::Status(403).reason(), "the server answers 403");
        assert_eq!(
            Refusal::NotTheFile.reason(),
            "the server runs this file: its answer is not the file"
        );
        assert_eq!(
            Refusal::Redirect(301, "https://e.org/a".into()).reason(),
            "the server answers 301 (to https://e.org/a)"
        );
        // A hostile Location header is cut, not copied whole into logs.
        let long = "x".repeat(10_000);
        let Verdict::Refused(r) = of_response(302, Some(&long), None, || Ok(true)) else {
            panic!()
        };
        assert!(r.reason().len() < 300);
    }
}

//! The site's change schedule: generated (each page a Poisson process, rates heavy-tailed so a
//! few pages change often and most rarely; small edits mostly, as on the real web) or read
//! from a trace file.
//!
//! Trace format, one edit per line, `#` starts a comment:
//!
//! ```text
//! # seconds-since-start  kind     path
//! 12.5                   edit     /p/17.html
//! 3600                   rewrite  /p/3.html
//! 7200                   create   /new/page.html
//! 9000                   delete   /p/4.html
//! ```
//!
//! `edit` changes a sentence, `rewrite` a third of the page; times are simulated seconds.

use rand::{RngExt, SeedableRng};

/// What happens to a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EditKind {
    /// A sentence changes.
    Edit,
    /// A third of the page is rewritten.
    Rewrite,
    /// The page appears.
    Create,
    /// The page goes.
    Delete,
}

impl EditKind {
    /// The word of the trace format.
    pub fn as_str(self) -> &'static str {
        match self {
            EditKind::Edit => "edit",
            EditKind::Rewrite => "rewrite",
            EditKind::Create => "create",
            EditKind::Delete => "delete",
        }
    }
}

/// One edit of the site.
#[derive(Debug, Clone, PartialEq)]
pub struct Edit {
    /// Simulated seconds since the start.
    pub at: f64,
    /// What happens.
    pub kind: EditKind,
    /// The page's path, from `/`.
    pub path: String,
}

/// A bad line of a trace.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("trace line {line}: {why}")]
pub struct TraceError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub why: String,
}

/// Reads a trace; edits come back in time order.
pub fn parse_trace(text: &str) -> Result<Vec<Edit>, TraceError> {
    let mut edits = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: String| TraceError { line: i + 1, why };
        let mut words = line.split_whitespace();
        let (Some(at), Some(kind), Some(path), None) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            return Err(bad(format!("expected `SECONDS KIND PATH`, found {line:?}")));
        };
        let at: f64 = at
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| bad(format!("{at:?} is not a time in seconds")))?;
        let kind = match kind {
            "edit" => EditKind::Edit,
            "rewrite" => EditKind::Rewrite,
            "create" => EditKind::Create,
            "delete" => EditKind::Delete,
            other => {
                return Err(bad(format!(
                    "{other:?} is not one of edit, rewrite, create, delete"
                )));
            }
        };
        if !path.starts_with('/') || path.contains("..") {
            return Err(bad(format!("{path:?} is not a path from / of the site")));
        }
        edits.push(Edit {
            at,
            kind,
            path: path.to_string(),
        });
    }
    edits.sort_by(|a, b| a.at.total_cmp(&b.at));
    Ok(edits)
}

/// Writes edits in the trace format (what `--trace` reads back).
pub fn format_trace(edits: &[Edit]) -> String {
    let mut out = String::from("# seconds kind path\n");
    for e in edits {
        out.push_str(&format!("{} {} {}\n", e.at, e.kind.as_str(), e.path));
    }
    out
}

/// A mean change rate per page, per second, from `N/h`, `N/d`, `N/s` or `N%/h` (per cent of
/// pages per hour).
pub fn parse_rate(spec: &str) -> Result<f64, String> {
    let (number, unit) = spec
        .split_once('/')
        .ok_or_else(|| format!("change rate {spec:?}: expected e.g. 1%/h or 0.5/d"))?;
    let (number, scale) = match number.strip_suffix('%') {
        Some(n) => (n, 0.01),
        None => (number, 1.0),
    };
    let n: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("change rate {spec:?}: {number:?} is not a number"))?;
    let per = match unit.trim() {
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        other => {
            return Err(format!(
                "change rate {spec:?}: unit {other:?} is not s, min, h or d"
            ));
        }
    };
    let rate = n * scale / per;
    if rate.is_finite() && rate >= 0.0 {
        Ok(rate)
    } else {
        Err(format!("change rate {spec:?} must be a positive number"))
    }
}

/// Shape of the Pareto law of page change rates: heavy-tailed, with a finite mean.
const PARETO_SHAPE: f64 = 1.5;

/// Share of edits that rewrite a third of the page rather than a sentence.
const REWRITE_SHARE: f64 = 0.1;

/// Per-page change rates (per second) with mean `mean`, drawn from a Pareto law.
pub fn page_rates(pages: usize, mean: f64, seed: u64) -> Vec<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    // Pareto(xm, a) has mean a·xm/(a-1).
    let xm = mean * (PARETO_SHAPE - 1.0) / PARETO_SHAPE;
    (0..pages)
        .map(|_| {
            let u: f64 = rng.random();
            xm / (1.0 - u).powf(1.0 / PARETO_SHAPE)
        })
        .collect()
}

/// The site's past: for each page, simulated seconds since it last changed before the
/// measurement began. A Poisson process observed at a random moment last fired an
/// exponential time ago (of its own rate); a page that never changes, and any age beyond a
/// year, is dated a year back.
pub fn ages(rates: &[f64], seed: u64) -> Vec<f64> {
    const YEAR: f64 = 365.0 * 86_400.0;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0xa9e5);
    rates
        .iter()
        .map(|rate| {
            let u: f64 = rng.random();
            if *rate > 0.0 {
                (-(1.0 - u).ln() / rate).min(YEAR)
            } else {
                YEAR
            }
        })
        .collect()
}

/// Edits of `paths` over `duration` simulated seconds, each page a Poisson process of its rate.
pub fn generate(paths: &[String], rates: &[f64], duration: f64, seed: u64) -> Vec<Edit> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed);
    let mut edits = Vec::new();
    for (path, rate) in paths.iter().zip(rates) {
        if *rate <= 0.0 {
            continue;
        }
        let mut t = 0.0;
        loop {
            let u: f64 = rng.random();
            t += -(1.0 - u).ln() / rate;
            if t >= duration {
                break;
            }
            let kind = if rng.random::<f64>() < REWRITE_SHARE {
                EditKind::Rewrite
            } else {
                EditKind::Edit
            };
            edits.push(Edit {
                at: t,
                kind,
                path: path.clone(),
            });
        }
    }
    edits.sort_by(|a, b| a.at.total_cmp(&b.at));
    edits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_reads_back_what_was_written_and_names_bad_lines() {
        let text = "# a comment\n12.5 edit /p/1.html\n\n3 delete /p/2.html  # gone\n";
        let edits = parse_trace(text).unwrap();
        assert_eq!(edits.len(), 2);
        assert_eq!(edits[0].kind, EditKind::Delete, "in time order");
        assert_eq!(parse_trace(&format_trace(&edits)).unwrap(), edits);
        let err = parse_trace("1 edit /a\nsoon edit /b\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.to_string().contains("\"soon\""), "{err}");
        assert!(parse_trace("1 shred /a").unwrap_err().why.contains("shred"));
        assert!(parse_trace("1 edit ../etc/passwd").is_err());
        assert!(parse_trace("1 edit /a extra").is_err());
    }

    #[test]
    fn a_page_s_age_is_exponential_in_its_own_rate() {
        // One change an hour: ages average an hour; the same seed gives the same past.
        let rates = vec![1.0 / 3600.0; 20_000];
        let ages = ages(&rates, 3);
        let mean = ages.iter().sum::<f64>() / ages.len() as f64;
        assert!((mean / 3600.0 - 1.0).abs() < 0.05, "{mean}");
        let within = ages.iter().filter(|a| **a < 3600.0).count() as f64 / ages.len() as f64;
        assert!((within - (1.0 - (-1.0f64).exp())).abs() < 0.02, "{within}");
        assert_eq!(ages, super::ages(&rates, 3));
        // A page that never changes is a year old.
        assert_eq!(super::ages(&[0.0], 3), vec![365.0 * 86_400.0]);
    }

    #[test]
    fn rates_are_read_in_every_unit() {
        assert!((parse_rate("1%/h").unwrap() - 0.01 / 3600.0).abs() < 1e-15);
        assert!((parse_rate("2/d").unwrap() - 2.0 / 86_400.0).abs() < 1e-15);
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("1/week").unwrap_err().contains("week"));
    }

    #[test]
    fn changes_are_heavy_tailed_with_the_asked_mean() {
        let mean = 0.01 / 3600.0;
        let rates = page_rates(20_000, mean, 7);
        let avg = rates.iter().sum::<f64>() / rates.len() as f64;
        assert!((avg / mean - 1.0).abs() < 0.15, "{avg} vs {mean}");
        let mut sorted = rates.clone();
        sorted.sort_by(f64::total_cmp);
        let top: f64 = sorted[sorted.len() * 99 / 100..].iter().sum();
        assert!(
            top / rates.iter().sum::<f64>() > 0.05,
            "the busiest 1% of pages make a large share of the changes"
        );
        assert!(sorted[sorted.len() / 2] < mean, "most pages change rarely");
        // A day of 1,000 pages at 1%/h: about 240 edits, the same for the same seed.
        let paths: Vec<String> = (0..1000).map(|i| format!("/p/{i}.html")).collect();
        let a = generate(&paths, &page_rates(1000, mean, 1), 86_400.0, 1);
        let b = generate(&paths, &page_rates(1000, mean, 1), 86_400.0, 1);
        assert_eq!(a, b);
        assert!((150..350).contains(&a.len()), "{}", a.len());
        let rewrites = a.iter().filter(|e| e.kind == EditKind::Rewrite).count();
        assert!(rewrites * 4 < a.len(), "small edits mostly: {rewrites}");
    }
}

//! A site past one part's worth of files, end to end: Debian's nginx serving a docroot, the
//! real `webcoop-agent` beside it publishing robots.rdf in parts (no service running, so the
//! crawler keeps the site fresh from robots.rdf alone), and `webcoop-crawl` kept fresh. Its
//! first reading asks for every part once; while nothing changes its polls of the index are
//! answered 304 and no part is asked for; after one edit it asks for the index and the one
//! part holding the page, and so again after the crawler was killed and started again.
//! Asserted from nginx's access log.

use super::crawl_coop::{crawl_seeds, held, next_second, page, wait_for};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use webcoop::servers::{Killed, Nginx};
use webcoop_protocol::robots_rdf::{self, RdfLimits};
use webcoop_testkit::{tool, workspace_bin};

const PAGES: usize = 600;
const AGENT: &str = "parts-crawler";

struct PartedSite {
    dir: tempfile::TempDir,
    www: PathBuf,
    nginx: Nginx,
    _agent: Killed,
}

impl PartedSite {
    fn start() -> Option<PartedSite> {
        let nginx_bin = tool("nginx")?;
        let dir = tempfile::tempdir().unwrap();
        let www = dir.path().join("www");
        std::fs::create_dir(&www).unwrap();
        let www = www.canonicalize().unwrap();
        std::fs::write(www.join("index.html"), "<a href=\"p1.html\">start</a>").unwrap();
        for i in 1..=PAGES {
            std::fs::write(www.join(format!("p{i}.html")), page(i, "")).unwrap();
        }
        let root = www.clone();
        let logs = dir.path().to_path_buf();
        let nginx = Nginx::start_custom(
            &nginx_bin,
            &www,
            &move |port| {
                format!(
                    "include /etc/nginx/mime.types;\nserver {{\n  listen 127.0.0.1:{port};\n  root {};\n  access_log {}/access.log combined;\n  location / {{ }}\n}}\n",
                    root.display(),
                    logs.display()
                )
            },
            &|port| ([127, 0, 0, 1], port).into(),
        );
        let lines = Command::new(workspace_bin("webcoop-agent"))
            .args(["--print-robots-lines", "--base-url", &nginx.url()])
            .output()
            .unwrap();
        std::fs::write(www.join("robots.txt"), &lines.stdout).unwrap();
        let agent = Command::new(workspace_bin("webcoop-agent"))
            .arg("--docroot")
            .arg(&www)
            .arg("--state")
            .arg(dir.path().join("state"))
            .args(["--base-url", &nginx.url(), "--server-url", &nginx.url()])
            .args(["--sitemap-part-urls", "40", "--debounce-ms", "50"])
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(dir.path().join("agent.err"))
                    .map_or(Stdio::null(), Stdio::from),
            )
            .spawn()
            .unwrap();
        let site = PartedSite {
            dir,
            www,
            nginx,
            _agent: Killed(agent),
        };
        wait_for("robots.rdf in parts", Duration::from_secs(60), || {
            site.parts().len() > 5
        });
        Some(site)
    }

    /// The paths of the parts robots.rdf names now.
    fn parts(&self) -> Vec<String> {
        std::fs::read(self.www.join("robots.rdf"))
            .ok()
            .and_then(|b| robots_rdf::parse(&b, &RdfLimits::default()).ok())
            .map(|d| {
                d.channel
                    .parts
                    .iter()
                    .map(|p| p.url.path().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default()
    }

    /// The crawler's GETs of robots.rdf's parts.
    fn part_gets(&self) -> usize {
        self.log()
            .lines()
            .filter(|l| l.contains(AGENT) && l.contains("\"GET /robots-"))
            .count()
    }

    /// The crawler's GETs of `path`, by status.
    fn gets(&self, path: &str, status: u16) -> usize {
        let request = format!("\"GET {path} HTTP/1.1\" {status} ");
        self.log()
            .lines()
            .filter(|l| l.contains(AGENT) && l.contains(&request))
            .count()
    }
}

fn held_pages(out: &Path) -> usize {
    held(out).len()
}

#[test]
fn a_listing_in_parts_is_read_whole_once_then_one_part_per_edit() {
    let Some(site) = PartedSite::start() else {
        return;
    };
    let parts = site.parts();
    let out = site.dir.path().join("crawl");
    let start = || {
        crawl_seeds(
            &[site.nginx.url()],
            &out,
            "meta",
            600,
            3600,
            &["--user-agent".into(), AGENT.into()],
        )
    };
    let crawl = start();
    wait_for("every page copied", Duration::from_secs(120), || {
        held_pages(&out) == PAGES + 1
    });
    assert_eq!(
        site.part_gets(),
        parts.len(),
        "the first reading asks for each part once"
    );
    // Quiet: the index is polled and found unchanged; no part is asked for.
    let before = site.gets("/robots.rdf", 304);
    wait_for(
        "the index polled unchanged",
        Duration::from_secs(20),
        || site.gets("/robots.rdf", 304) >= before + 2,
    );
    assert_eq!(
        site.part_gets(),
        parts.len(),
        "no part asked for while nothing changed"
    );

    // One edit: the index and the part holding the page, then the page.
    next_second();
    std::fs::write(site.www.join("p77.html"), page(77, "edited")).unwrap();
    wait_for(
        "the edited page fetched again",
        Duration::from_secs(60),
        || site.gets("/p77.html", 200) >= 2,
    );
    assert_eq!(
        site.part_gets(),
        parts.len() + 1,
        "an edit costs the crawler one part"
    );
    assert!(site.gets("/robots.rdf", 200) >= 2, "the index read again");

    // Killed and started again: the versions it held were saved, so another edit still costs
    // one part, not a whole reading.
    std::thread::sleep(Duration::from_secs(1));
    drop(crawl);
    let _crawl = start();
    next_second();
    std::fs::write(site.www.join("p301.html"), page(301, "edited")).unwrap();
    wait_for(
        "the page edited after the restart fetched again",
        Duration::from_secs(60),
        || site.gets("/p301.html", 200) >= 2,
    );
    assert_eq!(
        site.part_gets(),
        parts.len() + 2,
        "after a restart an edit costs one part"
    );
}

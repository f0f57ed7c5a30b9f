//! `webcoop-agent check` against the shipped nginx and Apache configurations and broken
//! variants of each: exit status 0 only when a crawler could use everything, and a line that
//! names what to change otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;
use webcoop_testkit::workspace_bin;

struct Setup {
    tmp: tempfile::TempDir,
    www: PathBuf,
    state: PathBuf,
    server: webcoop_testkit::static_site::StaticServer,
}

fn agent() -> PathBuf {
    workspace_bin("webcoop-agent")
}

const BASE: &str = "https://www.example.org/";

/// A docroot published once, with the robots.txt lines the agent prints.
fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let www = tmp.path().join("www");
    let state = tmp.path().join("state");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("index.html"), "<p>home</p>").unwrap();
    let lines = Command::new(agent())
        .args(["--print-robots-lines", "--base-url", BASE])
        .output()
        .unwrap();
    std::fs::write(www.join("robots.txt"), &lines.stdout).unwrap();
    let server = webcoop_testkit::static_site::StaticServer::serve(&www);
    let once = Command::new(agent())
        .arg("--docroot")
        .arg(&www)
        .arg("--state")
        .arg(&state)
        .args(["--base-url", BASE, "--once", "--server-url", &server.url()])
        .output()
        .unwrap();
    assert!(
        once.status.success(),
        "{}",
        String::from_utf8_lossy(&once.stderr)
    );
    Setup {
        tmp,
        www,
        state,
        server,
    }
}

/// Runs `check` with the agent serving on 127.0.0.1:8081 and `conf` as the server's
/// configuration; returns the exit status and what it printed.
fn check(s: &Setup, conf: &str) -> (i32, String) {
    let file = s.tmp.path().join("site.conf");
    std::fs::write(
        &file,
        conf.replace("/var/www/example", &s.www.display().to_string()),
    )
    .unwrap();
    check_with(s, &["--server-config", file.to_str().unwrap()])
}

fn check_with(s: &Setup, extra: &[&str]) -> (i32, String) {
    check_judged_by(s, &s.server.url(), extra)
}

/// `check` with the web server at `server` as the judge.
fn check_judged_by(s: &Setup, server: &str, extra: &[&str]) -> (i32, String) {
    let o = Command::new(agent())
        .arg("--docroot")
        .arg(&s.www)
        .arg("--state")
        .arg(&s.state)
        .args(["--base-url", BASE, "--listen", "127.0.0.1:8081"])
        .args(["--server-url", server])
        .args(["--trusted-proxy", "127.0.0.1/32"])
        .args(extra)
        .arg("check")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

fn shipped(which: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("examples/{which}/site.conf"));
    std::fs::read_to_string(p).unwrap()
}

#[test]
fn the_shipped_configurations_pass_and_each_broken_variant_names_its_fix() {
    let s = setup();
    for which in ["nginx", "apache"] {
        let (code, said) = check(&s, &shipped(which));
        assert_eq!(code, 0, "{which}:\n{said}");
        assert!(
            said.contains("proxied to the agent at 127.0.0.1:8081"),
            "{said}"
        );
        assert!(
            said.contains("serves 2 of 2 files asked about as they are"),
            "{said}"
        );
        assert!(!said.contains("kept out"), "nothing is hidden:\n{said}");
    }
    let nginx = shipped("nginx");
    let apache = shipped("apache");
    let broken: Vec<(&str, String, &str)> = vec![
        (
            "nginx without gzip_types",
            nginx.replace(
                "gzip_types application/rdf+xml application/atom+xml application/xml text/xml text/css\n               application/javascript text/javascript application/json image/svg+xml;",
                "",
            ),
            "go out uncompressed",
        ),
        (
            "nginx without its .rdf type",
            nginx.replace("application/rdf+xml rdf;", ""),
            "no media type for .rdf",
        ),
        (
            "nginx proxying to the wrong port",
            nginx.replace("proxy_pass http://127.0.0.1:8081;", "proxy_pass http://127.0.0.1:9999;"),
            "proxied to http://127.0.0.1:9999",
        ),
        (
            "nginx without the proxy",
            nginx.replace("proxy_pass http://127.0.0.1:8081;", ""),
            "is not proxied",
        ),
        (
            "nginx forwarding the client's own X-Forwarded-For",
            nginx.replace(
                "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;",
                "",
            ),
            "forwards the client's own X-Forwarded-For",
        ),
        (
            "nginx with a rule that depends on who asks, and one the agent does not know",
            nginx.replace(
                "    # The agent's service",
                "    location /office/ { allow 10.0.0.0/8; deny all; }\n    \
                 location /app/ { perl Site::handler; }\n    # The agent's service",
            ),
            "directive perl is not understood (--trust-directive perl",
        ),
        (
            "nginx that does not parse",
            nginx.replacen('}', "", 1).replace("server {", "server { }}"),
            "the agent does not start: --server-config",
        ),
        (
            "Apache without mod_deflate's lines",
            apache.replace(
                "AddOutputFilterByType DEFLATE application/rdf+xml application/atom+xml application/xml text/xml",
                "",
            ),
            "go out uncompressed",
        ),
        (
            "Apache without ProxyPass",
            apache
                .lines()
                .filter(|l| !l.trim_start().starts_with("ProxyPass "))
                .collect::<Vec<_>>()
                .join("\n"),
            "is not proxied to the agent",
        ),
        (
            "Apache forwarding the client's own X-Forwarded-For",
            apache.replace("ProxyPreserveHost On", "ProxyPreserveHost On\n    ProxyAddHeaders Off"),
            "ProxyAddHeaders Off forwards the client's own X-Forwarded-For",
        ),
        (
            "Apache mapping .rdf to text/plain",
            apache.replace("<VirtualHost *:80>", "<VirtualHost *:80>\n    AddType text/plain .rdf"),
            ".rdf is mapped elsewhere",
        ),
    ];
    for (what, conf, says) in broken {
        let (code, said) = check(&s, &conf);
        assert_eq!(code, 1, "{what} passed:\n{said}");
        assert!(said.contains(says), "{what}: {says:?} not in\n{said}");
        assert!(said.contains("FIX"), "{what}:\n{said}");
    }
    // A place that depends on who asks is kept out, as it should be: named, and a pass.
    let office = apache.replace(
        "<VirtualHost *:80>",
        "<VirtualHost *:80>\n    <Location /office>\n      <If \"-R '10.0.0.0/8'\">\n        Require all granted\n      </If>\n    </Location>",
    );
    let (code, said) = check(&s, &office);
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains(
            "kept out, as a rule there could let the judge in where others are refused: /office*"
        ),
        "{said}"
    );
}

#[test]
fn the_docroot_and_state_are_checked_too() {
    let s = setup();
    let conf = shipped("nginx");
    // robots.txt without the lines that lead crawlers to the agent.
    std::fs::write(s.www.join("robots.txt"), "User-agent: *\nDisallow:\n").unwrap();
    let (code, said) = check(&s, &conf);
    assert_eq!(code, 1);
    assert!(
        said.contains("robots.txt lacks \"Robots-RDF: https://www.example.org/robots.rdf\""),
        "{said}"
    );
    // A state directory every user can write.
    let lines = Command::new(agent())
        .args(["--print-robots-lines", "--base-url", BASE])
        .output()
        .unwrap();
    std::fs::write(s.www.join("robots.txt"), &lines.stdout).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&s.state, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (code, said) = check(&s, &conf);
    assert_eq!(code, 1);
    assert!(
        said.contains("writable by every user") && said.contains("chmod 700"),
        "{said}"
    );
    // One others can read: the hub's secrets are in it.
    std::fs::set_permissions(&s.state, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, said) = check(&s, &conf);
    assert_eq!(code, 1);
    assert!(
        said.contains("can be read by other users (mode 755)"),
        "{said}"
    );
    std::fs::set_permissions(&s.state, std::fs::Permissions::from_mode(0o700)).unwrap();
    // No server configuration at all: said, and not a pass.
    let (code, said) = check_with(&s, &[]);
    assert_eq!(code, 1);
    assert!(
        said.contains("no web server configuration was read"),
        "{said}"
    );
    let (code, _) = check(&s, &conf);
    assert_eq!(code, 0);
}

#[test]
fn the_web_server_is_asked_about_a_sample_and_a_wrong_or_silent_one_is_named() {
    let s = setup();
    let conf = shipped("nginx");
    // A server that answers every file with a 404: the wrong address.
    let empty = tempfile::tempdir().unwrap();
    let wrong = webcoop_testkit::static_site::StaticServer::serve(empty.path());
    let (code, said) = check(&s, &conf);
    assert_eq!(code, 0, "{said}");
    let file = s.tmp.path().join("site.conf");
    let file = file.to_str().unwrap();
    let run = |server: &str| check_judged_by(&s, server, &["--server-config", file]);
    let (code, said) = run(&wrong.url());
    assert_eq!(code, 1);
    assert!(
        said.contains("refuses all 2 files asked about (the server answers 404)")
            && said.contains("--server-url"),
        "{said}"
    );
    // Nobody there.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let (code, said) = run(&dead_url);
    assert_eq!(code, 1);
    assert!(
        said.contains("cannot connect") && said.contains("publishes nothing new"),
        "{said}"
    );
}

//! `look` through its interface: how the configuration is obtained (declined, not applicable,
//! from files, refused when a server says it is nginx but cannot be read), where the judge
//! asks and why, and what the rules read hide.

use super::{Obtained, ViewError, look};
use crate::config::{AgentOptions, Config};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};

const JUDGE: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// A port nothing listens on (bound, then let go).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server on loopback answering every request with `server` in its `Server` header.
fn server_saying(server: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut b = [0u8; 4096];
            let _ = s.read(&mut b);
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nServer: {server}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    port
}

fn config(docroot: &Path, base: &str, server_config: Option<Vec<PathBuf>>) -> Config {
    Config::from_options(AgentOptions {
        docroot: Some(docroot.to_path_buf()),
        base_url: Some(base.into()),
        server_config,
        ..AgentOptions::default()
    })
    .unwrap()
}

#[test]
fn declined_or_another_server_is_said_and_the_judge_asks_the_sites_own_address() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}/");
    let declined = config(tmp.path(), &base, Some(vec!["none".into()]));
    let view = look(&declined, JUDGE).unwrap();
    assert_eq!(view.obtained, Obtained::Declined);
    assert_eq!(view.server_url.as_str(), base);
    assert!(view.asked_there.contains("the site's own address"));
    assert!(view.unread_note().unwrap().contains("--server-config none"));

    // Nothing listens there: neither nginx nor Apache, and said so.
    let view = look(&config(tmp.path(), &base, None), JUDGE).unwrap();
    assert_eq!(
        view.obtained,
        Obtained::NotApplicable("it sent no Server header".into())
    );
    assert!(view.kind.is_none());
    assert!(view.unread_note().is_some());

    let other = server_saying("lighttpd/1.4.69");
    let base = format!("http://127.0.0.1:{other}/");
    let view = look(&config(tmp.path(), &base, None), JUDGE).unwrap();
    assert_eq!(
        view.obtained,
        Obtained::NotApplicable("lighttpd/1.4.69".into())
    );
}

#[test]
fn a_server_saying_it_is_nginx_whose_configuration_cannot_be_read_stops_the_agent() {
    let tmp = tempfile::tempdir().unwrap();
    let port = server_saying("nginx/1.22.1");
    let base = format!("http://127.0.0.1:{port}/");
    let e = look(&config(tmp.path(), &base, None), JUDGE).unwrap_err();
    let ViewError::Unreadable { kind, how, .. } = &e else {
        panic!("{e}");
    };
    assert_eq!(kind.to_string(), "nginx");
    assert_eq!(how, "it says so in its Server header");
    assert!(e.to_string().contains("--server-config"), "{e}");
}

#[test]
fn a_configuration_given_as_files_is_read_and_hides_what_lets_the_judge_in_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    std::fs::create_dir_all(site.join("private")).unwrap();
    let port = server_saying("nginx/1.22.1");
    let conf = tmp.path().join("nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "events {{}} http {{ server {{ listen 127.0.0.1:{port}; server_name h.test; root {};
               location /private/ {{ allow 127.0.0.1; deny all; }} }} }}",
            site.display()
        ),
    )
    .unwrap();
    let base = format!("http://127.0.0.1:{port}/");
    let c = config(&site, &base, Some(vec![conf.clone()]));
    let view = look(&c, JUDGE).unwrap();
    assert_eq!(
        view.obtained,
        Obtained::Files {
            files: vec![conf.clone()],
            why: None
        }
    );
    assert_eq!(view.kind.map(|k| k.to_string()).as_deref(), Some("nginx"));
    assert!(view.unread_note().is_none());
    let rules = view.rules(&c);
    assert!(
        rules.hides("private/a.html").is_some(),
        "{:?} {:?} {:?}",
        rules
            .hidden()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        view.warnings,
        view.summary()
    );
    assert!(rules.hides("public.html").is_none());
    // The file read is watched for a change of the rules.
    assert!(view.watch.paths.contains(&conf));
    assert!(view.summary()[0].contains(&conf.display().to_string()));
}

#[test]
fn a_block_answering_for_the_site_over_another_root_is_warned_of() {
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("site");
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&site).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let port = free_port();
    let conf = tmp.path().join("nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "events {{}} http {{ server {{ listen 127.0.0.1:{port}; root {}; }} }}",
            elsewhere.display()
        ),
    )
    .unwrap();
    let base = format!("http://127.0.0.1:{port}/");
    let view = look(&config(&site, &base, Some(vec![conf])), JUDGE).unwrap();
    let serves_other = view
        .warnings
        .iter()
        .find(|w| w.text.contains("not the docroot"))
        .unwrap_or_else(|| panic!("{:?}", view.warnings));
    assert!(serves_other.text.contains(&elsewhere.display().to_string()));
    // The judge asks where the block listens, and says why.
    assert_eq!(view.server_url.port(), Some(port));
}

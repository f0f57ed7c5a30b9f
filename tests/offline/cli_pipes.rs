//! Output read by a reader that goes away (`webcoop-crawl status --json | head`): the command
//! ends quietly, as Unix tools end on a closed pipe, instead of panicking.

use std::process::{Command, Stdio};
use webcoop_testkit as testkit;
use webcoop_testkit::testweb::{HostSpec, Robots, TestWeb};

#[test]
fn status_into_a_closed_pipe_ends_quietly() {
    let web = TestWeb::start(vec![HostSpec::new("pipe.test", 3).robots(Robots::NotFound)]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("crawl");
    testkit::run_ok(
        Command::new(testkit::workspace_bin("webcoop-crawl"))
            .args([
                "crawl",
                "--allow-net",
                "127.0.0.0/8",
                "--coop",
                "off",
                "--progress",
                "quiet",
            ])
            .args(["--seeds", &format!("{}/", web.origin("pipe.test"))])
            .args(web.resolve_args())
            .arg("--out")
            .arg(&out),
    );
    for json in [true, false] {
        let mut c = Command::new(testkit::workspace_bin("webcoop-crawl"));
        c.args(["status", "--out"]).arg(&out);
        if json {
            c.arg("--json");
        }
        // The reading end is closed before the command writes a byte.
        let mut child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{err}");
        assert_eq!(o.status.code(), Some(0), "{err}");
    }
}

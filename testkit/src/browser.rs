//! Debian's Chromium, headless, driven over WebDriver by its `chromedriver`, for tests that look
//! at a page as a person would. Each [`Browser`] has its own chromedriver (on a port it picks),
//! its own empty profile, and a blocking API; both processes end when it is dropped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A headless Chromium session.
pub struct Browser {
    rt: tokio::runtime::Runtime,
    client: Option<fantoccini::Client>,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            let _ = self.rt.block_on(c.close());
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The Chromium binary, when installed (`None` skips a test unless tools are required).
pub fn chromium() -> Option<(PathBuf, PathBuf)> {
    let chromium = crate::tool("chromium")?;
    let driver = crate::tool("chromedriver")?;
    Some((chromium, driver))
}

impl Browser {
    /// Starts chromedriver and a headless Chromium of `width` x `height` CSS pixels; `None`
    /// when they are not installed (and tools are not required).
    pub fn start(width: u32, height: u32) -> Option<Browser> {
        let (chromium, driver_bin) = chromium()?;
        let mut driver = Command::new(driver_bin)
            .arg("--port=0")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("chromedriver: {e}"));
        let stdout = driver
            .stdout
            .take()
            .unwrap_or_else(|| panic!("chromedriver has no stdout"));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("started successfully on port ").nth(1) {
                    let port: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    let _ = tx.send(port);
                }
            }
        });
        // Beside the whole suite on two cores chromedriver once took over 20 s to start.
        let port = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("chromedriver did not say its port"));
        let profile = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let caps = serde_json::json!({
            "goog:chromeOptions": {
                "binary": chromium,
                // The flags that keep Chromium off the network this machine does not have.
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage",
                    format!("--user-data-dir={}", profile.path().display()),
                    format!("--window-size={width},{height}"),
                ],
            }
        });
        let caps = match caps {
            serde_json::Value::Object(m) => m,
            _ => unreachable!("a JSON object"),
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = rt
            .block_on(
                fantoccini::ClientBuilder::new(connector)
                    .capabilities(caps)
                    .connect(&format!("http://127.0.0.1:{port}")),
            )
            .unwrap_or_else(|e| panic!("a Chromium session: {e}"));
        let b = Browser {
            rt,
            client: Some(client),
            driver,
            _profile: profile,
        };
        // --window-size sets the outer window; the page is what a person sees.
        b.resize(width, height);
        Some(b)
    }

    fn c(&self) -> &fantoccini::Client {
        self.client
            .as_ref()
            .unwrap_or_else(|| panic!("the session is closed"))
    }

    /// Makes the page's viewport `width` x `height` CSS pixels.
    pub fn resize(&self, width: u32, height: u32) {
        let _ = self.rt.block_on(self.c().set_window_size(width, height));
        let inner = self.eval("return [window.innerWidth, window.innerHeight]");
        let (iw, ih) = (
            inner[0].as_u64().unwrap_or(0) as u32,
            inner[1].as_u64().unwrap_or(0) as u32,
        );
        if (iw, ih) != (width, height) && iw > 0 {
            let _ = self
                .rt
                .block_on(self.c().set_window_size(width * 2 - iw, height * 2 - ih));
        }
    }

    /// Opens a URL.
    pub fn goto(&self, url: &str) {
        self.rt
            .block_on(self.c().goto(url))
            .unwrap_or_else(|e| panic!("goto {url}: {e}"));
    }

    /// Runs JavaScript in the page and returns its result.
    pub fn eval(&self, script: &str) -> serde_json::Value {
        self.rt
            .block_on(self.c().execute(script, vec![]))
            .unwrap_or_else(|e| panic!("script {script:?}: {e}"))
    }

    /// The visible text of the first element matching `css` (empty when there is none).
    pub fn text(&self, css: &str) -> String {
        let script = format!(
            "const e = document.querySelector({}); return e ? e.innerText : '';",
            serde_json::Value::from(css)
        );
        self.eval(&script).as_str().unwrap_or("").to_string()
    }

    /// Waits until `ready` holds of the text of `css`; returns that text.
    pub fn wait_text(
        &self,
        what: &str,
        css: &str,
        timeout: Duration,
        ready: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let t = self.text(css);
            if ready(&t) {
                return t;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: {css} still reads {t:?} after {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Clicks the first element matching `css`, as a person would.
    pub fn click(&self, css: &str) {
        self.rt.block_on(async {
            let e = self
                .c()
                .find(fantoccini::Locator::Css(css))
                .await
                .unwrap_or_else(|e| panic!("find {css}: {e}"));
            e.click()
                .await
                .unwrap_or_else(|e| panic!("click {css}: {e}"));
        });
    }

    /// Types into the first element matching `css`, after clearing it.
    pub fn type_into(&self, css: &str, text: &str) {
        self.rt.block_on(async {
            let e = self
                .c()
                .find(fantoccini::Locator::Css(css))
                .await
                .unwrap_or_else(|e| panic!("find {css}: {e}"));
            let _ = e.clear().await;
            e.send_keys(text)
                .await
                .unwrap_or_else(|e| panic!("type into {css}: {e}"));
        });
    }

    /// Saves a PNG of the viewport.
    pub fn screenshot(&self, path: &Path) {
        let png = self
            .rt
            .block_on(self.c().screenshot())
            .unwrap_or_else(|e| panic!("screenshot: {e}"));
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        std::fs::write(path, png).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// Where a test's screenshot goes: `target/screenshots/NAME`, and `docs/screenshots/NAME` too
/// when `WEBCOOP_UPDATE_SCREENSHOTS=1` (how the ones the docs show are taken).
pub fn screenshot_paths(name: &str) -> Vec<PathBuf> {
    let root = crate::workspace_root();
    let mut out = vec![root.join("target/screenshots").join(name)];
    if std::env::var_os("WEBCOOP_UPDATE_SCREENSHOTS").is_some_and(|v| v == "1") {
        out.push(root.join("docs/screenshots").join(name));
    }
    out
}

impl Browser {
    /// Saves a screenshot where [`screenshot_paths`] says.
    pub fn shoot(&self, name: &str) {
        for p in screenshot_paths(name) {
            self.screenshot(&p);
        }
    }
}

/// The digits of a figure as shown (`1,234` is 1234), 0 when there are none.
pub fn number(text: &str) -> u64 {
    text.chars()
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or(0)
}

/// Where a process just started says its console is ("console at http://ADDR/" on its stderr,
/// which must be piped); the rest of its stderr goes on being read into `kept`.
pub fn console_address(
    child: &mut std::process::Child,
    kept: std::sync::Arc<std::sync::Mutex<String>>,
) -> std::net::SocketAddr {
    let stderr = child
        .stderr
        .take()
        .unwrap_or_else(|| panic!("the process's stderr is not piped"));
    let (tx, rx) = std::sync::mpsc::channel();
    let k = kept.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("console at http://").nth(1) {
                let addr: String = rest
                    .chars()
                    .take_while(|c| *c != '/' && !c.is_whitespace())
                    .collect();
                let _ = tx.send(addr);
            }
            if let Ok(mut k) = k.lock() {
                k.push_str(&line);
                k.push('\n');
            }
        }
    });
    // An agent prints it after its first scan and publication: a debug build reading a log
    // of a million lines beside the whole suite on two cores takes over a minute, and over
    // four beside a cold build of the lints (2026-12-02). An agent that exits ends the wait
    // at once (the reader's sender is dropped), so only a live agent is waited for this long.
    let addr = rx
        .recv_timeout(Duration::from_secs(600))
        .ok()
        .and_then(|a| a.parse().ok());
    match addr {
        Some(a) => a,
        None => {
            // Not left running behind a failed test.
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "no console address; stderr:\n{}",
                kept.lock().map(|k| k.clone()).unwrap_or_default()
            )
        }
    }
}

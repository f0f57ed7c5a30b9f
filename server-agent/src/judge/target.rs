//! Where the judge asks: the web server's address (`--server-url`, by default the base URL's
//! origin) and the request each docroot path becomes there, with the site's own `Host`.

use url::{Host, Url};

/// Where and how to ask the web server for a docroot path.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The origin requests go to.
    origin: String,
    /// The base URL's path (`/`, or `/site/`).
    base_path: String,
    /// The `Host` header, when it is not the origin's own.
    host: Option<String>,
    /// For HTTPS to an address: the site's name, resolved to that address, so TLS checks the
    /// site's certificate.
    resolve: Option<(String, std::net::SocketAddr)>,
}

impl Target {
    /// Requests for the site at `base` sent to `server` (an origin: scheme, host, port).
    pub(crate) fn new(base: &Url, server: &Url) -> Target {
        let site_host = base.host_str().unwrap_or_default().to_string();
        let authority = match base.port() {
            Some(p) => format!("{site_host}:{p}"),
            None => site_host.clone(),
        };
        let server_port = server.port_or_known_default().unwrap_or(80);
        let address = match server.host() {
            Some(Host::Ipv4(ip)) => Some(std::net::IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => Some(std::net::IpAddr::V6(ip)),
            _ => None,
        };
        let same_origin = server.host_str() == base.host_str()
            && server.port_or_known_default() == base.port_or_known_default()
            && server.scheme() == base.scheme();
        let base_path = base.path().to_string();
        if server.scheme() == "https"
            && let Some(ip) = address
            && !same_origin
        {
            // TLS to an address with the site's name: connect there, speak to the site.
            return Target {
                origin: format!("https://{site_host}:{server_port}"),
                base_path,
                host: None,
                resolve: Some((site_host, std::net::SocketAddr::new(ip, server_port))),
            };
        }
        let origin = server.origin().ascii_serialization();
        Target {
            origin,
            base_path,
            host: (!same_origin).then_some(authority),
            resolve: None,
        }
    }

    /// The URL asked for docroot path `rel`.
    pub(crate) fn url_of(&self, rel: &str) -> String {
        let mut s = String::with_capacity(self.origin.len() + self.base_path.len() + rel.len());
        s.push_str(&self.origin);
        s.push_str(&self.base_path);
        crate::urls::push_encoded_path(&mut s, rel);
        s
    }

    /// The `Host` header to send, when it differs from the URL's.
    pub(crate) fn host_header(&self) -> Option<&str> {
        self.host.as_deref()
    }

    /// A name the client must resolve to an address of its own choosing.
    pub(crate) fn resolve(&self) -> Option<&(String, std::net::SocketAddr)> {
        self.resolve.as_ref()
    }

    /// The origin asked, for messages.
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(base: &str, server: &str) -> Target {
        Target::new(&Url::parse(base).unwrap(), &Url::parse(server).unwrap())
    }

    #[test]
    fn requests_go_to_the_server_with_the_site_s_host() {
        let same = t("http://127.0.0.1:8080/", "http://127.0.0.1:8080/");
        assert_eq!(
            same.url_of("a b/c.html"),
            "http://127.0.0.1:8080/a%20b/c.html"
        );
        assert_eq!(same.host_header(), None);
        let local = t("https://www.example.org/docs/", "http://127.0.0.1:8081");
        assert_eq!(local.url_of("x.html"), "http://127.0.0.1:8081/docs/x.html");
        assert_eq!(local.host_header(), Some("www.example.org"));
        let port = t("http://e.test:8000/", "http://[::1]:80/");
        assert_eq!(port.host_header(), Some("e.test:8000"));
        assert_eq!(port.url_of("i.html"), "http://[::1]/i.html");
        let tls = t("https://www.example.org/", "https://127.0.0.1:8443/");
        assert_eq!(tls.url_of("i.html"), "https://www.example.org:8443/i.html");
        assert_eq!(
            tls.resolve(),
            Some(&(
                "www.example.org".to_string(),
                "127.0.0.1:8443".parse().unwrap()
            ))
        );
    }
}

//! Which addresses the hub may call back: public ones, and networks the operator allows
//! (`--allow-callback-net`), checked by the same guard as the crawler's connections.
//!
//! A subscription names a URL the hub then fetches; without a check anyone could make the hub
//! probe the network it sits in (SSRF). Host names are checked when they are resolved for each
//! connection, so a name that later resolves to a private address is refused too.

use ipnet::IpNet;
use std::sync::Arc;
use url::Url;
use webcoop_netguard::{GuardedResolver, NetPolicy};

/// The policy.
#[derive(Clone)]
pub(crate) struct CallbackPolicy {
    resolver: GuardedResolver,
}

impl Default for CallbackPolicy {
    fn default() -> Self {
        CallbackPolicy::new(Vec::new())
    }
}

impl CallbackPolicy {
    /// Public addresses plus `allowed`.
    pub(crate) fn new(allowed: Vec<IpNet>) -> Self {
        CallbackPolicy {
            resolver: GuardedResolver::new(
                NetPolicy::new(allowed, "--allow-callback-net"),
                Vec::new(),
            ),
        }
    }

    /// The resolver for the hub's HTTP client, which keeps only permitted addresses.
    pub(crate) fn resolver(&self) -> Arc<GuardedResolver> {
        Arc::new(self.resolver.clone())
    }

    /// Checks a callback URL: its scheme, and every address its host resolves to now (each
    /// connection checks again when it resolves).
    pub(crate) async fn check(&self, url: &Url) -> Result<(), String> {
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("callback {url} is not http or https"));
        }
        self.resolver
            .check_url_resolving(url)
            .await
            .map_err(|e| format!("callback {url}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loopback_callbacks_need_the_operators_consent() {
        let url = Url::parse("http://127.0.0.1:9/cb").unwrap();
        let strict = CallbackPolicy::default();
        let err = strict.check(&url).await.unwrap_err();
        assert!(err.contains("--allow-callback-net"), "{err}");
        assert!(
            strict
                .check(&Url::parse("http://localhost:9/cb").unwrap())
                .await
                .is_err()
        );
        assert!(
            strict
                .check(&Url::parse("ftp://8.8.8.8/").unwrap())
                .await
                .is_err()
        );
        let lenient = CallbackPolicy::new(vec!["127.0.0.0/8".parse().unwrap()]);
        assert!(lenient.check(&url).await.is_ok());
        assert!(
            lenient
                .check(&Url::parse("http://10.0.0.1/cb").unwrap())
                .await
                .is_err()
        );
    }
}

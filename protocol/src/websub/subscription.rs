//! Subscription requests, verification of intent and leases (WebSub §5.1-5.3).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use std::fmt;
use url::Url;

/// The spec requires `hub.secret` to be less than 200 bytes.
pub const MAX_SECRET_BYTES: usize = 199;

/// Why a WebSub message was refused; the hub sends the text back with a 4xx.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebSubError {
    /// A required parameter is absent.
    #[error("missing parameter {0}")]
    Missing(&'static str),
    /// A parameter given twice, which would make the request ambiguous.
    #[error("parameter {0} is given more than once")]
    Duplicate(&'static str),
    /// A parameter with a bad value.
    #[error("bad {name} {value:?}: {reason}")]
    Bad {
        /// The parameter.
        name: &'static str,
        /// Its value (cut).
        value: String,
        /// Why.
        reason: String,
    },
}

fn bad(name: &'static str, value: &str, reason: impl Into<String>) -> WebSubError {
    WebSubError::Bad {
        name,
        value: crate::error::excerpt(value),
        reason: reason.into(),
    }
}

/// `hub.mode` of a subscription request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Start (or renew) a subscription.
    Subscribe,
    /// End one.
    Unsubscribe,
}

impl Mode {
    /// The parameter value.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Subscribe => "subscribe",
            Mode::Unsubscribe => "unsubscribe",
        }
    }

    fn parse(value: &str) -> Result<Mode, WebSubError> {
        match value {
            "subscribe" => Ok(Mode::Subscribe),
            "unsubscribe" => Ok(Mode::Unsubscribe),
            _ => Err(bad("hub.mode", value, "expected subscribe or unsubscribe")),
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Collects the `hub.*` parameters of a form body or query, refusing duplicates and ignoring
/// everything else (the spec requires unknown parameters to be ignored).
fn hub_params(input: &[u8], names: &[&'static str]) -> Result<Vec<Option<String>>, WebSubError> {
    let mut values: Vec<Option<String>> = vec![None; names.len()];
    for (key, value) in form_urlencoded::parse(input) {
        if let Some(i) = names.iter().position(|n| *n == key) {
            if values[i].is_some() {
                return Err(WebSubError::Duplicate(names[i]));
            }
            values[i] = Some(value.into_owned());
        }
    }
    Ok(values)
}

fn http_url(name: &'static str, value: &str) -> Result<Url, WebSubError> {
    let url = Url::parse(value).map_err(|e| bad(name, value, e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(name, value, "must be an http or https URL"));
    }
    if url.fragment().is_some() {
        return Err(bad(name, value, "must not have a fragment"));
    }
    Ok(url)
}

fn lease(value: &str) -> Result<u64, WebSubError> {
    match value.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(bad(
            "hub.lease_seconds",
            value,
            "must be a positive integer",
        )),
    }
}

/// A subscriber's request to the hub (a form-encoded POST).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionRequest {
    /// `hub.mode`.
    pub mode: Mode,
    /// `hub.callback`: where the hub verifies and delivers.
    pub callback: Url,
    /// `hub.topic`: the `self` URL of what is subscribed to.
    pub topic: Url,
    /// `hub.lease_seconds`: the lease asked for.
    pub lease_seconds: Option<u64>,
    /// `hub.secret`: the HMAC key for signed deliveries (< 200 bytes).
    pub secret: Option<String>,
}

impl SubscriptionRequest {
    /// Parses an `application/x-www-form-urlencoded` body.
    pub fn from_form(body: &[u8]) -> Result<Self, WebSubError> {
        let names = [
            "hub.mode",
            "hub.callback",
            "hub.topic",
            "hub.lease_seconds",
            "hub.secret",
        ];
        let mut v = hub_params(body, &names)?.into_iter();
        let mut next = || v.next().flatten();
        let (mode, callback, topic, lease_seconds, secret) =
            (next(), next(), next(), next(), next());
        let mode = Mode::parse(&mode.ok_or(WebSubError::Missing("hub.mode"))?)?;
        let callback = http_url(
            "hub.callback",
            &callback.ok_or(WebSubError::Missing("hub.callback"))?,
        )?;
        let topic = http_url(
            "hub.topic",
            &topic.ok_or(WebSubError::Missing("hub.topic"))?,
        )?;
        let lease_seconds = match lease_seconds {
            Some(l) => Some(lease(&l)?),
            None => None,
        };
        if let Some(s) = &secret {
            if s.len() > MAX_SECRET_BYTES {
                return Err(bad(
                    "hub.secret",
                    "(not shown)",
                    format!("{} bytes; it must be less than 200", s.len()),
                ));
            }
            if s.is_empty() {
                return Err(bad("hub.secret", "", "must not be empty"));
            }
        }
        Ok(SubscriptionRequest {
            mode,
            callback,
            topic,
            lease_seconds,
            secret,
        })
    }

    /// Encodes the request as a form body.
    pub fn to_form(&self) -> String {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("hub.mode", self.mode.as_str());
        form.append_pair("hub.callback", self.callback.as_str());
        form.append_pair("hub.topic", self.topic.as_str());
        if let Some(l) = self.lease_seconds {
            form.append_pair("hub.lease_seconds", &l.to_string());
        }
        if let Some(s) = &self.secret {
            form.append_pair("hub.secret", s);
        }
        form.finish()
    }
}

/// A random, single-use `hub.challenge`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge(String);

impl Challenge {
    /// A challenge from 32 random bytes (the caller draws them: this crate does no I/O).
    pub fn from_random(bytes: [u8; 32]) -> Self {
        Challenge(URL_SAFE_NO_PAD.encode(bytes))
    }

    /// The text sent and expected back.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether a verification response body echoes the challenge exactly (the spec: "the
    /// response body MUST consist solely of the hub.challenge value").
    pub fn echoed_by(&self, body: &[u8]) -> bool {
        body == self.0.as_bytes()
    }
}

fn with_params(callback: &Url, params: &[(&str, &str)]) -> Url {
    // The spec requires the callback's own query to be preserved, ours appended with `&`.
    let mut url = callback.clone();
    {
        let mut query = url.query_pairs_mut();
        for (k, v) in params {
            query.append_pair(k, v);
        }
    }
    url
}

/// The hub's GET to a callback asking whether the subscriber really wants this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentVerification {
    /// What is being confirmed.
    pub mode: Mode,
    /// The topic.
    pub topic: Url,
    /// What the subscriber must echo.
    pub challenge: String,
    /// The lease granted (subscribe only).
    pub lease_seconds: Option<u64>,
}

impl IntentVerification {
    /// The URL the hub GETs: the callback with `hub.*` parameters added.
    pub fn callback_url(&self, callback: &Url) -> Url {
        let lease = self.lease_seconds.map(|l| l.to_string());
        let mut params = vec![
            ("hub.mode", self.mode.as_str()),
            ("hub.topic", self.topic.as_str()),
            ("hub.challenge", self.challenge.as_str()),
        ];
        if let Some(l) = &lease {
            params.push(("hub.lease_seconds", l));
        }
        with_params(callback, &params)
    }
}

/// The hub's GET telling a subscriber its subscription was refused (`hub.mode=denied`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// The topic.
    pub topic: Url,
    /// Why, if the hub says.
    pub reason: Option<String>,
}

impl Denial {
    /// The URL the hub GETs.
    pub fn callback_url(&self, callback: &Url) -> Url {
        let mut params = vec![("hub.mode", "denied"), ("hub.topic", self.topic.as_str())];
        if let Some(r) = &self.reason {
            params.push(("hub.reason", r));
        }
        with_params(callback, &params)
    }
}

/// What a hub's GET to a callback asks, as the subscriber reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallbackQuery {
    /// Verification of intent: echo the challenge to confirm, 404 to refuse.
    Verify(IntentVerification),
    /// The subscription was denied.
    Denied(Denial),
}

impl CallbackQuery {
    /// Parses the query string of a hub's GET to the callback.
    pub fn parse(query: &str) -> Result<Self, WebSubError> {
        let names = [
            "hub.mode",
            "hub.topic",
            "hub.challenge",
            "hub.lease_seconds",
            "hub.reason",
        ];
        let mut v = hub_params(query.as_bytes(), &names)?.into_iter();
        let mut next = || v.next().flatten();
        let (mode, topic, challenge, lease_seconds, reason) =
            (next(), next(), next(), next(), next());
        let mode = mode.ok_or(WebSubError::Missing("hub.mode"))?;
        let topic = http_url(
            "hub.topic",
            &topic.ok_or(WebSubError::Missing("hub.topic"))?,
        )?;
        if mode == "denied" {
            return Ok(CallbackQuery::Denied(Denial { topic, reason }));
        }
        let mode = Mode::parse(&mode)?;
        let challenge = challenge.ok_or(WebSubError::Missing("hub.challenge"))?;
        if challenge.is_empty() {
            return Err(bad("hub.challenge", "", "must not be empty"));
        }
        let lease_seconds = match (mode, lease_seconds) {
            (Mode::Subscribe, Some(l)) => Some(lease(&l)?),
            (Mode::Subscribe, None) => return Err(WebSubError::Missing("hub.lease_seconds")),
            (Mode::Unsubscribe, _) => None,
        };
        Ok(CallbackQuery::Verify(IntentVerification {
            mode,
            topic,
            challenge,
            lease_seconds,
        }))
    }
}

/// How long subscriptions last. The spec forbids perpetual leases and suggests 10 days.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeasePolicy {
    /// Granted when the subscriber asks for none.
    pub default_seconds: u64,
    /// Shortest lease granted.
    pub min_seconds: u64,
    /// Longest lease granted.
    pub max_seconds: u64,
}

impl Default for LeasePolicy {
    /// 10 days by default, between 5 minutes and 30 days.
    fn default() -> Self {
        LeasePolicy {
            default_seconds: 10 * 86_400,
            min_seconds: 300,
            max_seconds: 30 * 86_400,
        }
    }
}

impl LeasePolicy {
    /// The lease to grant for a request.
    pub fn grant(&self, requested: Option<u64>) -> u64 {
        requested
            .unwrap_or(self.default_seconds)
            .clamp(self.min_seconds, self.max_seconds.max(self.min_seconds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn subscription_form_round_trips_and_ignores_unknown_parameters() {
        let req = SubscriptionRequest {
            mode: Mode::Subscribe,
            callback: u("https://crawler.example/cb?id=42&x=a%20b"),
            topic: u("https://site.example/.well-known/webcoop/changes"),
            lease_seconds: Some(3600),
            secret: Some("s3cr&t=".into()),
        };
        let form = req.to_form() + "&extra=ignored&hub.unknown=1";
        assert_eq!(
            SubscriptionRequest::from_form(form.as_bytes()).unwrap(),
            req
        );
    }

    #[test]
    fn subscription_errors_name_the_parameter() {
        let base = "hub.mode=subscribe&hub.callback=https%3A%2F%2Fc.example%2F&hub.topic=https%3A%2F%2Ft.example%2F";
        assert!(SubscriptionRequest::from_form(base.as_bytes()).is_ok());
        let cases = [
            (
                "hub.callback=https%3A%2F%2Fc.example%2F&hub.topic=https%3A%2F%2Ft.example%2F",
                "hub.mode",
            ),
            (
                "hub.mode=subscribe&hub.topic=https%3A%2F%2Ft.example%2F",
                "hub.callback",
            ),
            (
                "hub.mode=publish&hub.callback=https%3A%2F%2Fc.example%2F&hub.topic=https%3A%2F%2Ft.example%2F",
                "hub.mode",
            ),
            (
                "hub.mode=subscribe&hub.callback=ftp%3A%2F%2Fc.example%2F&hub.topic=https%3A%2F%2Ft.example%2F",
                "hub.callback",
            ),
            (
                "hub.mode=subscribe&hub.callback=%2Frelative&hub.topic=https%3A%2F%2Ft.example%2F",
                "hub.callback",
            ),
        ];
        for (form, param) in cases {
            let err = SubscriptionRequest::from_form(form.as_bytes()).unwrap_err();
            assert!(err.to_string().contains(param), "{form}: {err}");
        }
        let long = format!("{base}&hub.secret={}", "x".repeat(200));
        assert!(
            SubscriptionRequest::from_form(long.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("hub.secret")
        );
        let ok = format!("{base}&hub.secret={}", "x".repeat(199));
        assert!(SubscriptionRequest::from_form(ok.as_bytes()).is_ok());
        for lease in ["0", "-5", "ten"] {
            let f = format!("{base}&hub.lease_seconds={lease}");
            assert!(
                SubscriptionRequest::from_form(f.as_bytes())
                    .unwrap_err()
                    .to_string()
                    .contains("hub.lease_seconds")
            );
        }
        let dup = format!("{base}&hub.topic=https%3A%2F%2Fother.example%2F");
        assert_eq!(
            SubscriptionRequest::from_form(dup.as_bytes()),
            Err(WebSubError::Duplicate("hub.topic"))
        );
    }

    #[test]
    fn verification_preserves_the_callback_query_and_parses_back() {
        let v = IntentVerification {
            mode: Mode::Subscribe,
            topic: u("https://t.example/changes"),
            challenge: Challenge::from_random([7; 32]).as_str().to_string(),
            lease_seconds: Some(864_000),
        };
        let url = v.callback_url(&u("https://c.example/cb?token=abc"));
        assert!(
            url.as_str()
                .starts_with("https://c.example/cb?token=abc&hub.mode=subscribe&")
        );
        assert_eq!(
            CallbackQuery::parse(url.query().unwrap()).unwrap(),
            CallbackQuery::Verify(v)
        );

        let d = Denial {
            topic: u("https://t.example/changes"),
            reason: Some("callback not allowed".into()),
        };
        let url = d.callback_url(&u("https://c.example/cb"));
        assert_eq!(
            CallbackQuery::parse(url.query().unwrap()).unwrap(),
            CallbackQuery::Denied(d)
        );
        assert_eq!(
            CallbackQuery::parse(
                "hub.mode=subscribe&hub.topic=https%3A%2F%2Ft.example%2F&hub.challenge=x"
            ),
            Err(WebSubError::Missing("hub.lease_seconds"))
        );
    }

    #[test]
    fn challenge_must_be_echoed_exactly() {
        let c = Challenge::from_random([1; 32]);
        assert!(c.echoed_by(c.as_str().as_bytes()));
        assert!(!c.echoed_by(format!("{}\n", c.as_str()).as_bytes()));
        assert!(!c.echoed_by(b""));
        assert_ne!(
            Challenge::from_random([1; 32]),
            Challenge::from_random([2; 32])
        );
    }

    #[test]
    fn leases_are_bounded_never_perpetual() {
        let p = LeasePolicy::default();
        assert_eq!(p.grant(None), 864_000);
        assert_eq!(p.grant(Some(1)), 300);
        assert_eq!(p.grant(Some(u64::MAX)), 30 * 86_400);
        assert_eq!(p.grant(Some(7200)), 7200);
    }
}

//! Verifying a request: first what it claims (read without any network: which directory,
//! which key, which lifetime, for which authority), then the signature against the directory
//! the caller fetched for that claim. The RFC 9421 signature base and the Ed25519 check are
//! the `web-bot-auth` crate's, an implementation independent of our signer.
//!
//! Fail closed: a signature that covers less than the draft requires, lives longer than a day,
//! was made for another site, names a directory that is not an https origin, or uses a
//! component this reader does not resolve, is refused, not half-trusted.

use super::directory::Directory;
use super::sign::Component;
use super::{BotAuthError, CLOCK_SKEW_SECS, DIRECTORY_PATH, MAX_LIFETIME_SECS, TAG, err};
use url::Url;
use web_bot_auth::WebBotAuthVerifier;
use web_bot_auth::components::{
    CoveredComponent, DerivedComponent, HTTPField, HTTPFieldParameters,
};
use web_bot_auth::keyring::{Algorithm, KeyRing};
use web_bot_auth::message_signatures::SignedMessage;

/// The parts of a request a signature can cover.
#[derive(Debug, Clone, Copy)]
pub struct RequestView<'a> {
    /// `http` or `https`, as the client used.
    pub scheme: &'a str,
    /// The `Host` the request carried.
    pub authority: &'a str,
    /// `GET`, `POST`...
    pub method: &'a str,
    /// The path.
    pub path: &'a str,
    /// The query, without `?`.
    pub query: Option<&'a str>,
    /// Header (name, value) pairs, names in any case.
    pub headers: &'a [(&'a str, &'a str)],
}

impl RequestView<'_> {
    fn header_values(&self, name: &str) -> Vec<String> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
            .collect()
    }

    fn dictionary_member(&self, name: &str, key: &str) -> Option<String> {
        use sfv::SerializeValue;
        let joined = self.header_values(name).join(", ");
        let dict = sfv::Parser::new(&joined).parse_dictionary().ok()?;
        match dict.get(key)? {
            sfv::ListEntry::Item(item) => Some(item.serialize_value()),
            sfv::ListEntry::InnerList(_) => None,
        }
    }
}

impl SignedMessage for RequestView<'_> {
    fn lookup_component(&self, name: &CoveredComponent) -> Vec<String> {
        let target = || {
            let mut t = self.path.to_string();
            if let Some(q) = self.query {
                t.push('?');
                t.push_str(q);
            }
            t
        };
        match name {
            CoveredComponent::Derived(d) => match d {
                DerivedComponent::Authority { req: false } => {
                    vec![self.authority.to_ascii_lowercase()]
                }
                DerivedComponent::Method { req: false } => vec![self.method.to_string()],
                DerivedComponent::Path { req: false } => vec![self.path.to_string()],
                DerivedComponent::Scheme { req: false } => vec![self.scheme.to_string()],
                DerivedComponent::RequestTarget { req: false } => vec![target()],
                DerivedComponent::Query { req: false } => {
                    vec![format!("?{}", self.query.unwrap_or(""))]
                }
                DerivedComponent::TargetUri { req: false } => vec![format!(
                    "{}://{}{}",
                    self.scheme,
                    self.authority.to_ascii_lowercase(),
                    target()
                )],
                // Query parameters, response and `req` components: not resolved, so refused.
                _ => Vec::new(),
            },
            CoveredComponent::HTTP(HTTPField { name, parameters }) => {
                match parameters.0.as_slice() {
                    [] => self.header_values(name),
                    [HTTPFieldParameters::Key(key)] => {
                        self.dictionary_member(name, key).into_iter().collect()
                    }
                    _ => Vec::new(),
                }
            }
        }
    }
}

/// What a request claims, before any directory is fetched.
#[derive(Debug, Clone)]
pub enum Reading {
    /// No Web Bot Auth signature.
    Unsigned,
    /// A well-formed claim, to check against its directory.
    Claim(Box<Claim>),
    /// A signature that cannot be valid whatever the directory says.
    Invalid(BotAuthError),
}

/// A signature's claim.
#[derive(Debug, Clone)]
pub struct Claim {
    /// The directory that should hold the key: the identity, once verified.
    pub directory: Url,
    /// The key's thumbprint.
    pub keyid: String,
    /// The nonce, if any.
    pub nonce: Option<String>,
    /// Unix seconds.
    pub created: i64,
    /// Unix seconds.
    pub expires: i64,
    /// What the signature covers, of the components this reader knows.
    pub covered: Vec<Component>,
    verifier: WebBotAuthVerifier,
}

/// Reads the Web Bot Auth signature of `request`, made for `expected_authority` (this site).
/// `allow_http` lets a directory be named with `http://` (loopback tests); the draft asks for
/// https.
pub fn read(
    request: &RequestView<'_>,
    expected_authority: &str,
    now: i64,
    allow_http: bool,
) -> Reading {
    let has = |n| {
        request
            .headers
            .iter()
            .any(|(h, _)| h.eq_ignore_ascii_case(n))
    };
    if !has("signature-input") && !has("signature") {
        return Reading::Unsigned;
    }
    let tagged = request
        .header_values("signature-input")
        .iter()
        .any(|v| v.contains(&format!("tag=\"{TAG}\"")));
    if !tagged {
        return Reading::Unsigned;
    }
    match claim(request, expected_authority, now, allow_http) {
        Ok(c) => Reading::Claim(Box::new(c)),
        Err(e) => Reading::Invalid(e),
    }
}

fn claim(
    request: &RequestView<'_>,
    expected_authority: &str,
    now: i64,
    allow_http: bool,
) -> Result<Claim, BotAuthError> {
    if !request.authority.eq_ignore_ascii_case(expected_authority) {
        return Err(err(format!(
            "the request is for {}, not this site ({expected_authority})",
            request.authority
        )));
    }
    if request.header_values("signature-agent").is_empty() {
        return Err(err("no Signature-Agent: nothing names the signer's keys"));
    }
    let verifier = WebBotAuthVerifier::parse(request)
        .map_err(|e| err(format!("unreadable signature: {e}")))?;
    let parsed = verifier.get_parsed_label();
    let label = parsed.label.as_str().to_string();
    let details = &parsed.base.parameters.details;
    let covered = &parsed.base.components;
    if !covered.contains_key(&CoveredComponent::Derived(DerivedComponent::Authority {
        req: false,
    })) {
        return Err(err("the signature does not cover @authority"));
    }
    let agent_keyed = CoveredComponent::HTTP(HTTPField {
        name: "signature-agent".into(),
        parameters: web_bot_auth::components::HTTPFieldParametersSet(vec![
            HTTPFieldParameters::Key(label.clone()),
        ]),
    });
    let agent_legacy = CoveredComponent::HTTP(HTTPField {
        name: "signature-agent".into(),
        parameters: web_bot_auth::components::HTTPFieldParametersSet(vec![]),
    });
    let agent_value = if let Some(v) = covered.get(&agent_keyed) {
        v.clone()
    } else if let Some(v) = covered.get(&agent_legacy) {
        v.clone()
    } else {
        return Err(err(format!(
            "the signature does not cover its Signature-Agent member {label}"
        )));
    };
    let directory = directory_of(request, &label, &agent_value, allow_http)?;
    if let Some(alg) = &details.algorithm
        && *alg != Algorithm::Ed25519
    {
        return Err(err(format!(
            "algorithm {alg} is not accepted (ed25519 only)"
        )));
    }
    let created = details.created.ok_or_else(|| err("no created"))?;
    let expires = details.expires.ok_or_else(|| err("no expires"))?;
    let keyid = details.keyid.clone().ok_or_else(|| err("no keyid"))?;
    if created > now.saturating_add(CLOCK_SKEW_SECS) {
        return Err(err(format!("created {created} lies in the future")));
    }
    if expires <= now {
        return Err(err(format!("the signature expired at {expires}")));
    }
    if expires.saturating_sub(created) > MAX_LIFETIME_SECS {
        return Err(err(format!(
            "the signature lives {} s, more than {MAX_LIFETIME_SECS}",
            expires.saturating_sub(created)
        )));
    }
    let covered = covered
        .keys()
        .filter_map(|c| match c {
            CoveredComponent::Derived(DerivedComponent::Method { req: false }) => {
                Some(Component::Method)
            }
            CoveredComponent::Derived(DerivedComponent::TargetUri { req: false }) => {
                Some(Component::TargetUri)
            }
            CoveredComponent::Derived(DerivedComponent::Authority { req: false }) => {
                Some(Component::Authority)
            }
            CoveredComponent::HTTP(HTTPField { name, parameters }) if parameters.0.is_empty() => {
                (name == "content-digest").then_some(Component::ContentDigest)
            }
            c if *c == agent_keyed || *c == agent_legacy => Some(Component::SignatureAgent),
            _ => None,
        })
        .collect();
    Ok(Claim {
        directory,
        keyid,
        nonce: details.nonce.clone(),
        created,
        expires,
        covered,
        verifier,
    })
}

/// The directory URL a `Signature-Agent` value names: an origin (`directory` type, the
/// default), whose well-known path holds the keys.
fn directory_of(
    request: &RequestView<'_>,
    label: &str,
    covered_value: &str,
    allow_http: bool,
) -> Result<Url, BotAuthError> {
    let joined = request.header_values("signature-agent").join(", ");
    let item = match sfv::Parser::new(&joined).parse_dictionary() {
        Ok(dict) if !joined.trim_start().starts_with('"') => match dict.get(label) {
            Some(sfv::ListEntry::Item(item)) => item.clone(),
            _ => return Err(err(format!("Signature-Agent has no member {label}"))),
        },
        _ => sfv::Parser::new(covered_value)
            .parse_item()
            .map_err(|_| err("Signature-Agent is not a structured field"))?,
    };
    if let Some(kind) = item.params.get("type") {
        let kind = kind.as_token().map(|t| t.as_str().to_string());
        if kind.as_deref() != Some("directory") {
            return Err(err(format!(
                "Signature-Agent type {kind:?} is not supported (directory only)"
            )));
        }
    }
    let text = item
        .bare_item
        .as_string()
        .ok_or_else(|| err("Signature-Agent's value is not a string"))?
        .as_str()
        .to_string();
    let url = Url::parse(&text).map_err(|e| err(format!("Signature-Agent {text:?}: {e}")))?;
    let scheme_ok = url.scheme() == "https" || (allow_http && url.scheme() == "http");
    if !scheme_ok {
        return Err(err(format!(
            "Signature-Agent {text} is not an https origin"
        )));
    }
    if url.host_str().is_none()
        || !matches!(url.path(), "" | "/")
        || url.query().is_some()
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
    {
        return Err(err(format!("Signature-Agent {text} is not an origin")));
    }
    url.join(DIRECTORY_PATH)
        .map_err(|e| err(format!("Signature-Agent {text}: {e}")))
}

impl Claim {
    /// Whether the signature covers every one of `components`.
    pub fn covers(&self, components: &[Component]) -> bool {
        components.iter().all(|c| self.covered.contains(c))
    }

    /// Checks the signature with the key `keyid` names in `directory` (fetched from
    /// [`Claim::directory`]), valid at `now`.
    pub fn verify(self, directory: &Directory, now: i64) -> Result<(), BotAuthError> {
        let key = directory.key(&self.keyid, now).ok_or_else(|| {
            err(format!(
                "{} holds no valid key {}",
                self.directory, self.keyid
            ))
        })?;
        let mut ring = KeyRing::default();
        ring.import_raw(self.keyid.clone(), Algorithm::Ed25519, key.to_vec());
        self.verifier
            .verify(&ring, Some(self.keyid.clone()))
            .map(|_| ())
            .map_err(|e| err(format!("the signature does not verify: {e}")))
    }
}

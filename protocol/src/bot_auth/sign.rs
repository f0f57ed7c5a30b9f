//! Signing a request: `Signature-Agent` names the signer's directory, `Signature-Input` says
//! what is covered (`@authority` and that `Signature-Agent` member for a page; the method,
//! target and body digest too for a state-changing request) with `created`,
//! `expires`, `keyid`, `alg`, `nonce` and `tag`, and `Signature` holds the Ed25519 signature
//! over the RFC 9421 signature base.
//!
//! Written here rather than with the `web-bot-auth` crate's signer, which reads the system
//! clock for `created`: the caller's time keeps signing testable (the crate verifies).

use super::TAG;
use super::keys::ActiveKey;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::Signer;

/// The label of our signature in `Signature`, `Signature-Input` and `Signature-Agent`.
pub const LABEL: &str = "sig1";

/// The three headers of a signed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureHeaders {
    /// `Signature-Agent`.
    pub agent: String,
    /// `Signature-Input`.
    pub input: String,
    /// `Signature`.
    pub signature: String,
}

impl SignatureHeaders {
    /// The headers as (name, value) pairs.
    pub fn pairs(&self) -> [(&'static str, &str); 3] {
        [
            ("signature-agent", self.agent.as_str()),
            ("signature-input", self.input.as_str()),
            ("signature", self.signature.as_str()),
        ]
    }
}

/// What one signature says besides the authority.
#[derive(Debug, Clone, Copy)]
pub struct SignParams<'a> {
    /// The signer's origin (its directory is at [`super::DIRECTORY_PATH`] there).
    pub agent: &'a str,
    /// Unix seconds.
    pub created: i64,
    /// Seconds the signature stays valid.
    pub lifetime: i64,
    /// A fresh random value (base64url), so a verifier can refuse a replay.
    pub nonce: &'a str,
}

/// Whether `s` can stand inside a structured-field string as it is.
fn sf_safe(s: &str) -> bool {
    s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
}

/// What signs: an Ed25519 key with its key id. Implemented here with ed25519-dalek; the
/// crawler brings a faster implementation of its own (signing is most of its cost per request).
pub trait Ed25519Key {
    /// The key's thumbprint.
    fn keyid(&self) -> &str;
    /// The Ed25519 signature of `message`.
    fn sign_bytes(&self, message: &[u8]) -> [u8; 64];
}

impl Ed25519Key for ActiveKey {
    fn keyid(&self) -> &str {
        &self.keyid
    }

    fn sign_bytes(&self, message: &[u8]) -> [u8; 64] {
        self.key.sign(message).to_bytes()
    }
}

/// What a signature covers, each resolvable by our verifier and written by our signer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Component {
    /// `@method`.
    Method,
    /// `@target-uri`: scheme, authority, path and query.
    TargetUri,
    /// `@authority`.
    Authority,
    /// `content-digest` (RFC 9530): binds the body.
    ContentDigest,
    /// The `Signature-Agent` member of our label.
    SignatureAgent,
}

/// What a page request's signature covers: the draft's minimum.
pub const PAGE_REQUEST: &[Component] = &[Component::Authority, Component::SignatureAgent];

/// What a state-changing request's signature covers (a hub subscription): the method, the
/// whole target and the body, so a signature made for one request cannot serve another.
pub const STATE_CHANGING: &[Component] = &[
    Component::Method,
    Component::TargetUri,
    Component::Authority,
    Component::ContentDigest,
    Component::SignatureAgent,
];

impl Component {
    /// The component's identifier as `Signature-Input` lists it.
    pub fn identifier(self) -> String {
        match self {
            Component::Method => "\"@method\"".into(),
            Component::TargetUri => "\"@target-uri\"".into(),
            Component::Authority => "\"@authority\"".into(),
            Component::ContentDigest => "\"content-digest\"".into(),
            Component::SignatureAgent => format!("\"signature-agent\";key=\"{LABEL}\""),
        }
    }

    /// The component a structured-field item of an inner list names, if it is one of ours.
    pub fn of_item(item: &sfv::Item) -> Option<Component> {
        let name = item.bare_item.as_string()?.as_str();
        let params: Vec<(&str, &sfv::BareItem)> =
            item.params.iter().map(|(k, v)| (k.as_str(), v)).collect();
        match (name, params.as_slice()) {
            ("@method", []) => Some(Component::Method),
            ("@target-uri", []) => Some(Component::TargetUri),
            ("@authority", []) => Some(Component::Authority),
            ("content-digest", []) => Some(Component::ContentDigest),
            ("signature-agent", [] | [("key", _)]) => Some(Component::SignatureAgent),
            _ => None,
        }
    }
}

/// The request a signature is made for.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// `GET`, `POST`...
    pub method: &'a str,
    /// The request's URL (its fragment is not sent, so not signed).
    pub url: &'a url::Url,
    /// The `Content-Digest` the request carries, when it has a body.
    pub content_digest: Option<&'a str>,
}

impl Target<'_> {
    /// `host` or `host:port`, as the request's `Host` header says.
    pub fn authority(&self) -> Option<String> {
        let host = self.url.host_str()?;
        Some(match self.url.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.to_string(),
        })
    }

    fn value(&self, c: Component, agent_value: &str) -> Option<String> {
        Some(match c {
            Component::Method => self.method.to_string(),
            Component::TargetUri => self.url[..url::Position::AfterQuery].to_string(),
            Component::Authority => self.authority()?.to_ascii_lowercase(),
            Component::ContentDigest => self.content_digest?.to_string(),
            Component::SignatureAgent => agent_value.to_string(),
        })
    }
}

/// Signs a request to `authority` (`host` or `host:port` as the request's `Host` says) over
/// [`PAGE_REQUEST`], or `None` when the agent URL or the nonce cannot be written into a header.
pub fn sign(key: &impl Ed25519Key, authority: &str, p: SignParams<'_>) -> Option<SignatureHeaders> {
    let url = url::Url::parse(&format!("https://{authority}/")).ok()?;
    // The URL's own spelling drops a default port the Host header may carry: sign as given.
    if !sf_safe(authority) {
        return None;
    }
    let target = Target {
        method: "GET",
        url: &url,
        content_digest: None,
    };
    sign_covering(key, &target, PAGE_REQUEST, Some(authority), p)
}

/// Signs `target` over `components` (in that order), or `None` when a component has no value
/// (a digest for a request without one) or cannot be written into a header.
pub fn sign_request(
    key: &impl Ed25519Key,
    target: &Target<'_>,
    components: &[Component],
    p: SignParams<'_>,
) -> Option<SignatureHeaders> {
    sign_covering(key, target, components, None, p)
}

fn sign_covering(
    key: &(impl Ed25519Key + ?Sized),
    target: &Target<'_>,
    components: &[Component],
    authority: Option<&str>,
    p: SignParams<'_>,
) -> Option<SignatureHeaders> {
    if !sf_safe(p.agent) || !sf_safe(p.nonce) || components.is_empty() {
        return None;
    }
    let agent_value = format!("\"{}\"", p.agent);
    let mut base = String::new();
    let mut covered = Vec::with_capacity(components.len());
    for &c in components {
        let value = match (c, authority) {
            (Component::Authority, Some(a)) => a.to_ascii_lowercase(),
            _ => target.value(c, &agent_value)?,
        };
        if !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
            return None;
        }
        base.push_str(&format!("{}: {value}\n", c.identifier()));
        covered.push(c.identifier());
    }
    let params = format!(
        "({});created={};expires={};keyid=\"{}\";alg=\"ed25519\";nonce=\"{}\";tag=\"{TAG}\"",
        covered.join(" "),
        p.created,
        p.created.saturating_add(p.lifetime),
        key.keyid(),
        p.nonce
    );
    base.push_str(&format!("\"@signature-params\": {params}"));
    let signature = key.sign_bytes(base.as_bytes());
    Some(SignatureHeaders {
        agent: format!("{LABEL}={agent_value}"),
        input: format!("{LABEL}={params}"),
        signature: format!("{LABEL}=:{}:", B64.encode(signature)),
    })
}

/// The components an `Accept-Signature` field (RFC 9421 section 5) asks a Web Bot Auth
/// signature to cover; an error names a component this signer cannot provide.
pub fn requested_components(accept_signature: &str) -> Result<Vec<Component>, String> {
    let dict = sfv::Parser::new(accept_signature)
        .parse_dictionary()
        .map_err(|e| format!("Accept-Signature is not a dictionary: {e}"))?;
    let mut asked: Option<Vec<Component>> = None;
    for (_, entry) in dict {
        let sfv::ListEntry::InnerList(list) = entry else {
            continue;
        };
        let tag = list
            .params
            .get("tag")
            .and_then(|t| t.as_string())
            .map(|t| t.as_str().to_string());
        if tag.as_deref().is_some_and(|t| t != TAG) {
            continue;
        }
        let mut components = Vec::new();
        for item in &list.items {
            let c = Component::of_item(item).ok_or_else(|| {
                use sfv::SerializeValue;
                format!(
                    "Accept-Signature asks for {}, which this crawler does not sign",
                    item.serialize_value()
                )
            })?;
            if !components.contains(&c) {
                components.push(c);
            }
        }
        asked = Some(components);
        break;
    }
    let mut components = asked.ok_or("Accept-Signature asks for no Web Bot Auth signature")?;
    // The draft's minimum is always signed, whatever a site forgot to ask.
    for c in PAGE_REQUEST {
        if !components.contains(c) {
            components.push(*c);
        }
    }
    Ok(components)
}

/// The `Accept-Signature` value asking for `components`.
pub fn accept_signature(components: &[Component]) -> String {
    let list: Vec<String> = components.iter().map(|c| c.identifier()).collect();
    format!(
        "{LABEL}=({});created;expires;nonce;tag=\"{TAG}\"",
        list.join(" ")
    )
}

//! The key directory's own signatures (draft-meunier-webbotauth-httpsig-directory,
//! "Binding keys to the directory authority"): the response carries one RFC 9421 signature
//! per key, covering `"@authority";req` and `content-digest`, tagged
//! `http-message-signatures-directory`, so a verifier knows each key's owner controls the
//! authority it was fetched from and that the body is the one signed.
//!
//! A verifier keeps only the keys whose binding signature verifies: a directory served
//! without them, or rewritten on the way, gives no key.

use super::digest::{check_content_digest, content_digest};
use super::directory::Directory;
use super::keys::KeySet;
use super::sign::Ed25519Key;
use super::{BotAuthError, CLOCK_SKEW_SECS, MAX_LIFETIME_SECS, err};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use web_bot_auth::components::{CoveredComponent, DerivedComponent, HTTPField};
use web_bot_auth::keyring::{Algorithm, KeyRing};
use web_bot_auth::message_signatures::{MessageVerifier, SignedMessage};

/// The `tag` of a directory's binding signatures.
pub const DIRECTORY_TAG: &str = "http-message-signatures-directory";

/// Signs a directory response for a request to `authority`: the `Content-Digest`,
/// `Signature-Input` and `Signature` fields, one signature per key (labels `binding0`...).
/// `None` when the authority cannot be written into a signature base.
pub fn sign_directory(
    keys: &[&dyn Ed25519Key],
    authority: &str,
    body: &[u8],
    created: i64,
    expires: i64,
) -> Option<[(&'static str, String); 3]> {
    if !authority.bytes().all(|b| b.is_ascii_graphic()) || authority.is_empty() {
        return None;
    }
    let digest = content_digest(body);
    let (mut inputs, mut signatures) = (Vec::new(), Vec::new());
    for (i, key) in keys.iter().enumerate() {
        let params = format!(
            "(\"@authority\";req \"content-digest\");created={created};expires={expires};keyid=\"{}\";alg=\"ed25519\";tag=\"{DIRECTORY_TAG}\"",
            key.keyid()
        );
        let base = format!(
            "\"@authority\";req: {}\n\"content-digest\": {digest}\n\"@signature-params\": {params}",
            authority.to_ascii_lowercase()
        );
        let signature = key.sign_bytes(base.as_bytes());
        inputs.push(format!("binding{i}={params}"));
        signatures.push(format!("binding{i}=:{}:", B64.encode(signature)));
    }
    Some([
        ("content-digest", digest),
        ("signature-input", inputs.join(", ")),
        ("signature", signatures.join(", ")),
    ])
}

/// The body and signature fields of the directory `keys` publishes at `now`, answering a
/// request to `authority`; its signatures expire `lifetime` seconds later (a day at most).
pub fn signed_directory(
    keys: &KeySet,
    authority: &str,
    now: i64,
    lifetime: i64,
) -> Option<(String, [(&'static str, String); 3])> {
    let body = Directory::write(&keys.public(now));
    let signers = keys.published(now);
    let refs: Vec<&dyn Ed25519Key> = signers.iter().map(|k| k as &dyn Ed25519Key).collect();
    let expires = now.saturating_add(lifetime.clamp(1, MAX_LIFETIME_SECS));
    let fields = sign_directory(&refs, authority, body.as_bytes(), now, expires)?;
    Some((body, fields))
}

/// A directory response as a verifier sees it.
struct Response<'a> {
    authority: &'a str,
    headers: &'a [(&'a str, &'a str)],
}

impl SignedMessage for Response<'_> {
    fn lookup_component(&self, name: &CoveredComponent) -> Vec<String> {
        match name {
            CoveredComponent::Derived(DerivedComponent::Authority { req: true }) => {
                vec![self.authority.to_ascii_lowercase()]
            }
            CoveredComponent::HTTP(HTTPField { name, parameters }) if parameters.0.is_empty() => {
                self.headers
                    .iter()
                    .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| v.trim().to_string())
                    .collect()
            }
            _ => Vec::new(),
        }
    }
}

/// Reads a directory fetched from `authority` and keeps the keys whose binding signature in
/// `headers` verifies at `now`; refuses a body its `Content-Digest` does not describe, and a
/// directory in which no key is bound.
pub fn bound_directory(
    body: &[u8],
    headers: &[(&str, &str)],
    authority: &str,
    now: i64,
) -> Result<Directory, BotAuthError> {
    let mut dir = Directory::parse(body)?;
    let joined: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("signature-input"))
        .map(|(_, v)| *v)
        .collect();
    let inputs = sfv::Parser::new(&joined.join(", "))
        .parse_dictionary()
        .map_err(|e| {
            err(format!(
                "the directory's Signature-Input is unreadable: {e}"
            ))
        })?;
    let tagged = |list: &sfv::InnerList| {
        list.params
            .get("tag")
            .and_then(|t| t.as_string())
            .is_some_and(|t| t.as_str() == DIRECTORY_TAG)
    };
    let signed = inputs
        .values()
        .any(|e| matches!(e, sfv::ListEntry::InnerList(l) if tagged(l)));
    if !signed {
        return Err(err(format!(
            "the directory carries no binding signature (tag \"{DIRECTORY_TAG}\"): its keys \
             are not bound to {authority}"
        )));
    }
    let digests: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("content-digest"))
        .map(|(_, v)| *v)
        .collect();
    check_content_digest(&digests, body)
        .map_err(|e| err(format!("the directory's signatures cannot hold: {e}")))?;
    let response = Response { authority, headers };
    let mut bound = Vec::new();
    for (label, entry) in &inputs {
        let sfv::ListEntry::InnerList(list) = entry else {
            continue;
        };
        if !tagged(list) {
            continue;
        }
        let Ok(verifier) = MessageVerifier::parse(&response, |(l, _)| l == label) else {
            continue;
        };
        let base = &verifier.parsed.base;
        let covers = |c: &CoveredComponent| base.components.contains_key(c);
        let authority_req = CoveredComponent::Derived(DerivedComponent::Authority { req: true });
        let digest = CoveredComponent::HTTP(HTTPField {
            name: "content-digest".into(),
            parameters: web_bot_auth::components::HTTPFieldParametersSet(vec![]),
        });
        let details = &base.parameters.details;
        let (Some(created), Some(expires), Some(keyid)) =
            (details.created, details.expires, details.keyid.clone())
        else {
            continue;
        };
        let timely = created <= now.saturating_add(CLOCK_SKEW_SECS)
            && expires > now
            && expires.saturating_sub(created) <= MAX_LIFETIME_SECS;
        let algorithm_ok = details
            .algorithm
            .as_ref()
            .is_none_or(|a| *a == Algorithm::Ed25519);
        if !covers(&authority_req) || !covers(&digest) || !timely || !algorithm_ok {
            continue;
        }
        // A key published ahead of its `nbf` is bound too: it is known before it signs.
        let Some(key) = dir
            .keys
            .iter()
            .find(|(id, _, _)| *id == keyid)
            .map(|(_, k, _)| *k)
        else {
            continue;
        };
        let mut ring = KeyRing::default();
        ring.import_raw(keyid.clone(), Algorithm::Ed25519, key.to_vec());
        if verifier.verify(&ring, Some(keyid.clone())).is_ok() {
            bound.push(keyid);
        }
    }
    let before = dir.keys.len();
    dir.keys.retain(|(id, _, _)| bound.contains(id));
    if dir.keys.is_empty() {
        return Err(err(format!(
            "none of the directory's {before} Ed25519 keys carries a valid binding signature \
             for {authority} (tag \"{DIRECTORY_TAG}\")"
        )));
    }
    dir.skipped += before - dir.keys.len();
    Ok(dir)
}

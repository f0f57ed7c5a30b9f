use super::directory::Directory;
use super::keys::{Jwk, KeySet, thumbprint};
use super::sign::{SignParams, sign};
use super::verify::{Reading, RequestView, read};
use web_bot_auth::message_signatures::MessageVerifier;

/// RFC 9421 B.1.4's test-key-ed25519 (private), the key of the draft's examples.
const RFC_D: &str = "n4Ni-HpISpVObnQMW0wOhCKROaIKqKtW_2ZYb2p9KcU";
const RFC_X: &str = "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs";
const RFC_KID: &str = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";

fn rfc_keys() -> KeySet {
    KeySet::parse(&format!(
        r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{RFC_X}","d":"{RFC_D}"}}]}}"#
    ))
    .unwrap()
}

const NOW: i64 = 1_735_689_600;

fn signed(authority: &str, created: i64, lifetime: i64) -> Vec<(String, String)> {
    let key = rfc_keys().active(NOW).unwrap();
    let h = sign(
        &key,
        authority,
        SignParams {
            agent: "https://crawler.example",
            created,
            lifetime,
            nonce: "bm9uY2U=",
        },
    )
    .unwrap();
    h.pairs()
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

fn view<'a>(authority: &'a str, headers: &'a [(&'a str, &'a str)]) -> RequestView<'a> {
    RequestView {
        scheme: "https",
        authority,
        method: "GET",
        path: "/.well-known/webcoop/changes",
        query: Some("since=0"),
        headers,
    }
}

fn directory() -> Directory {
    Directory::parse(Directory::write(&rfc_keys().public(NOW)).as_bytes()).unwrap()
}

fn outcome(authority: &str, headers: &[(String, String)], now: i64) -> Result<String, String> {
    let pairs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    match read(&view(authority, &pairs), "example.com", now, false) {
        Reading::Unsigned => Err("unsigned".into()),
        Reading::Invalid(e) => Err(e.to_string()),
        Reading::Claim(c) => {
            let dir = c.directory.to_string();
            c.verify(&directory(), now).map_err(|e| e.to_string())?;
            Ok(dir)
        }
    }
}

#[test]
fn the_rfc_test_key_has_the_drafts_thumbprint() {
    assert_eq!(thumbprint(RFC_X), RFC_KID);
    assert_eq!(rfc_keys().active(NOW).unwrap().keyid, RFC_KID);
}

#[test]
fn the_drafts_example_signature_verifies_over_our_view_of_a_request() {
    // draft-meunier-webbotauth-httpsig-protocol's example, as the web-bot-auth crate tests it.
    let headers = [
        (
            "Signature",
            "sig1=:uz2SAv+VIemw+Oo890bhYh6Xf5qZdLUgv6/PbiQfCFXcX/vt1A8Pf7OcgL2yUDUYXFtffNpkEr5W6dldqFrkDg==:",
        ),
        (
            "Signature-Input",
            r#"sig1=("@authority");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="gubxywVx7hzbYKatLgzuKDllDAIXAkz41PydU7aOY7vT+Mb3GJNxW0qD4zJ+IOQ1NVtg+BNbTCRUMt1Ojr5BgA==";tag="web-bot-auth""#,
        ),
    ];
    let v = view("example.com", &headers);
    let mut ring = web_bot_auth::keyring::KeyRing::default();
    let key = directory().key(RFC_KID, NOW).unwrap();
    ring.import_raw(
        RFC_KID.into(),
        web_bot_auth::keyring::Algorithm::Ed25519,
        key.to_vec(),
    );
    MessageVerifier::parse(&v, |_| true)
        .unwrap()
        .verify(&ring, None)
        .unwrap();
    // Our reader wants to know whose key it is: without Signature-Agent it does not attribute.
    let owned: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    let e = outcome("example.com", &owned, NOW).unwrap_err();
    assert!(e.contains("Signature-Agent"), "{e}");
}

#[test]
fn what_we_sign_the_independent_verifier_accepts() {
    let h = signed("Example.COM", NOW, 60);
    assert_eq!(
        outcome("example.com", &h, NOW + 10).unwrap(),
        "https://crawler.example/.well-known/http-message-signatures-directory"
    );
    let input = &h.iter().find(|(n, _)| n == "signature-input").unwrap().1;
    assert!(input.starts_with(r#"sig1=("@authority" "signature-agent";key="sig1");created="#));
    assert!(input.contains(&format!("keyid=\"{RFC_KID}\"")));
    assert!(input.ends_with("tag=\"web-bot-auth\""));
}

#[test]
fn hostile_signatures_are_refused() {
    let good = signed("example.com", NOW, 60);
    // Expired, made in the future, too long-lived.
    assert!(
        outcome("example.com", &good, NOW + 61)
            .unwrap_err()
            .contains("expired")
    );
    let future = signed("example.com", NOW + 3600, 60);
    assert!(
        outcome("example.com", &future, NOW)
            .unwrap_err()
            .contains("future")
    );
    let long = signed("example.com", NOW, 2 * 86_400);
    assert!(
        outcome("example.com", &long, NOW)
            .unwrap_err()
            .contains("lives")
    );
    // Made for another site, replayed here with that site's Host.
    let other = signed("other.example", NOW, 60);
    let e = outcome("other.example", &other, NOW).unwrap_err();
    assert!(e.contains("not this site"), "{e}");
    // ... or with ours: the base differs, so the signature fails.
    let e = outcome("example.com", &other, NOW).unwrap_err();
    assert!(e.contains("does not verify"), "{e}");
    // The agent URL swapped after signing.
    let mut swapped = good.clone();
    swapped[0].1 = r#"sig1="https://evil.example""#.into();
    let e = outcome("example.com", &swapped, NOW).unwrap_err();
    assert!(e.contains("does not verify"), "{e}");
    // A flipped bit in the signature.
    let mut flipped = good.clone();
    flipped[2].1 = flipped[2].1.replacen('A', "B", 1).replacen('a', "b", 1);
    assert!(outcome("example.com", &flipped, NOW).is_err());
    // Names that are not an https origin, or another discovery type.
    for agent in [
        r#"sig1="http://crawler.example""#,
        r#"sig1="https://crawler.example/keys.json""#,
        r#"sig1="https://crawler.example";type=jwks_uri"#,
        r#"sig1=("https://crawler.example")"#,
        r#"sig1=42"#,
    ] {
        let mut h = good.clone();
        h[0].1 = agent.into();
        assert!(outcome("example.com", &h, NOW).is_err(), "{agent}");
    }
    // A key the directory does not hold.
    let mut other_key = KeySet::default();
    other_key.add([7; 32], 0);
    let k = other_key.active(NOW).unwrap();
    let h = sign(
        &k,
        "example.com",
        SignParams {
            agent: "https://crawler.example",
            created: NOW,
            lifetime: 60,
            nonce: "x",
        },
    )
    .unwrap();
    let h: Vec<(String, String)> = h
        .pairs()
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    assert!(
        outcome("example.com", &h, NOW)
            .unwrap_err()
            .contains("holds no valid key")
    );
    // Junk in every header never panics, and what has no web-bot-auth tag is unsigned.
    for junk in [
        "",
        "sig1=",
        "(((",
        "sig1=(\"@authority\");tag=\"web-bot-auth\"",
        "\u{0}",
    ] {
        let h = vec![
            ("signature-input".to_string(), junk.to_string()),
            ("signature".to_string(), junk.to_string()),
            ("signature-agent".to_string(), junk.to_string()),
        ];
        let _ = outcome("example.com", &h, NOW);
    }
    let plain = vec![(
        "signature-input".to_string(),
        r#"a=("@method");created=1"#.to_string(),
    )];
    assert_eq!(outcome("example.com", &plain, NOW).unwrap_err(), "unsigned");
}

#[test]
fn directories_are_read_within_bounds() {
    let one = Directory::write(&rfc_keys().public(NOW));
    assert_eq!(Directory::parse(one.as_bytes()).unwrap().keys.len(), 1);
    let huge = format!("{{\"keys\":[],\"pad\":\"{}\"}}", "x".repeat(70_000));
    assert!(
        Directory::parse(huge.as_bytes())
            .unwrap_err()
            .0
            .contains("bytes")
    );
    let many = format!(
        "{{\"keys\":[{}]}}",
        vec![format!(r#"{{"kty":"OKP","crv":"Ed25519","x":"{RFC_X}"}}"#); 40].join(",")
    );
    assert!(
        Directory::parse(many.as_bytes())
            .unwrap_err()
            .0
            .contains("keys")
    );
    let lying =
        format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{RFC_X}","kid":"abc"}}]}}"#);
    assert!(
        Directory::parse(lying.as_bytes())
            .unwrap_err()
            .0
            .contains("thumbprint")
    );
    let private =
        format!(r#"{{"keys":[{{"kty":"OKP","crv":"Ed25519","x":"{RFC_X}","d":"{RFC_D}"}}]}}"#);
    assert!(
        Directory::parse(private.as_bytes())
            .unwrap_err()
            .0
            .contains("private")
    );
    let rsa_only = r#"{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}"#;
    assert!(Directory::parse(rsa_only.as_bytes()).is_err());
    for junk in ["", "[]", "{\"keys\":7}", "null"] {
        assert!(Directory::parse(junk.as_bytes()).is_err(), "{junk}");
    }
}

#[test]
fn keys_rotate_without_a_gap() {
    let mut set = KeySet::default();
    let old = set.add([1; 32], 100);
    let new = set.add([2; 32], 200);
    assert_eq!(set.active(150).unwrap().keyid, old);
    assert_eq!(set.active(200).unwrap().keyid, new);
    assert!(set.active(50).is_none());
    // Both are published while either may sign.
    let published: Vec<String> = set.public(150).iter().map(Jwk::thumbprint).collect();
    assert_eq!(published, [old.clone(), new.clone()]);
    assert!(set.public(150).iter().all(|k| k.d.is_none()));
    let reread = KeySet::parse(&set.to_json()).unwrap();
    assert_eq!(reread, set);
    // A key file whose private part does not match its public one is refused.
    let mut bad = set.clone();
    bad.keys[0].x = bad.keys[1].x.clone();
    assert!(KeySet::parse(&bad.to_json()).is_err());
}

fn pairs_of(h: &super::sign::SignatureHeaders) -> Vec<(String, String)> {
    h.pairs()
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// A POST signed over the state-changing components, with its `Content-Digest`.
fn signed_post(url: &str, body: &[u8]) -> Vec<(String, String)> {
    use super::digest::content_digest;
    use super::sign::{STATE_CHANGING, Target, sign_request};
    let key = rfc_keys().active(NOW).unwrap();
    let url = url::Url::parse(url).unwrap();
    let digest = content_digest(body);
    let h = sign_request(
        &key,
        &Target {
            method: "POST",
            url: &url,
            content_digest: Some(&digest),
        },
        STATE_CHANGING,
        SignParams {
            agent: "https://crawler.example",
            created: NOW,
            lifetime: 60,
            nonce: "bm9uY2U",
        },
    )
    .unwrap();
    let mut pairs = pairs_of(&h);
    pairs.push(("content-digest".into(), digest));
    pairs
}

fn claim_of(
    method: &str,
    path: &str,
    headers: &[(String, String)],
) -> Result<super::verify::Claim, String> {
    let pairs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let v = RequestView {
        scheme: "https",
        authority: "example.com",
        method,
        path,
        query: None,
        headers: &pairs,
    };
    match read(&v, "example.com", NOW, false) {
        Reading::Claim(c) => Ok(*c),
        Reading::Invalid(e) => Err(e.to_string()),
        Reading::Unsigned => Err("unsigned".into()),
    }
}

#[test]
fn a_state_changing_signature_binds_method_target_and_body() {
    use super::sign::{PAGE_REQUEST, STATE_CHANGING};
    let hub = "https://example.com/.well-known/webcoop/hub";
    let h = signed_post(hub, b"hub.mode=subscribe");
    let input = &h.iter().find(|(n, _)| n == "signature-input").unwrap().1;
    assert!(
        input.starts_with(
            r#"sig1=("@method" "@target-uri" "@authority" "content-digest" "signature-agent";key="sig1")"#
        ),
        "{input}"
    );
    let c = claim_of("POST", "/.well-known/webcoop/hub", &h).unwrap();
    assert!(c.covers(STATE_CHANGING));
    c.verify(&directory(), NOW).unwrap();
    // Replayed as a GET, or to another path: the base differs.
    let c = claim_of("GET", "/.well-known/webcoop/hub", &h).unwrap();
    assert!(c.verify(&directory(), NOW).is_err());
    let c = claim_of("POST", "/.well-known/webcoop/changes", &h).unwrap();
    assert!(c.verify(&directory(), NOW).is_err());
    // A page request's signature verifies, and does not cover what a POST needs.
    let page = signed("example.com", NOW, 60);
    let c = claim_of("POST", "/.well-known/webcoop/hub", &page).unwrap();
    assert!(c.covers(PAGE_REQUEST) && !c.covers(STATE_CHANGING));
    c.verify(&directory(), NOW).unwrap();
}

#[test]
fn accept_signature_is_read_to_the_letter() {
    use super::sign::{
        Component, PAGE_REQUEST, STATE_CHANGING, accept_signature, requested_components,
    };
    let asked = accept_signature(STATE_CHANGING);
    assert_eq!(requested_components(&asked).unwrap(), STATE_CHANGING);
    // The draft's minimum is added to what a site forgot.
    let c = requested_components(r#"sig1=("@method");tag="web-bot-auth""#).unwrap();
    assert_eq!(
        c,
        [
            Component::Method,
            Component::Authority,
            Component::SignatureAgent
        ]
    );
    assert_eq!(
        requested_components(&accept_signature(PAGE_REQUEST)).unwrap(),
        PAGE_REQUEST
    );
    // What this signer cannot make is named, and junk is an error, never a panic.
    let e =
        requested_components(r#"sig1=("@query-param";name="a");tag="web-bot-auth""#).unwrap_err();
    assert!(e.contains("@query-param"), "{e}");
    for junk in ["", "(((", "sig1=1", r#"sig1=("@method");tag="other""#] {
        assert!(requested_components(junk).is_err(), "{junk}");
    }
}

#[test]
fn a_directory_binds_its_keys_to_its_authority() {
    use super::binding::{bound_directory, signed_directory};
    let mut set = KeySet::default();
    let a = set.add([3; 32], 0);
    let b = set.add([4; 32], NOW + 3600);
    let (body, fields) = signed_directory(&set, "keys.example:8443", NOW, 600).unwrap();
    let headers: Vec<(&str, &str)> = fields.iter().map(|(n, v)| (*n, v.as_str())).collect();
    let dir = bound_directory(body.as_bytes(), &headers, "keys.example:8443", NOW + 10).unwrap();
    let ids: Vec<&str> = dir.keys.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        [a.as_str(), b.as_str()],
        "a key ahead of its nbf is bound too"
    );
    // Another authority, a changed body, an expired signature: nothing bound.
    assert!(bound_directory(body.as_bytes(), &headers, "evil.example", NOW).is_err());
    let changed = body.replacen("\"keys\"", "\"keys\" ", 1);
    let e = bound_directory(changed.as_bytes(), &headers, "keys.example:8443", NOW).unwrap_err();
    assert!(e.0.contains("Content-Digest"), "{e}");
    assert!(bound_directory(body.as_bytes(), &headers, "keys.example:8443", NOW + 601).is_err());
    // No signatures at all: no key.
    let digest_only: Vec<(&str, &str)> = headers[..1].to_vec();
    let e = bound_directory(body.as_bytes(), &digest_only, "keys.example:8443", NOW).unwrap_err();
    assert!(e.0.contains("binding signature"), "{e}");
    // One signature removed: only the other key is kept.
    let (input, sig) = (&fields[1].1, &fields[2].1);
    let first_input = input.split(", binding1=").next().unwrap();
    let first_sig = sig.split(", binding1=").next().unwrap();
    let one = [
        ("content-digest", fields[0].1.as_str()),
        ("signature-input", first_input),
        ("signature", first_sig),
    ];
    let dir = bound_directory(body.as_bytes(), &one, "keys.example:8443", NOW).unwrap();
    assert_eq!(dir.keys.len(), 1);
    assert_eq!(dir.keys[0].0, a);
    // A valid signature over the same components with another tag does not bind.
    let key = &set.published(NOW)[0];
    let params = format!(
        "(\"@authority\";req \"content-digest\");created={NOW};expires={};keyid=\"{a}\";tag=\"web-bot-auth\"",
        NOW + 60
    );
    let base = format!(
        "\"@authority\";req: keys.example:8443\n\"content-digest\": {}\n\"@signature-params\": {params}",
        fields[0].1
    );
    use super::sign::Ed25519Key;
    use base64::Engine;
    let sig = base64::engine::general_purpose::STANDARD.encode(key.sign_bytes(base.as_bytes()));
    let (input, sig) = (format!("other={params}"), format!("other=:{sig}:"));
    let other_tag = [
        ("content-digest", fields[0].1.as_str()),
        ("signature-input", input.as_str()),
        ("signature", sig.as_str()),
    ];
    assert!(bound_directory(body.as_bytes(), &other_tag, "keys.example:8443", NOW).is_err());
    // The same signature tagged as the draft says binds: the tag is what was refused.
    let good_params = params.replace("web-bot-auth", super::binding::DIRECTORY_TAG);
    let base = base.replace("web-bot-auth", super::binding::DIRECTORY_TAG);
    let sig = base64::engine::general_purpose::STANDARD.encode(key.sign_bytes(base.as_bytes()));
    let (input, sig) = (format!("other={good_params}"), format!("other=:{sig}:"));
    let tagged = [
        ("content-digest", fields[0].1.as_str()),
        ("signature-input", input.as_str()),
        ("signature", sig.as_str()),
    ];
    assert!(bound_directory(body.as_bytes(), &tagged, "keys.example:8443", NOW).is_ok());
}

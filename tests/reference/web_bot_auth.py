#!/usr/bin/env python3
"""Web Bot Auth with an implementation webcoop did not write: pyauth's http-message-signatures
(RFC 9421) and the cryptography package. The tests use it both ways: to verify every request
our crawler signed (as nginx logged them), and to sign requests our agent must accept or refuse.

  keygen PRIVATE.json DIRECTORY.json      an Ed25519 key; its directory (kid: RFC 7638 thumbprint)
  sign PRIVATE.json METHOD URL AGENT [created expires nonce]
                                          prints the three headers as JSON
  sign-post PRIVATE.json URL AGENT BODY   a form POST signed over @method, @target-uri,
                                          @authority, content-digest and Signature-Agent: its
                                          four headers (Content-Digest too) as JSON
  verify-log LOG DIRECTORY.json...        verifies each JSON line nginx logged; prints a summary
  verify-directory URL                    fetches a key directory and verifies its binding
                                          signatures (tag http-message-signatures-directory)
                                          and Content-Digest; prints the bound key ids as JSON
"""
import base64
import datetime
import hashlib
import json
import sys
import urllib.parse
import urllib.request

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from http_message_signatures import HTTPMessageSigner, HTTPMessageVerifier, algorithms
from http_message_signatures.digests import ContentDigest
from http_message_signatures.resolvers import MappingKeyResolver

LABEL = "sig1"
COVERED = ('"@authority"', f'"signature-agent";key="{LABEL}"')
STATE_CHANGING = ('"@method"', '"@target-uri"', '"@authority"', '"content-digest"', f'"signature-agent";key="{LABEL}"')


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def unb64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def thumbprint(x):
    canonical = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": x}, separators=(",", ":"), sort_keys=True)
    return b64url(hashlib.sha256(canonical.encode()).digest())


class Headers:
    """Field lines in order, writable: what the library signs and verifies."""

    def __init__(self, pairs):
        self.pairs = list(pairs)

    def items(self):
        return list(self.pairs)

    def __iter__(self):
        return iter(dict.fromkeys(n for n, _ in self.pairs))

    def __contains__(self, name):
        return any(n.lower() == name.lower() for n, _ in self.pairs)

    def __getitem__(self, name):
        values = [v for n, v in self.pairs if n.lower() == name.lower()]
        if not values:
            raise KeyError(name)
        return ", ".join(values)

    def __setitem__(self, name, value):
        del self[name]
        self.pairs.append((name, value))

    def __delitem__(self, name):
        self.pairs = [(n, v) for n, v in self.pairs if n.lower() != name.lower()]


class Message:
    def __init__(self, method, url, headers):
        self.method = method
        self.url = url
        self.headers = Headers(headers)


class Response:
    """A response with the request it answers, for components marked ;req."""

    def __init__(self, status_code, headers, request):
        self.status_code = status_code
        self.headers = Headers(headers)
        self.request = request


def keygen(private_path, directory_path):
    key = Ed25519PrivateKey.generate()
    d = key.private_bytes_raw()
    x = b64url(key.public_key().public_bytes_raw())
    kid = thumbprint(x)
    with open(private_path, "w") as f:
        json.dump({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "d": b64url(d), "kid": kid}]}, f)
    with open(directory_path, "w") as f:
        json.dump({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig"}]}, f)
    print(kid)


def sign(private_path, method, url, agent, created=None, expires=None, nonce=None, body=None):
    jwk = json.load(open(private_path))["keys"][0]
    key = Ed25519PrivateKey.from_private_bytes(unb64url(jwk["d"]))
    kid = thumbprint(jwk["x"])
    now = datetime.datetime.now(datetime.timezone.utc)
    created = datetime.datetime.fromtimestamp(int(created), datetime.timezone.utc) if created else now
    expires = datetime.datetime.fromtimestamp(int(expires), datetime.timezone.utc) if expires else now + datetime.timedelta(minutes=5)
    message = Message(method, url, [("Signature-Agent", f'{LABEL}="{agent}"')])
    covered = COVERED
    if body is not None:
        ContentDigest.add(message.headers, body)
        covered = STATE_CHANGING
    signer = HTTPMessageSigner(signature_algorithm=algorithms.ED25519, key_resolver=MappingKeyResolver(public_keys={}, private_keys={kid: key}))
    signer.sign(
        message,
        key_id=kid,
        created=created,
        expires=expires,
        nonce=nonce or b64url(hashlib.sha256(str(now.timestamp()).encode() + url.encode()).digest()),
        label=LABEL,
        tag="web-bot-auth",
        covered_component_ids=covered,
        use_existing_digest=body is not None,
    )
    print(json.dumps({n.lower(): v for n, v in message.headers.items()}))


def verify_log(log_path, directory_paths):
    public = {}
    for path in directory_paths:
        for k in json.load(open(path))["keys"]:
            if k.get("kty") == "OKP" and k.get("crv") == "Ed25519":
                public[thumbprint(k["x"])] = Ed25519PublicKey.from_public_bytes(unb64url(k["x"]))
    verifier = HTTPMessageVerifier(signature_algorithm=algorithms.ED25519, key_resolver=MappingKeyResolver(public_keys=public, private_keys={}))
    total, verified, keyids, failures, agents = 0, 0, set(), [], set()
    for line in open(log_path):
        line = line.strip()
        if not line:
            continue
        r = json.loads(line)
        total += 1
        headers = [("Host", r["host"])]
        for name, field in (("Signature", "sig"), ("Signature-Input", "input"), ("Signature-Agent", "agent"), ("Content-Digest", "digest")):
            if r.get(field):
                headers.append((name, r[field]))
        # A request with a body (a hub subscription) must bind its method, target and body.
        required = STATE_CHANGING if r["method"] == "POST" else COVERED
        try:
            results = verifier.verify(Message(r["method"], f"http://{r['host']}{r['uri']}", headers), expect_tag="web-bot-auth")
            result = results[0]
            missing = [c for c in required if c not in result.covered_components]
            if missing:
                raise ValueError(f"not covered: {missing}")
            verified += 1
            keyids.add(result.parameters["keyid"])
            agents.add(result.covered_components[COVERED[1]])
        except Exception as e:  # every failure is reported, with the request
            if len(failures) < 5:
                failures.append(f"{r['method']} {r['uri']}: {type(e).__name__}: {e}")
    print(json.dumps({"total": total, "verified": verified, "keyids": sorted(keyids), "agents": sorted(agents), "failures": failures}))


def verify_directory(url):
    request = urllib.request.Request(url, headers={"Accept": "application/http-message-signatures-directory+json"})
    with urllib.request.urlopen(request, timeout=10) as r:
        body = r.read()
        headers = list(r.headers.items())
        status = r.status
        content_type = r.headers.get("Content-Type")
    public = {}
    for k in json.loads(body)["keys"]:
        if k.get("kty") == "OKP" and k.get("crv") == "Ed25519":
            public[thumbprint(k["x"])] = Ed25519PublicKey.from_public_bytes(unb64url(k["x"]))
    verifier = HTTPMessageVerifier(signature_algorithm=algorithms.ED25519, key_resolver=MappingKeyResolver(public_keys=public, private_keys={}))
    host = urllib.parse.urlsplit(url).netloc
    response = Response(status, headers, Message("GET", url, [("Host", host)]))
    results = verifier.verify(
        response,
        expect_tag="http-message-signatures-directory",
        require_components=('"@authority";req', '"content-digest"'),
        body=body,
    )
    bound = sorted(r.parameters["keyid"] for r in results)
    print(json.dumps({"content_type": content_type, "keys": sorted(public), "bound": bound, "signatures": len(results)}))


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "keygen":
        keygen(*args)
    elif command == "sign":
        sign(*args)
    elif command == "sign-post":
        private, url, agent, body = args
        sign(private, "POST", url, agent, body=body.encode())
    elif command == "verify-directory":
        verify_directory(args[0])
    elif command == "verify-log":
        verify_log(args[0], args[1:])
    else:
        sys.exit(f"unknown command {command}")

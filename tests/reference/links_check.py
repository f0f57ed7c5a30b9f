"""Links of HTML pages as a browser reads them, by parsers webcoop did not write: html5lib (the
HTML standard's tokenizer, tree construction and encoding sniffing) and ada (a WHATWG URL
parser). The crawler's own scan is compared with this (tests/tools/links_reference.rs).

argv[1]: a JSON file, a list of {"url": page URL, "path": file, "content_type": header or
null}.
stdout: a JSON list of {"links": [absolute URLs, document order], "refresh": URL or null,
"encoding": name}.

What counts as a link is the crawler's documented set (docs/CRAWLER.md): a/area href (and
SVG a href or xlink:href), link href with rel alternate, next, prev or canonical (not with
nofollow on a or area), frame and iframe src, the first meta refresh with a URL; none inside a
template; none at all under meta robots nofollow. The document's base is its first base
href. The fallback encoding is the crawler's: UTF-8 when the bytes are valid UTF-8, else
windows-1252.
"""

import codecs
import json
import sys

import ada_url
import html5lib

HTML = "{http://www.w3.org/1999/xhtml}"
SVG = "{http://www.w3.org/2000/svg}"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
FOLLOWED_RELS = {"alternate", "next", "prev", "canonical"}
SPACE = "\t\n\x0c\r "


def charset_of(content_type):
    if not content_type:
        return None
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip("\"'")
    return None


def strip_url(s):
    """The URL standard's preprocessing: C0 controls and spaces off both ends, tabs and
    newlines out."""
    s = s.strip("".join(chr(c) for c in range(0x21)))
    return s.replace("\t", "").replace("\n", "").replace("\r", "")


def _marked(err):
    """An unmappable code point, marked (\\x01 code point \\x02) for query_encode."""
    return ("".join("\x01%d\x02" % ord(c) for c in err.object[err.start:err.end]), err.end)


codecs.register_error("webcoop-url-charref", _marked)


def query_encode(query, encoding):
    """The URL standard's percent-encode after encoding, with the special-query set: a code
    point the encoding cannot hold is `%26%23` + its decimal value + `%3B` (the whole of
    `&#N;` percent-encoded, so it never reads as the query's separators)."""
    data = query.encode(encoding, "webcoop-url-charref")
    out = []
    i = 0
    while i < len(data):
        b = data[i]
        if b == 1:
            end = data.index(2, i)
            out.append("%%26%%23%s%%3B" % data[i + 1 : end].decode("ascii"))
            i = end + 1
            continue
        if b < 0x21 or b > 0x7E or b in b"\"#<>'":
            out.append("%%%02X" % b)
        else:
            out.append(chr(b))
        i += 1
    return "".join(out)


def parse(href, base, encoding):
    """`href` against `base` for a document in `encoding`; None where it fails."""
    try:
        url = ada_url.URL(href, base=base)
    except ValueError:
        return None
    # ada encodes every query in UTF-8; an HTML document's query is in its own encoding.
    if encoding not in ("utf-8", "utf-16le", "utf-16be"):
        raw = strip_url(href)
        if "?" in raw:
            query = raw.split("?", 1)[1].split("#", 1)[0]
            if url.protocol in ("http:", "https:"):
                url.search = "?" + query_encode(query, encoding)
    return url.href


def refresh_target(content):
    """The shared declarative refresh steps' URL string, or None."""
    s = content.lstrip(SPACE)
    i = 0
    while i < len(s) and s[i].isdigit() and s[i].isascii():
        i += 1
    if i == 0 and not s[i:].startswith("."):
        return None
    while i < len(s) and ((s[i].isdigit() and s[i].isascii()) or s[i] == "."):
        i += 1
    s = s[i:]
    if not s:
        return None
    if s[0] not in ";," + SPACE:
        return None
    s = s.lstrip(SPACE)
    if s[:1] in (";", ","):
        s = s[1:]
    s = s.lstrip(SPACE)
    if not s:
        return None
    url = s
    if s[:1] in ("u", "U"):
        if s[1:2] in ("r", "R") and s[2:3] in ("l", "L"):
            rest = s[3:].lstrip(SPACE)
            if rest[:1] == "=":
                s = rest[1:].lstrip(SPACE)
                return unquote(s)
        return url
    return unquote(s)


def unquote(s):
    if s[:1] in ("'", '"'):
        q, s = s[0], s[1:]
        end = s.find(q)
        return s if end < 0 else s[:end]
    return s


def elements(node, inert=False):
    """Every element in document order, with whether it lies inside a template."""
    for child in node:
        if not isinstance(child.tag, str):
            continue
        yield child, inert
        yield from elements(child, inert or child.tag == HTML + "template")


def read(page):
    with open(page["path"], "rb") as f:
        data = f.read()
    try:
        data.decode("utf-8")
        default = "utf-8"
    except UnicodeDecodeError:
        default = "windows-1252"
    parser = html5lib.HTMLParser(namespaceHTMLElements=True)
    doc = parser.parse(
        data,
        transport_encoding=charset_of(page.get("content_type")),
        default_encoding=default,
        useChardet=False,
    )
    encoding = parser.documentEncoding
    base = page["url"]
    hrefs, refresh, nofollow, base_seen = [], None, False, False
    for el, inert in elements(doc):
        if inert:
            continue
        tag, a = el.tag, el.attrib
        if tag == HTML + "base" and "href" in a and not base_seen:
            base_seen = True
            joined = parse(a["href"], page["url"], encoding)
            if joined:
                base = joined
        elif tag in (HTML + "a", HTML + "area", SVG + "a"):
            href = a.get("href")
            if href is None and tag == SVG + "a":
                href = a.get(XLINK_HREF)
            rels = a.get("rel", "").lower().split()
            if href is not None and "nofollow" not in rels:
                hrefs.append(href)
        elif tag in (HTML + "frame", HTML + "iframe") and "src" in a:
            hrefs.append(a["src"])
        elif tag == HTML + "link" and "href" in a:
            if FOLLOWED_RELS & set(a.get("rel", "").lower().split()):
                hrefs.append(a["href"])
        elif tag == HTML + "meta":
            name = a.get("name", "").lower()
            content = a.get("content", "")
            if name == "robots":
                words = {w.strip() for w in content.lower().split(",")}
                nofollow |= bool(words & {"nofollow", "none"})
            if (
                refresh is None
                and a.get("http-equiv", "").lower() == "refresh"
                and "content" in a
            ):
                refresh = refresh_target(content)
    links = [] if nofollow else [parse(h, base, encoding) for h in hrefs]
    target = parse(refresh, base, encoding) if refresh is not None else None
    return {"links": [u for u in links if u], "refresh": target, "encoding": encoding}


def main():
    with open(sys.argv[1]) as f:
        pages = json.load(f)
    json.dump([read(p) for p in pages], sys.stdout)


if __name__ == "__main__":
    main()

"""Serves a directory over loopback HTTP and reads a sitemap from it with ultimate-sitemap-parser.

Usage: sitemap_check.py DIR NAME
       sitemap_check.py --url URL   (fetch from a running server instead; no handshake)
Serves DIR on 127.0.0.1 (a free port) and prints the server's base URL on its own line, so the
caller can write sitemaps whose absolute URLs point at it. After the caller writes a line on
stdin, fetches BASE/NAME with usp's SitemapFetcher (which follows sitemap indexes and gzip
parts) and prints JSON on one line:
{"kind": class name of the root sitemap, "sub_sitemaps": [urls], "invalid": [urls with reasons],
 "pages": [{"url", "lastmod", "priority", "changefreq"}]} with URLs relative to the server root.
"""
import functools
import http.server
import json
import sys
import threading

from usp.fetch_parse import SitemapFetcher
from usp.objects.sitemap import InvalidSitemap


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def walk(sitemap, base, out):
    for sub in getattr(sitemap, "sub_sitemaps", []):
        out["sub_sitemaps"].append(sub.url.replace(base, "/"))
        if isinstance(sub, InvalidSitemap):
            out["invalid"].append({"url": sub.url.replace(base, "/"), "reason": sub.reason})
        walk(sub, base, out)


def report(url, base):
    root = SitemapFetcher(url=url, recursion_level=0).sitemap()
    out = {"kind": type(root).__name__, "sub_sitemaps": [], "invalid": [], "pages": []}
    if isinstance(root, InvalidSitemap):
        out["invalid"].append({"url": url, "reason": root.reason})
    walk(root, base, out)
    for page in root.all_pages():
        out["pages"].append(
            {
                "url": page.url,
                "lastmod": page.last_modified.strftime("%Y-%m-%dT%H:%M:%SZ") if page.last_modified else None,
                "priority": float(page.priority) if page.priority is not None else None,
                "changefreq": page.change_frequency.value if page.change_frequency else None,
            }
        )
    return out


def main():
    if sys.argv[1] == "--url":
        url = sys.argv[2]
        json.dump(report(url, url.rsplit("/", 1)[0] + "/"), sys.stdout)
        return
    directory, name = sys.argv[1], sys.argv[2]
    handler = functools.partial(Quiet, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d/" % server.server_address[1]
    print(base, flush=True)
    sys.stdin.readline()
    try:
        json.dump(report(base + name, base), sys.stdout)
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()

"""Reads a feed with feedparser (the reference feed reader) and prints what it saw as JSON.

Usage: feed_check.py FILE
Prints {"bozo": bool, "bozo_exception": str|null, "version": str, "feed": {...}, "entries": [...]}
with dates in UTC as "YYYY-MM-DDTHH:MM:SSZ" from feedparser's own parsed time tuples.
"""
import json
import sys
import time

import feedparser


def when(parsed):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", parsed) if parsed else None


def main():
    with open(sys.argv[1], "rb") as f:
        data = f.read()
    d = feedparser.parse(data)
    out = {
        "bozo": bool(d.bozo),
        "bozo_exception": repr(d.get("bozo_exception")) if d.bozo else None,
        "version": d.version,
        "feed": {
            "title": d.feed.get("title"),
            "link": d.feed.get("link"),
            "updated": when(d.feed.get("updated_parsed")),
            "links": [{"rel": l.get("rel"), "href": l.get("href")} for l in d.feed.get("links", [])],
            "sy_updateperiod": d.feed.get("sy_updateperiod"),
            "sy_updatefrequency": d.feed.get("sy_updatefrequency"),
        },
        "entries": [
            {
                "id": e.get("id"),
                "title": e.get("title"),
                "link": e.get("link"),
                "updated": when(e.get("updated_parsed")),
                "terms": [t.get("term") for t in e.get("tags", [])],
                "wc_popularity": e.get("wc_popularity"),
            }
            for e in d.entries
        ],
    }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()

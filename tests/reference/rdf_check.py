"""Parses robots.rdf with rdflib (a full RDF/XML parser) and prints the triples webcoop promises.

Usage: rdf_check.py FILE
Prints JSON {"channel": uri, "seq": [uris in rdf:Seq order], "items": {uri: {"date": str,
"format": str, "size": str, "etag": str, "popularity": str}}, "parts": {uri: {"date": str,
"version": str, "items": str}}}. A document that is not valid RDF/XML fails here.
"""
import json
import sys

from rdflib import Graph, Namespace, RDF, URIRef

RSS = Namespace("http://purl.org/rss/1.0/")
DC = Namespace("http://purl.org/dc/elements/1.1/")
WC = Namespace("https://webcoop.dev/ns/1.0#")


def main():
    g = Graph()
    g.parse(sys.argv[1], format="xml")
    channels = list(g.subjects(RDF.type, RSS.channel))
    assert len(channels) == 1, channels
    channel = channels[0]
    seq_node = g.value(channel, RSS.items)
    seq = []
    i = 1
    while True:
        member = g.value(seq_node, URIRef(str(RDF) + "_%d" % i))
        if member is None:
            break
        seq.append(str(member))
        i += 1
    items = {}
    for item in g.subjects(RDF.type, RSS.item):
        items[str(item)] = {
            "date": str(g.value(item, DC.date)),
            "format": str(g.value(item, DC["format"])) if g.value(item, DC["format"]) else None,
            "size": str(g.value(item, WC.size)) if g.value(item, WC.size) else None,
            "etag": str(g.value(item, WC.etag)) if g.value(item, WC.etag) else None,
            "popularity": str(g.value(item, WC.popularity)) if g.value(item, WC.popularity) else None,
        }
    parts = {}
    for part in g.objects(channel, WC.part):
        parts[str(part)] = {
            "date": str(g.value(part, DC.date)),
            "version": str(g.value(part, WC.version)),
            "items": str(g.value(part, WC["items"])),
        }
    json.dump({"channel": str(channel), "seq": seq, "items": items, "parts": parts}, sys.stdout)


if __name__ == "__main__":
    main()

"""Exact PageRank with NetworkX, the independent reference for `webcoop-crawl rank`.

Usage: pagerank_check.py ARCS ALPHA
Reads `SOURCE<TAB>TARGET` lines (duplicates collapse, as in a DiGraph) and prints
`NODE<TAB>SCORE` for every node. NetworkX spreads the rank of dangling nodes uniformly, as
webcoop does. The pure-Python iteration is used so the check needs no numpy or scipy.
"""
import sys

import networkx as nx
from networkx.algorithms.link_analysis.pagerank_alg import _pagerank_python


def main():
    g = nx.DiGraph()
    with open(sys.argv[1]) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2 and not parts[0].startswith("#"):
                g.add_edge(parts[0], parts[1])
    scores = _pagerank_python(g, alpha=float(sys.argv[2]), tol=1e-15, max_iter=100000)
    for node, score in scores.items():
        print(f"{node}\t{score!r}")


if __name__ == "__main__":
    main()

//! A link graph read from an arcs file (`SRC<TAB>DST` lines, plain or gzip), held as
//! compressed adjacency lists in both directions.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// What was wrong with an arcs file.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not `SRC<TAB>DST`.
    #[error("{path}:{line}: expected `SOURCE<TAB>TARGET`, found {found:?}")]
    Syntax {
        /// The file.
        path: String,
        /// 1-based line number.
        line: u64,
        /// The line, cut to 80 characters.
        found: String,
    },
    /// More nodes than the 32-bit indexes hold.
    #[error("{path}: more than {} nodes", u32::MAX)]
    TooLarge {
        /// The file.
        path: String,
    },
}

/// A directed graph over nodes `0..n`, with each node's label.
#[derive(Debug, Clone)]
pub struct Graph {
    labels: Vec<String>,
    out_start: Vec<u64>,
    out: Vec<u32>,
    in_start: Vec<u64>,
    inn: Vec<u32>,
}

/// Node labels: numbers are kept apart from names so that a numeric file (the usual case) is
/// read without a string per node.
#[derive(Default)]
struct Interner {
    by_number: Vec<u32>,
    by_name: HashMap<String, u32>,
    labels: Vec<String>,
}

const NONE: u32 = u32::MAX;

impl Interner {
    fn id(&mut self, token: &str) -> Option<u32> {
        if let Ok(n) = token.parse::<u32>()
            && !token.starts_with('+')
            && (token == "0" || !token.starts_with('0'))
        {
            let i = n as usize;
            if i >= self.by_number.len() {
                self.by_number.resize(i + 1, NONE);
            }
            if self.by_number[i] == NONE {
                self.by_number[i] = self.next()?;
                self.labels.push(token.to_string());
            }
            return Some(self.by_number[i]);
        }
        if let Some(id) = self.by_name.get(token) {
            return Some(*id);
        }
        let id = self.next()?;
        self.by_name.insert(token.to_string(), id);
        self.labels.push(token.to_string());
        Some(id)
    }

    fn next(&self) -> Option<u32> {
        u32::try_from(self.labels.len()).ok().filter(|n| *n != NONE)
    }

    /// Node order: numbers ascending, then names in order of appearance.
    fn order(&self) -> Vec<u32> {
        let mut order: Vec<u32> = self
            .by_number
            .iter()
            .copied()
            .filter(|id| *id != NONE)
            .collect();
        let mut named: Vec<u32> = self.by_name.values().copied().collect();
        named.sort_unstable();
        order.extend(named);
        order
    }
}

impl Graph {
    /// Reads an arcs file; gzip is recognised by its magic bytes. Blank lines and lines starting
    /// with `#` or `%` are skipped; duplicate arcs count once.
    pub fn read(path: &Path) -> Result<Graph, GraphError> {
        let name = path.display().to_string();
        let io = |source| GraphError::Io {
            path: name.clone(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(io)?;
        let mut magic = [0u8; 2];
        let got = file.read(&mut magic).map_err(io)?;
        let head = std::io::Cursor::new(magic[..got].to_vec());
        let chained = head.chain(file);
        let reader: Box<dyn BufRead> = if got == 2 && magic == [0x1f, 0x8b] {
            Box::new(BufReader::with_capacity(
                1 << 16,
                flate2::read::MultiGzDecoder::new(chained),
            ))
        } else {
            Box::new(BufReader::with_capacity(1 << 16, chained))
        };
        Self::parse(reader, &name)
    }

    /// Reads arcs from a reader (`name` is used in errors).
    pub(crate) fn parse(mut reader: impl BufRead, name: &str) -> Result<Graph, GraphError> {
        let mut nodes = Interner::default();
        let mut arcs: Vec<(u32, u32)> = Vec::new();
        let mut line = String::new();
        let mut number = 0u64;
        loop {
            line.clear();
            let n = reader
                .read_line(&mut line)
                .map_err(|source| GraphError::Io {
                    path: name.to_string(),
                    source,
                })?;
            if n == 0 {
                break;
            }
            number += 1;
            let text = line.trim();
            if text.is_empty() || text.starts_with('#') || text.starts_with('%') {
                continue;
            }
            let mut parts = text.split_whitespace();
            let (Some(a), Some(b), None) = (parts.next(), parts.next(), parts.next()) else {
                return Err(GraphError::Syntax {
                    path: name.to_string(),
                    line: number,
                    found: text.chars().take(80).collect(),
                });
            };
            let too_large = || GraphError::TooLarge {
                path: name.to_string(),
            };
            let s = nodes.id(a).ok_or_else(too_large)?;
            let t = nodes.id(b).ok_or_else(too_large)?;
            arcs.push((s, t));
        }
        // Renumber so that node i is the i-th in output order.
        let order = nodes.order();
        let mut rank = vec![0u32; order.len()];
        for (i, id) in order.iter().enumerate() {
            rank[*id as usize] = i as u32;
        }
        let labels = order
            .iter()
            .map(|id| std::mem::take(&mut nodes.labels[*id as usize]))
            .collect();
        for arc in &mut arcs {
            *arc = (rank[arc.0 as usize], rank[arc.1 as usize]);
        }
        Ok(Self::from_arcs(labels, arcs))
    }

    /// A graph over `labels.len()` nodes with these arcs (indexes into `labels`).
    pub(crate) fn from_arcs(labels: Vec<String>, mut arcs: Vec<(u32, u32)>) -> Graph {
        let n = labels.len();
        arcs.sort_unstable();
        arcs.dedup();
        let (out_start, out) = csr(n, arcs.iter().map(|a| (a.0, a.1)));
        let mut rev: Vec<(u32, u32)> = arcs.iter().map(|a| (a.1, a.0)).collect();
        drop(arcs);
        rev.sort_unstable();
        let (in_start, inn) = csr(n, rev.into_iter());
        Graph {
            labels,
            out_start,
            out,
            in_start,
            inn,
        }
    }

    /// A graph with nodes named `0..n`.
    pub(crate) fn numbered(n: usize, arcs: Vec<(u32, u32)>) -> Graph {
        Self::from_arcs((0..n).map(|i| i.to_string()).collect(), arcs)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no nodes.
    pub(crate) fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Number of (distinct) arcs.
    pub(crate) fn arcs(&self) -> usize {
        self.out.len()
    }

    /// The label of node `i`.
    pub(crate) fn label(&self, i: usize) -> &str {
        &self.labels[i]
    }

    /// The nodes `i` links to.
    pub fn children(&self, i: usize) -> &[u32] {
        &self.out[self.out_start[i] as usize..self.out_start[i + 1] as usize]
    }

    /// The nodes linking to `i`.
    pub(crate) fn parents(&self, i: usize) -> &[u32] {
        &self.inn[self.in_start[i] as usize..self.in_start[i + 1] as usize]
    }

    /// Out-degree of `i`.
    pub(crate) fn out_degree(&self, i: usize) -> usize {
        (self.out_start[i + 1] - self.out_start[i]) as usize
    }
}

/// Compressed rows from pairs sorted by their first element.
fn csr(n: usize, pairs: impl Iterator<Item = (u32, u32)>) -> (Vec<u64>, Vec<u32>) {
    let mut start = vec![0u64; n + 1];
    let mut list = Vec::new();
    for (a, b) in pairs {
        start[a as usize + 1] += 1;
        list.push(b);
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    (start, list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_and_named_nodes_duplicates_and_comments() {
        let text = "# a comment\n2\t0\n0\t1\n0\t1\n\nb a\n1\t2\n";
        let g = Graph::parse(text.as_bytes(), "t").unwrap();
        assert_eq!(g.len(), 5);
        let labels: Vec<&str> = (0..5).map(|i| g.label(i)).collect();
        assert_eq!(labels, ["0", "1", "2", "b", "a"]);
        assert_eq!(g.arcs(), 4, "the duplicate 0->1 counts once");
        assert_eq!(g.children(0), &[1]);
        assert_eq!(g.parents(0), &[2]);
        assert_eq!(g.children(3), &[4]);
        assert_eq!(g.out_degree(4), 0);
    }

    #[test]
    fn a_bad_line_is_named() {
        let err = Graph::parse("0\t1\n0 1 2\n".as_bytes(), "arcs.txt").unwrap_err();
        assert_eq!(
            err.to_string(),
            "arcs.txt:2: expected `SOURCE<TAB>TARGET`, found \"0 1 2\""
        );
    }

    #[test]
    fn gzip_is_recognised() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.arcs.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"0\t1\n1\t0\n").unwrap();
        std::fs::write(&path, gz.finish().unwrap()).unwrap();
        let g = Graph::read(&path).unwrap();
        assert_eq!((g.len(), g.arcs()), (2, 2));
        let missing = Graph::read(&dir.path().join("none")).unwrap_err();
        assert!(missing.to_string().contains("none"), "{missing}");
    }
}

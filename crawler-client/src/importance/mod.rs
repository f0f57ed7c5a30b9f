//! Page importance: OPIC as the crawler computes it on line, exact PageRank as the reference.
//! The simulations that measure one against the other are in `offline`.

pub(crate) mod graph;
pub(crate) mod heap;
pub(crate) mod opic;
pub(crate) mod pagerank;

//! Page importance: OPIC as the crawler computes it on line, exact PageRank as the reference.
//! The simulations that measure one against the other are in `offline`.

pub mod graph;
pub mod heap;
pub mod opic;
pub mod pagerank;

//! Page importance: OPIC as the crawler computes it on line, exact PageRank as the reference,
//! and the simulations that measure one against the other (the OPIC paper's experiment and
//! Castillo's crawl-order comparison).

pub mod graph;
pub mod heap;
pub mod opic;
pub mod opic_sim;
pub mod order_sim;
pub mod pagerank;

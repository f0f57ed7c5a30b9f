//! What the agent and the crawler share about the machine they run on, beyond the wire
//! formats of `webcoop-protocol`.

pub mod private;

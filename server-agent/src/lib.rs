//! webcoop-agent

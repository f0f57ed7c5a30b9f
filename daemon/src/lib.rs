//! What the agent and the crawler share as long-running services, beyond the wire formats of
//! `webcoop-protocol`: state only their user may read ([`private`]), the live consoles' access
//! rules, assets and HTTP pieces ([`console`]), their databases' errors ([`sqlite_error`]),
//! the man pages and completions generated from their command lines ([`generated_docs`]), and
//! the one rule for their environment variables ([`command_line`]) and the merging of their
//! settings' layers ([`layered`]).

// A function over 100 lines is split where its parts can be named (tests apart).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod command_line;
pub mod console;
pub mod generated_docs;
pub mod layered;
pub mod private;
pub mod sqlite_error;
pub mod sqlite_plans;

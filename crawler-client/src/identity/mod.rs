//! Who the crawler says it is: Web Bot Auth signatures on its requests ([`signer`]) with keys
//! it makes, rotates and publishes itself ([`keys_command`]).

pub(crate) mod keys_command;
pub(crate) mod signer;

//! What each command does once parsed ([`crate::cli`]): a module per command
//! group, each printing its JSON lines and giving the exit status.

pub mod data;
pub mod keys;

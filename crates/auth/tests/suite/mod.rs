//! Test modules.

mod audit_key;
mod keychain;

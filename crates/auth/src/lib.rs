//! shim-auth: see README.md.

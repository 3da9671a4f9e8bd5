//! shim-jail: see README.md.

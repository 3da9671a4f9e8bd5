//! shim-exec: see README.md.

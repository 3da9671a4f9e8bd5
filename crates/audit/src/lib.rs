//! shim-audit: see README.md.

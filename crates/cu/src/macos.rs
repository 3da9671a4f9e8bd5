//! macOS: the portable backend with the macOS feature table (2.2).

/// Opens the macOS backend.
pub(crate) fn open() -> crate::Desktop {
    crate::portable::desktop(crate::backend::HostKind::MacOs)
}

//! Windows: the portable backend with the Windows feature table (2.2).

/// Opens the Windows backend.
pub(crate) fn open() -> crate::Desktop {
    crate::portable::desktop(crate::backend::HostKind::Windows)
}

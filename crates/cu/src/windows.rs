//! Windows: the portable backend with the Windows feature table (2.2).

/// Opens the Windows backend, per-monitor DPI aware first (capture and input then agree in
/// physical pixels on a scaled display).
pub(crate) fn open() -> crate::Desktop {
    let awareness = crate::win32::dpi_aware();
    tracing::debug!(awareness, "computer use: DPI awareness");
    crate::portable::desktop(crate::backend::HostKind::Windows)
}

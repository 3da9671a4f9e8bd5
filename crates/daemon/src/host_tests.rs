#![allow(clippy::unwrap_used)]

use super::*;

#[test]
fn platform_and_arch_normalisation() {
    assert_eq!(
        normalize_platform("linux", Some("Linux version 5.15 (gcc)")),
        Some(Platform::Linux)
    );
    assert_eq!(
        normalize_platform(
            "linux",
            Some("Linux version 5.15.90.1-Microsoft-standard-WSL2")
        ),
        Some(Platform::Wsl2)
    );
    assert_eq!(normalize_platform("macos", None), Some(Platform::Darwin));
    assert_eq!(normalize_platform("windows", None), Some(Platform::Windows));
    assert_eq!(normalize_platform("freebsd", None), None);
    assert_eq!(normalize_arch("AMD64"), Some(Arch::X86_64));
    assert_eq!(normalize_arch("aarch64"), Some(Arch::Arm64));
    assert_eq!(normalize_arch("riscv64"), None);
}

#[test]
fn linux_machine_id_is_formatted_as_uuid() {
    assert_eq!(
        normalize_linux_machine_id("3F2504E04F8911D39A0C0305E82C3301\n").as_deref(),
        Some("3f2504e0-4f89-11d3-9a0c-0305e82c3301")
    );
    assert_eq!(
        normalize_linux_machine_id(" custom-id ").as_deref(),
        Some("custom-id")
    );
    assert_eq!(normalize_linux_machine_id("  \n"), None);
}

#[test]
fn fallback_ids_satisfy_the_platform_pattern() {
    let id = new_fallback_id("my_host name/ü");
    assert!(id.len() <= 128);
    assert!(id.starts_with(|c: char| c.is_ascii_alphanumeric()));
    assert!(
        id.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
    );
    assert!(new_fallback_id(&"x".repeat(300)).len() <= 128);
}

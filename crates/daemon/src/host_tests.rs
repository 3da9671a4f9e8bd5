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

/// Test double: the output of `ioreg -rd1 -c IOPlatformExpertDevice` captured on an
/// Apple-silicon MacBook Pro (macOS 14), serial numbers and UUID replaced. No Mac runs here.
const IOREG_CAPTURED_DOUBLE: &str = r##"+-o J314sAP  <class IOPlatformExpertDevice, id 0x100000211, registered, matched, active, busy 0 (41 ms), retain 36>
    {
      "IOPolledInterface" = "AppleARMWatchdogTimerHibernateHandler is not serializable"
      "#address-cells" = <02000000>
      "AAPL,phandle" = <01000000>
      "serial-number" = <4332585858585858585800000000000000000000000000000000000000000000>
      "IOBusyInterest" = "IOCommand is not serializable"
      "target-type" = <"J314s">
      "platform-name" = <7436303030000000000000000000000000000000000000000000000000000000>
      "secure-root-prefix" = <"md">
      "name" = <"device-tree">
      "manufacturer" = <"Apple Inc.">
      "compatible" = <"J314sAP","MacBookPro18,3","AppleARM">
      "IOPlatformSerialNumber" = "C02XXXXXXXXX"
      "model" = <"MacBookPro18,3">
      "IONWInterrupts" = "IONWInterrupts"
      "device_type" = <"bootrom">
      "#size-cells" = <02000000>
      "IOPlatformUUID" = "6E3F1C2A-9B4D-5E8F-A1B2-C3D4E5F60718"
    }
"##;

/// Test double: an Intel Mac's output (macOS 12), which puts the UUID before other keys.
const IOREG_INTEL_DOUBLE: &str = r##"+-o MacBookPro16,1  <class IOPlatformExpertDevice, id 0x100000110, registered, matched, active, busy 0 (112 ms), retain 33>
    {
      "IOPlatformSystemSleepPolicy" = <534c505402000a00640000006400000000000000000000000000000000000000>
      "compatible" = <"MacBookPro16,1">
      "version" = <"1.0">
      "board-id" = <"Mac-E1008331FDC96864">
      "IOInterruptSpecifiers" = (<0900000005000000>)
      "IOPlatformUUID" = "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9"
      "serial-number" = <...>
      "IOPlatformSerialNumber" = "C02YYYYYYYYY"
      "manufacturer" = <"Apple Inc.">
    }
"##;

#[test]
fn macos_platform_uuid_is_parsed_from_ioreg_output() {
    assert_eq!(
        parse_ioreg_platform_uuid(IOREG_CAPTURED_DOUBLE).as_deref(),
        Some("6e3f1c2a-9b4d-5e8f-a1b2-c3d4e5f60718")
    );
    assert_eq!(
        parse_ioreg_platform_uuid(IOREG_INTEL_DOUBLE).as_deref(),
        Some("0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9")
    );
    // CRLF and surrounding spaces are trimmed; only the first matching line counts.
    assert_eq!(
        parse_ioreg_platform_uuid(
            "  \"IOPlatformUUID\" =  \"AB-CD\"  \r\n\"IOPlatformUUID\" = \"x\""
        )
        .as_deref(),
        Some("ab-cd")
    );
}

#[test]
fn macos_output_without_a_usable_uuid_falls_back() {
    // No line (ioreg of a VM without the key, or an error page), no `=`, an empty value.
    assert_eq!(parse_ioreg_platform_uuid(""), None);
    assert_eq!(
        parse_ioreg_platform_uuid(
            &IOREG_CAPTURED_DOUBLE.replace("IOPlatformUUID", "IOPlatformXXXX")
        ),
        None
    );
    assert_eq!(parse_ioreg_platform_uuid("\"IOPlatformUUID\" \"x\""), None);
    assert_eq!(parse_ioreg_platform_uuid("\"IOPlatformUUID\" = \"\""), None);
}

/// Test double: `MachineGuid` as `reg query HKLM\SOFTWARE\Microsoft\Cryptography /v
/// MachineGuid /reg:64` shows it on Windows 11 (the registry API hands over the same REG_SZ
/// text, possibly with its terminating NUL). Wine writes a lower-case one at prefix creation.
const MACHINE_GUID_DOUBLE: &str = "4C4C4544-0042-3510-8052-B4C04F4B4D32";

#[test]
fn windows_machine_guid_is_lower_cased() {
    assert_eq!(
        normalize_machine_guid(MACHINE_GUID_DOUBLE).as_deref(),
        Some("4c4c4544-0042-3510-8052-b4c04f4b4d32")
    );
    assert_eq!(
        normalize_machine_guid("4c4c4544-0042-3510-8052-b4c04f4b4d32\0").as_deref(),
        Some("4c4c4544-0042-3510-8052-b4c04f4b4d32")
    );
    assert_eq!(normalize_machine_guid(" \0"), None);
}

/// On Windows (under Wine in CI) the registry read itself: Wine and Windows both create
/// `MachineGuid` at install time, so the id comes from the OS, not the fallback file.
#[cfg(windows)]
#[test]
fn windows_reads_machine_guid_from_the_registry() {
    let id = os_machine_id().unwrap();
    assert_eq!(id, id.to_lowercase());
    assert_eq!(id.len(), 36, "{id}");
}

#[test]
fn fallback_file_is_created_then_reused() {
    let home = tempfile::tempdir().unwrap();
    let first = fallback_machine_id(home.path(), "ada's mac");
    assert!(first.starts_with("ada-s-mac-"), "{first}");
    let file = home.path().join(".autogpt-local-executor-machine-id");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), first);
    assert_eq!(fallback_machine_id(home.path(), "other"), first);
    std::fs::write(&file, "  kept-id \n").unwrap();
    assert_eq!(fallback_machine_id(home.path(), "other"), "kept-id");
}

#[test]
fn fallback_id_is_returned_even_if_it_cannot_be_written() {
    let home = tempfile::tempdir().unwrap();
    let missing = home.path().join("no-such-dir");
    let a = fallback_machine_id(&missing, "h");
    let b = fallback_machine_id(&missing, "h");
    assert!(a.starts_with("h-") && b.starts_with("h-"));
    assert_ne!(a, b, "nothing persisted, so each start gets a new id");
}

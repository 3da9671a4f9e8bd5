//! The export bundle (1.18).

use std::io::Read;

use super::common::*;

/// Reads the members of a ZIP (name, inflated bytes) from its central directory.
pub(crate) fn unzip(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let u16le = |o: usize| u16::from_le_bytes([bytes[o], bytes[o + 1]]) as usize;
    let u32le = |o: usize| u32::from_le_bytes(bytes[o..o + 4].try_into().unwrap()) as usize;
    let eocd = bytes.len() - 22;
    assert_eq!(u32le(eocd), 0x0605_4b50);
    let count = u16le(eocd + 10);
    let mut cd = u32le(eocd + 16);
    let mut out = Vec::new();
    for _ in 0..count {
        assert_eq!(u32le(cd), 0x0201_4b50);
        assert_eq!(u16le(cd + 10), 8, "deflate");
        let crc = u32le(cd + 16) as u32;
        let csize = u32le(cd + 20);
        let name_len = u16le(cd + 28);
        let local = u32le(cd + 42);
        let name = String::from_utf8(bytes[cd + 46..cd + 46 + name_len].to_vec()).unwrap();
        let data_start = local + 30 + u16le(local + 26) + u16le(local + 28);
        let mut data = Vec::new();
        flate2::read::DeflateDecoder::new(&bytes[data_start..data_start + csize])
            .read_to_end(&mut data)
            .unwrap();
        let mut c = flate2::Crc::new();
        c.update(&data);
        assert_eq!(c.sum(), crc);
        out.push((name, data));
        cd += 46 + name_len + u16le(cd + 30) + u16le(cd + 32);
    }
    out
}

#[test]
fn bundle_holds_logs_manifest_and_signature() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    let log = open(&p);
    log.append_blocking(event(1)).unwrap();
    let rotated = log
        .rotate_blocking(shim_audit::RotateReason::Explicit)
        .unwrap()
        .unwrap();
    log.append_blocking(event(2)).unwrap();
    drop(log);
    let out = dir.path().join("bundle.zip");
    let s = shim_audit::export::export_bundle(&p, &key(), &out).unwrap();
    assert_eq!(s.files, 2);
    let members = unzip(&std::fs::read(&out).unwrap());
    let names: Vec<&str> = members.iter().map(|m| m.0.as_str()).collect();
    let rname = shim_audit::files::file_name(&rotated);
    assert_eq!(
        names,
        vec!["audit.log", rname.as_str(), "manifest.json", "manifest.sig"]
    );
    assert_eq!(members[0].1, std::fs::read(&p).unwrap());
    let manifest = &members[2].1;
    let sig = String::from_utf8(members[3].1.clone()).unwrap();
    assert_eq!(sig, key().mac_hex(manifest));
    assert_eq!(sig, s.signature);
    let text = String::from_utf8(manifest.clone()).unwrap();
    assert!(text.starts_with("{\"exported_at\": \""), "{text}");
    assert!(text.contains("+00:00\", \"files\": [{\"name\": \"audit.log\", \"sha256\": \""));
    assert!(text.ends_with("], \"key_username\": \"audit_key\"}"));
    let digest = ring::digest::digest(&ring::digest::SHA256, &members[1].1);
    assert!(text.contains(&hex::encode(digest.as_ref())));
    // It is also strict JSON.
    let v: serde_json::Value = serde_json::from_slice(manifest).unwrap();
    assert_eq!(v["files"][1]["size"], members[1].1.len());
}

#[test]
fn nothing_to_export() {
    let dir = tempfile::tempdir().unwrap();
    let r = shim_audit::export::export_bundle(
        &dir.path().join("audit.log"),
        &key(),
        &dir.path().join("x.zip"),
    );
    assert!(matches!(r, Err(shim_audit::export::ExportError::Nothing)));
}

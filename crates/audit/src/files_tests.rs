use std::io::Write;

use super::*;

#[test]
fn rotated_names_are_recognised_and_ordered() {
    assert_eq!(
        rotated_sort_key("audit.log", "audit.log.20260101-000000"),
        Some(("20260101-000000".into(), 0))
    );
    assert_eq!(
        rotated_sort_key("audit.log", "audit.log.20260101-000000-12"),
        Some(("20260101-000000".into(), 12))
    );
    for bad in [
        "audit.log",
        ".audit.log.lock",
        "audit.log.20260101-00000",
        "audit.log.20260101-000000-0",
        "audit.log.20260101-000000-",
        "audit.log.20260101-000000-01",
        "audit.log.2026010a-000000",
        "audit.logx.20260101-000000",
    ] {
        assert_eq!(rotated_sort_key("audit.log", bad), None, "{bad}");
    }
}

#[test]
fn last_line_is_found_however_long() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    let long = "x".repeat(300_000);
    std::fs::write(&p, format!("first\n{long}\n\n  \n")).unwrap();
    let (line, lf) = read_last_line(&mut File::open(&p).unwrap()).unwrap();
    assert_eq!(line.unwrap().len(), 300_000);
    assert!(lf);
    let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
    f.write_all(b"torn").unwrap();
    let (line, lf) = read_last_line(&mut File::open(&p).unwrap()).unwrap();
    assert_eq!(line.unwrap(), b"torn");
    assert!(!lf);
    std::fs::write(&p, "only").unwrap();
    assert_eq!(
        read_last_line(&mut File::open(&p).unwrap())
            .unwrap()
            .0
            .unwrap(),
        b"only"
    );
    std::fs::write(&p, "\n \n").unwrap();
    assert_eq!(
        read_last_line(&mut File::open(&p).unwrap()).unwrap().0,
        None
    );
}

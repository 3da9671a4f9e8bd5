use super::*;

#[test]
fn table_and_rules_of_8_2() {
    let cases: &[(&str, Option<&str>)] = &[
        ("a.txt", Some("text/plain")),
        ("A.TXT", Some("text/plain")),
        ("data.CSV", Some("text/csv")),
        ("x.tsv", Some("text/tab-separated-values")),
        ("r.md", Some("text/markdown")),
        ("r.markdown", Some("text/markdown")),
        ("i.htm", Some("text/html")),
        ("m.mjs", Some("text/javascript")),
        ("p.py", Some("text/x-python")),
        ("s.sh", Some("text/x-sh")),
        ("f.jpeg", Some("image/jpeg")),
        ("f.ico", Some("image/vnd.microsoft.icon")),
        ("f.tif", Some("image/tiff")),
        ("f.7z", Some("application/x-7z-compressed")),
        (
            "f.docx",
            Some("application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
        ),
        ("f.wav", Some("audio/x-wav")),
        ("f.wasm", Some("application/wasm")),
        ("f.bin", Some("application/octet-stream")),
        ("a.tar.gz", Some("application/x-tar")),
        ("a.TAR.XZ", Some("application/x-tar")),
        ("a.tar.bz2", Some("application/x-tar")),
        ("a.tgz", Some("application/x-tar")),
        ("a.tar", Some("application/x-tar")),
        ("a.gz", None),
        ("a.bz2", None),
        ("a.xz", None),
        ("Makefile", None),
        (".bashrc", None),
        (".txt", None),
        ("a.unknownext", None),
        ("a.", None),
        ("", None),
        ("..txt", Some("text/plain")),
    ];
    for (name, want) in cases {
        assert_eq!(mime_for_name(name), *want, "{name:?}");
    }
}

//! Section 6: FILE_READ.

use base64::Engine;
use shim_jail::ContentEncoding;
use shim_jail::ReadFormat;
use shim_jail::ReadOptions;
use shim_protocol::ErrorCode;

use super::common::Fx;
use super::common::code;

fn opts(format: ReadFormat, offset: u64, length: Option<u64>) -> ReadOptions {
    ReadOptions {
        format,
        offset,
        length,
    }
}

#[test]
fn window_and_truncated_flag() {
    let fx = Fx::new();
    fx.file("f.txt", "abcdefghij");
    let r = fx
        .jail
        .read(&fx.p("f.txt"), &opts(ReadFormat::Text, 2, Some(3)))
        .unwrap();
    assert_eq!(
        (r.content.as_str(), r.size_bytes, r.truncated),
        ("cde", 3, true)
    );
    assert_eq!(r.encoding, ContentEncoding::Utf8);
    assert_eq!(r.path, fx.p("f.txt"));
    let r = fx
        .jail
        .read(&fx.p("f.txt"), &opts(ReadFormat::Text, 0, None))
        .unwrap();
    assert_eq!((r.content.as_str(), r.truncated), ("abcdefghij", false));
    let r = fx
        .jail
        .read(&fx.p("f.txt"), &opts(ReadFormat::Text, 7, Some(100)))
        .unwrap();
    assert_eq!(
        (r.content.as_str(), r.size_bytes, r.truncated),
        ("hij", 3, false)
    );
    // Offset at or beyond EOF: zero bytes, success.
    for off in [10, 50] {
        let r = fx
            .jail
            .read(&fx.p("f.txt"), &opts(ReadFormat::Text, off, None))
            .unwrap();
        assert_eq!(
            (r.content.as_str(), r.size_bytes, r.truncated),
            ("", 0, false)
        );
    }
    assert_eq!(
        code(
            fx.jail
                .read(&fx.p("f.txt"), &opts(ReadFormat::Text, 0, Some(0)))
        ),
        ErrorCode::InternalError
    );
}

#[test]
fn text_mode_replaces_ill_formed_utf8_and_keeps_crlf() {
    let fx = Fx::new();
    std::fs::write(fx.at("b"), b"a\r\n\xff\xfeb\xe2\x82").unwrap();
    let r = fx.jail.read(&fx.p("b"), &ReadOptions::default()).unwrap();
    assert_eq!(r.content, "a\r\n\u{fffd}\u{fffd}b\u{fffd}");
    assert_eq!(r.size_bytes, 8);
    // A window that splits a multi-byte character yields a replacement character.
    std::fs::write(fx.at("e"), "é".as_bytes()).unwrap();
    let r = fx
        .jail
        .read(&fx.p("e"), &opts(ReadFormat::Text, 0, Some(1)))
        .unwrap();
    assert_eq!(r.content, "\u{fffd}");
}

#[test]
fn bytes_mode_is_padded_base64() {
    let fx = Fx::new();
    std::fs::write(fx.at("bin"), [0u8, 1, 2, 255]).unwrap();
    let r = fx
        .jail
        .read(&fx.p("bin"), &opts(ReadFormat::Bytes, 0, None))
        .unwrap();
    assert_eq!(r.encoding, ContentEncoding::Base64);
    assert_eq!(r.content, "AAEC/w==");
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(&r.content)
            .unwrap(),
        [0, 1, 2, 255]
    );
    assert_eq!(ReadFormat::from_wire("base64", "text"), ReadFormat::Bytes);
    assert_eq!(ReadFormat::from_wire("utf-8", "bytes"), ReadFormat::Bytes);
    assert_eq!(ReadFormat::from_wire("utf-8", "text"), ReadFormat::Text);
}

#[test]
fn budgets_of_5_3() {
    let fx = Fx::new();
    let f = std::fs::File::create(fx.at("big")).unwrap();
    f.set_len(3_000_000).unwrap();
    // Whole-file text read over 2 785 280 fails even with a 10 MiB limit.
    assert_eq!(
        code(fx.jail.read(&fx.p("big"), &ReadOptions::default())),
        ErrorCode::FileTooLarge
    );
    // A bounded window is fine; bytes mode has the bigger budget.
    let r = fx
        .jail
        .read(&fx.p("big"), &opts(ReadFormat::Text, 100, Some(10)))
        .unwrap();
    assert!(r.truncated);
    assert!(
        fx.jail
            .read(&fx.p("big"), &opts(ReadFormat::Bytes, 0, None))
            .is_ok()
    );
    // `length` over the limit fails even when the file is smaller.
    fx.file("small", "x");
    assert_eq!(
        code(
            fx.jail
                .read(&fx.p("small"), &opts(ReadFormat::Text, 0, Some(2_785_281)))
        ),
        ErrorCode::FileTooLarge
    );
    assert!(
        fx.jail
            .read(&fx.p("small"), &opts(ReadFormat::Text, 0, Some(2_785_280)))
            .is_ok()
    );
    assert_eq!(
        code(fx.jail.read(
            &fx.p("small"),
            &opts(ReadFormat::Bytes, 0, Some(12_533_761))
        )),
        ErrorCode::FileTooLarge
    );
    // The effective max_file_size lowers both budgets.
    fx.jail.lower_max_file_size(5);
    assert_eq!(
        code(
            fx.jail
                .read(&fx.p("small"), &opts(ReadFormat::Bytes, 0, Some(6)))
        ),
        ErrorCode::FileTooLarge
    );
}

#[test]
fn missing_directory_special_and_followed_links() {
    let fx = Fx::new();
    fx.dir("d");
    fx.file("t.txt", "T");
    fx.link("l", "t.txt");
    fx.link("dl", "nope");
    fx.link("out", fx.outside.join("secret.txt").to_str().unwrap());
    assert_eq!(
        code(fx.jail.read(&fx.p("nope"), &ReadOptions::default())),
        ErrorCode::PathNotFound
    );
    let e = fx
        .jail
        .read(&fx.p("d"), &ReadOptions::default())
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::InternalError);
    assert!(e.to_string().contains("is a directory, not a file"));
    let r = fx.jail.read(&fx.p("l"), &ReadOptions::default()).unwrap();
    assert_eq!((r.content.as_str(), r.path), ("T", fx.p("t.txt")));
    assert_eq!(
        code(fx.jail.read(&fx.p("dl"), &ReadOptions::default())),
        ErrorCode::PathNotFound
    );
    assert_eq!(
        code(fx.jail.read(&fx.p("out"), &ReadOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
    let e = fx
        .jail
        .read(
            fx.outside.join("secret.txt").to_str().unwrap(),
            &ReadOptions::default(),
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::PathOutsideAllowedRoot);
    assert!(
        !e.to_string().contains("secret\n"),
        "no content in messages"
    );
    // A device is not a regular file.
    fx.link("null", "/dev/null");
    assert_eq!(
        code(fx.jail.read(&fx.p("null"), &ReadOptions::default())),
        ErrorCode::PathOutsideAllowedRoot
    );
}

// mknodat is Linux-only in rustix.
#[cfg(target_os = "linux")]
#[test]
fn a_device_node_inside_the_root_is_refused() {
    let fx = Fx::new();
    // Root can create device nodes; skip elsewhere.
    let made = rustix::fs::mknodat(
        rustix::fs::CWD,
        fx.at("null"),
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 3),
    );
    if made.is_ok() {
        assert_eq!(
            code(fx.jail.read(&fx.p("null"), &ReadOptions::default())),
            ErrorCode::InternalError
        );
    }
}

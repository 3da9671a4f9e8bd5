#![allow(clippy::unwrap_used)]

use x11rb::protocol::xproto::ConnectionExt as _;
use x11rb::protocol::xproto::CreateGCAux;
use x11rb::wrapper::ConnectionExt as _;

use super::*;
use crate::testing::Xvfb;

/// Paints a pattern no two pixels of a row or a column share on the root window, so that
/// a capture at the wrong offset or with the wrong stride cannot compare equal.
fn paint(conn: &RustConnection, root: Window, depth: u8, [w, h]: [u16; 2]) {
    let gc = conn.generate_id().unwrap();
    conn.create_gc(gc, root, &CreateGCAux::new()).unwrap();
    let mut data = Vec::with_capacity(usize::from(w) * usize::from(h) * 4);
    for y in 0..u32::from(h) {
        for x in 0..u32::from(w) {
            data.extend_from_slice(&[(x % 251) as u8, (y % 241) as u8, ((x + y) % 239) as u8, 0]);
        }
    }
    // Row by row: one request stays below the server's maximum request length.
    for (row, line) in data.chunks_exact(usize::from(w) * 4).enumerate() {
        conn.put_image(
            ImageFormat::Z_PIXMAP,
            root,
            gc,
            w,
            1,
            0,
            i16::try_from(row).unwrap(),
            0,
            depth,
            line,
        )
        .unwrap();
    }
    conn.sync().unwrap();
}

fn get_image(conn: &RustConnection, root: Window, [x, y]: [i16; 2], [w, h]: [u16; 2]) -> Vec<u8> {
    conn.get_image(ImageFormat::Z_PIXMAP, root, x, y, w, h, !0)
        .unwrap()
        .reply()
        .unwrap()
        .data
}

#[test]
fn xvfb_offers_mit_shm_and_it_captures_what_get_image_does() {
    let xvfb = Xvfb::start(640, 480);
    let conn = xvfb.conn();
    let screen = &conn.setup().roots[0];
    let (root, depth) = (screen.root, screen.root_depth);
    paint(&conn, root, depth, [640, 480]);
    let shm = Shm::probe(&conn);
    assert!(shm.usable, "Xvfb offers MIT-SHM 1.2; the probe must see it");
    // A small region first, then the whole screen (the segment grows), then an inner
    // region again (the grown segment is reused).
    for (at, size) in [
        ([10, 20], [64, 32]),
        ([0, 0], [640, 480]),
        ([333, 153], [200, 100]),
    ] {
        let shared = shm
            .capture(&conn, root, at, size, |data, d| (data.to_vec(), d))
            .expect("MIT-SHM answers");
        assert_eq!(shared.1, depth);
        assert!(
            shared.0 == get_image(&conn, root, at, size),
            "MIT-SHM and GetImage differ at {at:?} {size:?}"
        );
    }
    let seg = shm.segment.lock().unwrap();
    assert_eq!(seg.as_ref().unwrap().map.len(), 640 * 480 * 4);
}

#[test]
fn without_mit_shm_capture_answers_none_and_get_image_is_used() {
    let xvfb = Xvfb::start(64, 64);
    let conn = xvfb.conn();
    let root = conn.setup().roots[0].root;
    let shm = Shm {
        usable: false,
        segment: Mutex::new(None),
    };
    assert!(
        shm.capture(&conn, root, [0, 0], [8, 8], |d, _| d.len())
            .is_none()
    );
    assert!(shm.segment.lock().unwrap().is_none(), "no segment was made");
}

use super::*;
use crate::backend::Image;
use crate::encode::jpeg_in_bands;

/// Text-like strokes, flat areas and a noisy gradient, different in every row, so a band
/// joined in the wrong place or with the wrong DC prediction shows.
fn screen(w: u32, h: u32) -> Image {
    let mut rgb = Vec::with_capacity((w * h * 3) as usize);
    let mut seed = 0x2545_f491_u32;
    for y in 0..h {
        for x in 0..w {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let px = if (x / 7 + y / 11) % 5 == 0 && x % 3 != 0 {
                [20, 20, 20]
            } else if x < w / 3 {
                [240, 240, 235]
            } else {
                let n = (seed % 24) as u8;
                [
                    ((x * 255) / w) as u8 / 2 + n,
                    ((y * 255) / h) as u8 / 2 + n,
                    (((x + y) * 255) / (w + h)) as u8 / 2,
                ]
            };
            rgb.extend_from_slice(&px);
        }
    }
    Image {
        width: w,
        height: h,
        rgb,
    }
}

fn decode(jpeg: &[u8]) -> (u16, u16, Vec<u8>) {
    let mut d = jpeg_decoder::Decoder::new(std::io::Cursor::new(jpeg));
    let px = d.decode().unwrap();
    let info = d.info().unwrap();
    (info.width, info.height, px)
}

fn has_restart_interval(jpeg: &[u8]) -> bool {
    jpeg.windows(2).any(|w| w == [0xFF, 0xDD])
}

#[test]
fn bands_decode_to_the_same_pixels_as_one_piece() {
    // Heights that split evenly, unevenly and into a short last band; widths that are
    // and are not a whole number of MCUs.
    for (w, h) in [(1366, 768), (701, 517), (640, 300)] {
        let img = screen(w, h);
        let one = jpeg_in_bands(&img, 75, false, 1).unwrap();
        assert!(!has_restart_interval(&one));
        let (ow, oh, want) = decode(&one);
        assert_eq!((u32::from(ow), u32::from(oh)), (w, h));
        for threads in [2, 3, 4] {
            let banded = jpeg_in_bands(&img, 75, false, threads).unwrap();
            assert!(
                has_restart_interval(&banded),
                "{w}x{h} on {threads} threads was not banded"
            );
            let (bw, bh, got) = decode(&banded);
            assert_eq!((bw, bh), (ow, oh), "{w}x{h} on {threads} threads");
            assert!(
                got == want,
                "{w}x{h} on {threads} threads decodes to other pixels than one piece"
            );
        }
    }
}

#[test]
fn small_images_and_optimised_tables_stay_in_one_piece() {
    let small = screen(320, 200);
    assert!(!has_restart_interval(
        &jpeg_in_bands(&small, 75, false, 4).unwrap()
    ));
    let big = screen(640, 300);
    assert!(!has_restart_interval(
        &jpeg_in_bands(&big, 75, true, 4).unwrap()
    ));
}

#[test]
fn bands_that_differ_or_are_not_plain_baseline_are_not_joined() {
    let img = screen(64, 32);
    let top = Image {
        width: 64,
        height: 16,
        rgb: img.rgb[..64 * 16 * 3].to_vec(),
    };
    let bottom = Image {
        width: 64,
        height: 16,
        rgb: img.rgb[64 * 16 * 3..].to_vec(),
    };
    let enc = |i: &Image, q: i64, opt: bool| jpeg_in_bands(i, q, opt, 1).unwrap();
    let (t, b) = (enc(&top, 75, false), enc(&bottom, 75, false));
    // The interval is one band's MCUs: 4 across, 1 down.
    let joined = join(&[t.clone(), b.clone()], 32, 4).unwrap();
    let (_, _, px) = decode(&joined);
    assert_eq!(px, decode(&enc(&img, 75, false)).2);

    // Other quantisation tables, other Huffman tables.
    assert!(join(&[t.clone(), enc(&bottom, 60, false)], 32, 4).is_none());
    assert!(join(&[t.clone(), enc(&bottom, 75, true)], 32, 4).is_none());
    // Another width.
    let narrow = Image {
        width: 48,
        height: 16,
        rgb: vec![90; 48 * 16 * 3],
    };
    assert!(join(&[t.clone(), enc(&narrow, 75, false)], 32, 4).is_none());
    // Cut short (no EOI), not a JPEG, already with a restart interval, no interval.
    assert!(join(&[t.clone(), b[..b.len() - 10].to_vec()], 32, 4).is_none());
    assert!(join(&[t.clone(), b"not a jpeg".to_vec()], 32, 4).is_none());
    assert!(join(&[joined, b.clone()], 48, 4).is_none());
    assert!(join(&[t.clone(), b.clone()], 32, 0).is_none());
    assert!(join(&[], 32, 4).is_none());
}

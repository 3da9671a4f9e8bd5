use super::*;

fn solid(w: u32, h: u32, c: [u8; 3]) -> Image {
    Image {
        width: w,
        height: h,
        rgb: c.repeat((w * h) as usize),
    }
}

#[test]
fn mask_blacks_out_only_the_rectangle() {
    let mut img = solid(10, 10, [200, 100, 50]);
    mask(&mut img, [100, 100], &[[102, 103, 105, 200], [0, 0, 5, 5]]);
    assert_eq!(img.pixel(2, 3), Some([0, 0, 0]));
    assert_eq!(img.pixel(4, 9), Some([0, 0, 0]));
    assert_eq!(img.pixel(5, 3), Some([200, 100, 50]));
    assert_eq!(img.pixel(2, 2), Some([200, 100, 50]));
}

#[test]
fn png_and_jpeg_encode() {
    let img = solid(16, 8, [255, 0, 0]);
    let p = png(&img).unwrap();
    assert_eq!(&p[1..4], b"PNG");
    let j = jpeg(&img, 500).unwrap();
    assert_eq!(&j[..2], &[0xff, 0xd8]);
}

#[test]
fn cursor_composites_with_alpha() {
    let mut img = solid(4, 4, [0, 255, 0]);
    composite_argb(&mut img, -1, -1, 3, 3, &[0xff_ff_ff_ff; 9]);
    assert_eq!(img.pixel(0, 0), Some([255, 255, 255]));
    assert_eq!(img.pixel(2, 2), Some([0, 255, 0]));
}

/// A screen-like image: text-like strokes, flat areas, a gradient with noise.
fn screenish(w: u32, h: u32) -> Image {
    let mut rgb = Vec::with_capacity((w * h * 3) as usize);
    let mut seed = 1u32;
    for y in 0..h {
        for x in 0..w {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            let px = if x < w / 3 {
                if (x / 2 + y) % 7 == 0 {
                    [200, 200, 200]
                } else {
                    [0, 0, 0]
                }
            } else if x < 2 * w / 3 {
                [240, 240, 245]
            } else {
                let n = (seed >> 28) as u8;
                [(x % 256) as u8 ^ n, (y % 256) as u8, 128u8.wrapping_add(n)]
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

#[test]
fn png_round_trips_with_every_filter_and_band_count() {
    for (w, h) in [(1, 1), (7, 3), (97, 61), (320, 200)] {
        let img = screenish(w, h);
        for filter in [
            PngFilter::Fixed(0),
            PngFilter::Fixed(1),
            PngFilter::Fixed(2),
            PngFilter::Fixed(3),
            PngFilter::Fixed(4),
            PngFilter::Adaptive,
        ] {
            for threads in [1, 2, 3, 8] {
                for level in [0, 1, 2, 6, 9] {
                    let opts = PngOptions {
                        filter,
                        level,
                        threads,
                    };
                    let bytes = png_with(&img, opts).unwrap();
                    let dec = png::Decoder::new(std::io::Cursor::new(bytes));
                    let mut r = dec.read_info().unwrap();
                    let mut buf = vec![0; r.output_buffer_size().unwrap()];
                    let info = r.next_frame(&mut buf).unwrap();
                    assert_eq!((info.width, info.height), (w, h));
                    assert_eq!(info.color_type, png::ColorType::Rgb);
                    assert_eq!(&buf[..info.buffer_size()], &img.rgb[..], "{opts:?} {w}x{h}");
                }
            }
        }
    }
}

#[test]
fn png_refuses_a_bad_buffer() {
    let mut img = solid(4, 4, [1, 2, 3]);
    img.rgb.pop();
    assert!(png(&img).is_err());
    let empty = Image {
        width: 0,
        height: 0,
        rgb: Vec::new(),
    };
    assert!(png(&empty).is_err());
}

#[test]
fn adler32_combine_matches_one_pass() {
    let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let whole = {
        let mut a = simd_adler32::Adler32::new();
        a.write(&data);
        a.finish()
    };
    for cut in [0, 1, 5552, 65521, 99_999, 100_000] {
        let (x, y) = data.split_at(cut);
        let (mut a, mut b) = (simd_adler32::Adler32::new(), simd_adler32::Adler32::new());
        a.write(x);
        b.write(y);
        assert_eq!(
            adler32_combine(a.finish(), b.finish(), y.len()),
            whole,
            "cut {cut}"
        );
    }
}

#[test]
fn jpeg_decodes_to_the_image() {
    let img = screenish(64, 48);
    let j = jpeg(&img, 90).unwrap();
    let mut d = jpeg_decoder::Decoder::new(std::io::Cursor::new(j));
    let px = d.decode().unwrap();
    let info = d.info().unwrap();
    assert_eq!((info.width, info.height), (64, 48));
    assert_eq!(px.len(), img.rgb.len());
    // Lossy, but close on average.
    let diff: u64 = px
        .iter()
        .zip(&img.rgb)
        .map(|(a, b)| u64::from(a.abs_diff(*b)))
        .sum();
    assert!(
        diff / (px.len() as u64) < 20,
        "mean error {}",
        diff / px.len() as u64
    );
    let too_wide = Image {
        width: 70_000,
        height: 1,
        rgb: vec![0; 210_000],
    };
    assert!(jpeg(&too_wide, 75).is_err());
}

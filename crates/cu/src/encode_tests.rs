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

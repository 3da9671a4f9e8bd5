//! Image post-processing and encoding: masking, cursor compositing, PNG and JPEG.

use crate::backend::Image;
use crate::error::CuError;
use crate::error::CuResult;

/// Encodes lossless RGB PNG.
pub fn png(img: &Image) -> CuResult<Vec<u8>> {
    let mut out = Vec::with_capacity(img.rgb.len() / 4);
    {
        let mut enc = png::Encoder::new(&mut out, img.width, img.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        let mut w = enc
            .write_header()
            .map_err(|e| CuError::internal(format!("PNG encoding failed: {e}")))?;
        w.write_image_data(&img.rgb)
            .map_err(|e| CuError::internal(format!("PNG encoding failed: {e}")))?;
        w.finish()
            .map_err(|e| CuError::internal(format!("PNG encoding failed: {e}")))?;
    }
    Ok(out)
}

/// Encodes baseline RGB JPEG at `quality`, clamped to 1..=100.
pub fn jpeg(img: &Image, quality: i64) -> CuResult<Vec<u8>> {
    let q = u8::try_from(quality.clamp(1, 100)).unwrap_or(75);
    let mut out = Vec::with_capacity(img.rgb.len() / 10);
    let mut enc = image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, q);
    enc.encode(
        &img.rgb,
        img.width,
        img.height,
        image::ExtendedColorType::Rgb8,
    )
    .map_err(|e| CuError::internal(format!("JPEG encoding failed: {e}")))?;
    Ok(out)
}

/// Blacks out every masked rectangle (desktop coordinates) of an image whose top-left is
/// at `origin` (scale 1).
pub fn mask(img: &mut Image, origin: [i64; 2], masks: &[[i64; 4]]) {
    let (w, h) = (i64::from(img.width), i64::from(img.height));
    for m in masks {
        let x1 = (m[0] - origin[0]).clamp(0, w);
        let x2 = (m[2] - origin[0]).clamp(0, w);
        let y1 = (m[1] - origin[1]).clamp(0, h);
        let y2 = (m[3] - origin[1]).clamp(0, h);
        if x2 <= x1 || y2 <= y1 {
            continue;
        }
        for y in y1..y2 {
            let start = ((y * w + x1) * 3) as usize;
            let end = ((y * w + x2) * 3) as usize;
            if let Some(row) = img.rgb.get_mut(start..end) {
                row.fill(0);
            }
        }
    }
}

/// Composites a premultiplied ARGB cursor image (`cw` × `ch`) with its top-left at
/// image pixel (`x`, `y`), which may lie partly outside.
pub fn composite_argb(img: &mut Image, x: i64, y: i64, cw: u32, ch: u32, argb: &[u32]) {
    for cy in 0..i64::from(ch) {
        let iy = y + cy;
        if iy < 0 || iy >= i64::from(img.height) {
            continue;
        }
        for cx in 0..i64::from(cw) {
            let ix = x + cx;
            if ix < 0 || ix >= i64::from(img.width) {
                continue;
            }
            let Some(&p) = argb.get((cy * i64::from(cw) + cx) as usize) else {
                continue;
            };
            let a = (p >> 24) & 0xff;
            if a == 0 {
                continue;
            }
            let src = [(p >> 16) & 0xff, (p >> 8) & 0xff, p & 0xff];
            let i = ((iy * i64::from(img.width) + ix) * 3) as usize;
            for (k, s) in src.iter().enumerate() {
                if let Some(d) = img.rgb.get_mut(i + k) {
                    // Premultiplied: out = src + dst * (1 - a).
                    let v = s + u32::from(*d) * (255 - a) / 255;
                    *d = u8::try_from(v.min(255)).unwrap_or(255);
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;

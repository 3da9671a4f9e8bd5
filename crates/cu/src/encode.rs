//! Image post-processing and encoding: masking, cursor compositing, PNG and JPEG.

use crate::backend::Image;
use crate::error::CuError;
use crate::error::CuResult;

/// How [`png_with`] filters rows before compressing them (PNG 1.2, section 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PngFilter {
    /// The same filter type (0-4: None, Sub, Up, Average, Paeth) on every row.
    Fixed(u8),
    /// Per row, the filter among None, Sub, Up and Paeth whose output has the smallest sum of
    /// absolute signed bytes (the "minimum sum" heuristic of libpng and Pillow).
    Adaptive,
}

/// The parameters of [`png_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PngOptions {
    /// The row filter.
    pub filter: PngFilter,
    /// The deflate level, 0-9.
    pub level: u8,
    /// How many bands of rows are compressed at the same time, on their own threads (1: on
    /// the calling thread).
    pub threads: usize,
}

impl Default for PngOptions {
    /// Chosen by measurement on a 1920x1080 desktop of log text, a clock and a photo-like
    /// window (`cargo xtask bench cu` prints the candidates): see the crate README.
    fn default() -> Self {
        PngOptions {
            filter: PngFilter::Fixed(1),
            level: 3,
            threads: cores().clamp(1, 4),
        }
    }
}

/// The cores this process may use, read once: `available_parallelism` reads the affinity
/// mask and the cgroup quota on every call, and the encoders ask for every frame.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES
        .get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
}

/// Rows `0..height` in bands of `per` rows, the last possibly shorter.
fn band_ranges(height: usize, per: usize) -> Vec<(usize, usize)> {
    let per = per.max(1);
    (0..height.div_ceil(per))
        .map(|b| (b * per, ((b + 1) * per).min(height)))
        .collect()
}

/// `work(index, rows)` for every band, in band order: the first on this thread, each other
/// on its own scoped thread. `what` names the encoder in the error of a thread that
/// panicked.
fn on_bands<T: Send>(
    ranges: &[(usize, usize)],
    what: &str,
    work: impl Fn(usize, (usize, usize)) -> CuResult<T> + Sync,
) -> Vec<CuResult<T>> {
    let Some((&first, rest)) = ranges.split_first() else {
        return Vec::new();
    };
    std::thread::scope(|s| {
        let work = &work;
        // A band whose thread cannot be started (the process at its thread limit) is
        // encoded on this thread when its turn comes, instead of `scope.spawn`'s panic.
        let handles: Vec<_> = rest
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let (i, r) = (i + 1, *r);
                let h = std::thread::Builder::new()
                    .spawn_scoped(s, move || work(i, r))
                    .ok();
                (i, r, h)
            })
            .collect();
        let mut parts = vec![work(0, first)];
        parts.extend(handles.into_iter().map(|(i, r, h)| match h {
            Some(h) => h.join().unwrap_or_else(|_| {
                Err(CuError::internal(format!("{what} encoding thread failed")))
            }),
            None => work(i, r),
        }));
        parts
    })
}

/// Encodes lossless RGB PNG with the default [`PngOptions`].
pub fn png(img: &Image) -> CuResult<Vec<u8>> {
    png_with(img, PngOptions::default())
}

/// Encodes lossless RGB PNG. The rows are cut into `threads` bands, each filtered and
/// deflated on its own thread into a raw deflate stream that ends on a full flush; the
/// streams concatenated are one zlib stream (as pigz does), at the cost of the dictionary
/// across a band boundary.
pub fn png_with(img: &Image, opts: PngOptions) -> CuResult<Vec<u8>> {
    let stride = img.width as usize * 3;
    let height = img.height as usize;
    if img.rgb.len() != stride * height || img.width == 0 || img.height == 0 {
        return Err(CuError::internal("PNG encoding failed: bad image size"));
    }
    let bands = opts.threads.clamp(1, height.max(1));
    let per = height.div_ceil(bands);
    let level = flate2::Compression::new(u32::from(opts.level.min(9)));
    let ranges = band_ranges(height, per);
    let last = ranges.len() - 1;
    let parts = on_bands(&ranges, "PNG", |i, (a, z)| {
        band(&img.rgb, stride, a, z, opts.filter, level, i == last)
    });
    let mut zlib = Vec::with_capacity(stride * height / 8);
    // CMF: deflate with a 32 KiB window; FLG: the level class, with the check bits.
    zlib.extend_from_slice(match opts.level {
        0 | 1 => &[0x78, 0x01],
        2..=5 => &[0x78, 0x5e],
        6 => &[0x78, 0x9c],
        _ => &[0x78, 0xda],
    });
    let mut adler = 1u32;
    for part in parts {
        let (bytes, a, len) = part?;
        zlib.extend_from_slice(&bytes);
        adler = adler32_combine(adler, a, len);
    }
    zlib.extend_from_slice(&adler.to_be_bytes());

    let mut out = Vec::with_capacity(zlib.len() + 64);
    out.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&img.width.to_be_bytes());
    ihdr.extend_from_slice(&img.height.to_be_bytes());
    // 8 bits per channel, RGB, deflate, adaptive filtering, no interlace.
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr)?;
    chunk(&mut out, b"IDAT", &zlib)?;
    chunk(&mut out, b"IEND", &[])?;
    Ok(out)
}

/// Filters rows `a..z` and deflates them (raw, no header): the bytes, the Adler-32 of the
/// filtered data and its length.
fn band(
    rgb: &[u8],
    stride: usize,
    a: usize,
    z: usize,
    filter: PngFilter,
    level: flate2::Compression,
    last: bool,
) -> CuResult<(Vec<u8>, u32, usize)> {
    let mut filtered = Vec::with_capacity((z - a) * (stride + 1));
    let zero = vec![0u8; stride];
    let mut cand: [Vec<u8>; 4] = std::array::from_fn(|_| vec![0u8; stride]);
    for y in a..z {
        let row = rgb.get(y * stride..(y + 1) * stride).unwrap_or(&zero);
        let prior = if y == 0 {
            &zero[..]
        } else {
            rgb.get((y - 1) * stride..y * stride).unwrap_or(&zero)
        };
        match filter {
            PngFilter::Fixed(t) => {
                let t = t.min(4);
                filtered.push(t);
                let start = filtered.len();
                filtered.resize(start + stride, 0);
                if let Some(dst) = filtered.get_mut(start..) {
                    apply(t, row, prior, dst);
                }
            }
            PngFilter::Adaptive => {
                let mut best = (u64::MAX, 0u8, 0usize);
                for (k, t) in [0u8, 1, 2, 4].into_iter().enumerate() {
                    let Some(dst) = cand.get_mut(k) else { continue };
                    apply(t, row, prior, dst);
                    let score: u64 = dst
                        .iter()
                        .map(|&b| u64::from((b as i8).unsigned_abs()))
                        .sum();
                    if score < best.0 {
                        best = (score, t, k);
                    }
                }
                filtered.push(best.1);
                if let Some(c) = cand.get(best.2) {
                    filtered.extend_from_slice(c);
                }
            }
        }
    }
    let mut adler = simd_adler32::Adler32::new();
    adler.write(&filtered);
    let mut c = flate2::Compress::new(level, false);
    let mut out = Vec::with_capacity(filtered.len() / 4 + 1024);
    let flush = if last {
        flate2::FlushCompress::Finish
    } else {
        flate2::FlushCompress::Full
    };
    loop {
        let consumed = usize::try_from(c.total_in()).unwrap_or(usize::MAX);
        let input = filtered.get(consumed..).unwrap_or(&[]);
        if out.capacity() - out.len() < 1024 {
            out.reserve(out.capacity().max(64 * 1024));
        }
        let status = c
            .compress_vec(input, &mut out, flush)
            .map_err(|e| CuError::internal(format!("PNG encoding failed: {e}")))?;
        let done_in = usize::try_from(c.total_in()).unwrap_or(usize::MAX) >= filtered.len();
        match status {
            flate2::Status::StreamEnd => break,
            // A full flush is complete once all input is in and room was left over.
            _ if !last && done_in && out.len() < out.capacity() => break,
            _ => {}
        }
    }
    Ok((out, adler.finish(), filtered.len()))
}

/// Writes filter type `t` of `row` (with the row above, `prior`) into `dst`; RGB, 3 bytes a
/// pixel.
fn apply(t: u8, row: &[u8], prior: &[u8], dst: &mut [u8]) {
    const BPP: usize = 3;
    let n = row.len().min(prior.len()).min(dst.len());
    let (row, prior, dst) = (&row[..n], &prior[..n], &mut dst[..n]);
    match t {
        0 => dst.copy_from_slice(row),
        1 => {
            for i in 0..n {
                let left = if i >= BPP { row[i - BPP] } else { 0 };
                dst[i] = row[i].wrapping_sub(left);
            }
        }
        2 => {
            for ((d, r), p) in dst.iter_mut().zip(row).zip(prior) {
                *d = r.wrapping_sub(*p);
            }
        }
        3 => {
            for i in 0..n {
                let left = if i >= BPP { u16::from(row[i - BPP]) } else { 0 };
                let avg = ((left + u16::from(prior[i])) / 2) as u8;
                dst[i] = row[i].wrapping_sub(avg);
            }
        }
        _ => {
            for i in 0..n {
                let (a, c) = if i >= BPP {
                    (i16::from(row[i - BPP]), i16::from(prior[i - BPP]))
                } else {
                    (0, 0)
                };
                let b = i16::from(prior[i]);
                let p = a + b - c;
                let (pa, pb, pc) = ((p - a).abs(), (p - b).abs(), (p - c).abs());
                let pred = if pa <= pb && pa <= pc {
                    a
                } else if pb <= pc {
                    b
                } else {
                    c
                };
                dst[i] = row[i].wrapping_sub(pred as u8);
            }
        }
    }
}

/// The Adler-32 of `A ++ B` from those of `A` and `B` and the length of `B` (zlib's
/// `adler32_combine`).
fn adler32_combine(a1: u32, a2: u32, len2: usize) -> u32 {
    const BASE: u64 = 65521;
    let rem = (len2 as u64) % BASE;
    let (a1, a2) = (u64::from(a1), u64::from(a2));
    let mut sum1 = a1 & 0xffff;
    let mut sum2 = (rem * sum1) % BASE;
    sum1 += (a2 & 0xffff) + BASE - 1;
    sum2 += (a1 >> 16) + (a2 >> 16) + BASE - rem;
    sum1 %= BASE;
    sum2 %= BASE;
    u32::try_from(sum1 | (sum2 << 16)).unwrap_or(0)
}

/// Appends one PNG chunk: length, type, data, CRC-32 of type and data.
fn chunk(out: &mut Vec<u8>, ty: &[u8; 4], data: &[u8]) -> CuResult<()> {
    let len = u32::try_from(data.len())
        .ok()
        .filter(|l| *l <= 0x7fff_ffff)
        .ok_or_else(|| CuError::internal("PNG encoding failed: image too large"))?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(ty);
    out.extend_from_slice(data);
    let mut crc = crc32fast::Hasher::new();
    crc.update(ty);
    crc.update(data);
    out.extend_from_slice(&crc.finalize().to_be_bytes());
    Ok(())
}

/// Encodes baseline RGB JPEG at `quality`, clamped to 1..=100: 4:2:0 chroma subsampling
/// (as libjpeg and Pillow do by default), the DCT and colour conversion in AVX2 where the
/// CPU has it (detected at run time), the standard Huffman tables (optimised ones save about
/// 8% of the bytes for a third more CPU, measured by `cargo xtask bench cu`; the issue's
/// complaint was CPU). Large images are encoded in bands on up to four threads and joined
/// with restart markers (`jpeg_bands`): the same pixels, in about half the time on two cores.
pub fn jpeg(img: &Image, quality: i64) -> CuResult<Vec<u8>> {
    jpeg_with(img, quality, JPEG_OPTIMIZED_HUFFMAN)
}

/// [`jpeg`], choosing whether the Huffman tables are optimised (for measurements; optimised
/// tables differ per band, so such images are encoded in one piece).
pub fn jpeg_with(img: &Image, quality: i64, optimize_huffman: bool) -> CuResult<Vec<u8>> {
    jpeg_in_bands(img, quality, optimize_huffman, cores().clamp(1, 4))
}

/// The fewest 16-row MCU rows a band has: below that a thread costs more than it saves.
const JPEG_MIN_BAND_MCU_ROWS: usize = 8;

/// [`jpeg_with`] on at most `threads` bands.
pub(crate) fn jpeg_in_bands(
    img: &Image,
    quality: i64,
    optimize_huffman: bool,
    threads: usize,
) -> CuResult<Vec<u8>> {
    let q = u8::try_from(quality.clamp(1, 100)).unwrap_or(75);
    let (Ok(w), Ok(h)) = (u16::try_from(img.width), u16::try_from(img.height)) else {
        return Err(CuError::internal(
            "JPEG encoding failed: the image is larger than 65535 pixels",
        ));
    };
    let stride = usize::from(w) * 3;
    if img.rgb.len() != stride * usize::from(h) {
        return Err(CuError::internal("JPEG encoding failed: bad image size"));
    }
    let mcu_rows = usize::from(h).div_ceil(16);
    let bands = threads.min(mcu_rows / JPEG_MIN_BAND_MCU_ROWS);
    if optimize_huffman || bands < 2 {
        return jpeg_one(&img.rgb, w, h, q, optimize_huffman);
    }
    let band_rows = mcu_rows.div_ceil(bands) * 16;
    let Ok(interval) = u16::try_from(usize::from(w).div_ceil(16) * (band_rows / 16)) else {
        return jpeg_one(&img.rgb, w, h, q, false);
    };
    let ranges = band_ranges(usize::from(h), band_rows);
    let parts = on_bands(&ranges, "JPEG", |_, (a, z)| {
        let rows = img.rgb.get(a * stride..z * stride).unwrap_or(&[]);
        jpeg_one(rows, w, u16::try_from(z - a).unwrap_or(0), q, false)
    });
    let parts: Vec<Vec<u8>> = parts.into_iter().collect::<CuResult<_>>()?;
    match crate::jpeg_bands::join(&parts, h, interval) {
        Some(joined) => Ok(joined),
        None => jpeg_one(&img.rgb, w, h, q, false),
    }
}

/// One JPEG of `w` x `h` RGB pixels.
fn jpeg_one(rgb: &[u8], w: u16, h: u16, q: u8, optimize_huffman: bool) -> CuResult<Vec<u8>> {
    let mut out = Vec::with_capacity(rgb.len() / 10);
    let mut enc = jpeg_encoder::Encoder::new(&mut out, q);
    enc.set_sampling_factor(jpeg_encoder::SamplingFactor::F_2_2);
    enc.set_optimized_huffman_tables(optimize_huffman);
    enc.encode(rgb, w, h, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| CuError::internal(format!("JPEG encoding failed: {e}")))?;
    Ok(out)
}

/// Whether [`jpeg`] optimises its Huffman tables (chosen by measurement, see [`jpeg`]).
const JPEG_OPTIMIZED_HUFFMAN: bool = false;

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

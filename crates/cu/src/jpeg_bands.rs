//! One baseline JPEG from horizontal bands encoded on their own threads.
//!
//! Each band (a whole number of 16-row MCU rows, the last possibly shorter) is encoded as a
//! JPEG of its own with the same quality, sampling and standard Huffman tables. The bands'
//! entropy-coded data are then joined into one scan, separated by restart markers, under
//! the first band's headers with the full height and a restart interval (`DRI`) of one
//! band's MCUs. A restart resets the DC predictions, as the start of each band's own
//! encoding did, so the joined file decodes to the same pixels as one encoding of the whole
//! image (ITU T.81, F.1.1.5 and B.2.4.4: the bit stream is padded with 1-bits to a byte
//! before each marker, which each band's encoder did at its end).
//!
//! [`join`] checks what the joining relies on: every band has the baseline segments only, no
//! restart interval of its own, tables and width identical to the first band's, and ends
//! with `EOI`. If anything differs it returns `None` and the caller encodes in one piece.

/// What a baseline JPEG is made of: the segments before the scan (with their markers), the
/// scan header, and the entropy-coded data up to `EOI`.
struct Parts<'a> {
    head: Vec<(u8, &'a [u8])>,
    sos: &'a [u8],
    ecs: &'a [u8],
}

/// Markers a band may have before its scan: APP0 (JFIF), DQT, SOF0 (baseline), DHT.
const HEAD_MARKERS: [u8; 4] = [0xE0, 0xDB, 0xC0, 0xC4];

/// The offsets of the height in a SOF0 segment counted from its marker (`FF C0 Lh Ll P Yh
/// Yl Xh Xl ...`).
const SOF_HEIGHT: std::ops::Range<usize> = 5..7;

fn parts(jpeg: &[u8]) -> Option<Parts<'_>> {
    if jpeg.get(..2)? != [0xFF, 0xD8] {
        return None;
    }
    let mut pos = 2usize;
    let mut head = Vec::new();
    loop {
        if *jpeg.get(pos)? != 0xFF {
            return None;
        }
        let marker = *jpeg.get(pos + 1)?;
        let len = usize::from(u16::from_be_bytes([
            *jpeg.get(pos + 2)?,
            *jpeg.get(pos + 3)?,
        ]));
        let end = pos.checked_add(2)?.checked_add(len)?;
        let segment = jpeg.get(pos..end)?;
        if marker == 0xDA {
            let eoi = jpeg.len().checked_sub(2)?;
            if jpeg.get(eoi..)? != [0xFF, 0xD9] {
                return None;
            }
            return Some(Parts {
                head,
                sos: segment,
                ecs: jpeg.get(end..eoi)?,
            });
        }
        if !HEAD_MARKERS.contains(&marker) {
            return None;
        }
        head.push((marker, segment));
        pos = end;
    }
}

/// Whether `band`'s segments are the first band's, but for the height in SOF0.
fn same_tables(first: &Parts<'_>, band: &Parts<'_>) -> bool {
    first.sos == band.sos
        && first.head.len() == band.head.len()
        && first
            .head
            .iter()
            .zip(&band.head)
            .all(|((m1, s1), (m2, s2))| {
                m1 == m2
                    && s1.len() == s2.len()
                    && if *m1 == 0xC0 {
                        s1.get(..SOF_HEIGHT.start) == s2.get(..SOF_HEIGHT.start)
                            && s1.get(SOF_HEIGHT.end..) == s2.get(SOF_HEIGHT.end..)
                    } else {
                        s1 == s2
                    }
            })
}

/// Joins the bands (top first) into one JPEG of `height` rows whose restart interval is
/// `interval` MCUs (one band's; every band but the last has exactly that many, the last at
/// most that many). `None` when the bands cannot be joined (see the module documentation).
pub(crate) fn join(bands: &[Vec<u8>], height: u16, interval: u16) -> Option<Vec<u8>> {
    let parsed: Vec<Parts<'_>> = bands.iter().map(|b| parts(b)).collect::<Option<_>>()?;
    let first = parsed.first()?;
    if interval == 0 || !parsed.iter().all(|p| same_tables(first, p)) {
        return None;
    }
    let mut out = Vec::with_capacity(bands.iter().map(Vec::len).sum::<usize>() + 16);
    out.extend_from_slice(&[0xFF, 0xD8]);
    for (marker, segment) in &first.head {
        let start = out.len();
        out.extend_from_slice(segment);
        if *marker == 0xC0 {
            out.get_mut(start + SOF_HEIGHT.start..start + SOF_HEIGHT.end)?
                .copy_from_slice(&height.to_be_bytes());
        }
    }
    out.extend_from_slice(&[0xFF, 0xDD, 0x00, 0x04]);
    out.extend_from_slice(&interval.to_be_bytes());
    out.extend_from_slice(first.sos);
    for (i, p) in parsed.iter().enumerate() {
        if i > 0 {
            // RST0..RST7 in turn.
            out.extend_from_slice(&[0xFF, 0xD0 + u8::try_from((i - 1) % 8).unwrap_or(0)]);
        }
        out.extend_from_slice(p.ecs);
    }
    out.extend_from_slice(&[0xFF, 0xD9]);
    Some(out)
}

#[cfg(test)]
#[path = "jpeg_bands_tests.rs"]
mod tests;

//! Deflating one outgoing message: in one piece, or, when it is large, in pieces on several
//! threads joined into one deflate stream.
//!
//! A screenshot travels as about 800 KB of base64 in one text message, and deflating it at
//! level 2 takes about 9 ms of one core here, which the user waits for on every
//! computer-use step. Deflate data can be cut where a block ends: each piece is compressed by its own
//! compressor, primed with the 32 KB before it as a preset dictionary so that it loses almost
//! nothing, and ended with a sync flush (an empty stored block, byte-aligned), so the pieces
//! concatenate into one stream that any inflater reads as if one compressor had written it
//! (pigz does the same). Only the last piece loses the `00 00 ff ff` that RFC 7692 strips.
//!
//! The first piece is compressed by the connection's own compressor, so it may still point
//! back into earlier messages. Afterwards that compressor is reset and primed with the
//! message's last window, which is exactly the history the peer's inflater holds, so context
//! takeover goes on working across the message.

use std::io;
use std::sync::OnceLock;

use flate2::Compress;
use flate2::Compression;
use flate2::FlushCompress;

use crate::stream::invalid;

/// RFC 7692 section 7.2.1: the tail every sync-flushed message ends with, removed on the
/// wire.
pub(crate) const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// The smallest piece worth a thread of its own: starting one costs tens of microseconds,
/// deflating 128 KB about 1.5 ms.
const PIECE_MIN: usize = 128 * 1024;
/// At most this many pieces, however many cores.
const PIECES_MAX: usize = 8;

/// The cores this process may use, read once.
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES
        .get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
}

/// How many pieces a message of `len` bytes is deflated in on `cores` cores.
pub(crate) fn pieces_for(len: usize, cores: usize) -> usize {
    (len / PIECE_MIN).min(cores).clamp(1, PIECES_MAX)
}

/// Deflates one message with `c` (raw deflate, `bits` window) as RFC 7692 sends it: the
/// data ends with a sync flush whose `00 00 ff ff` is removed. Large messages are cut into
/// one piece per core (see the module documentation); `c` is left holding the message's
/// history either way.
pub(crate) fn deflate_message(
    c: &mut Compress,
    level: Compression,
    bits: u8,
    input: &[u8],
) -> io::Result<Vec<u8>> {
    deflate_in_pieces(c, level, bits, input, pieces_for(input.len(), cores()))
}

/// [`deflate_message`] with the number of pieces given.
pub(crate) fn deflate_in_pieces(
    c: &mut Compress,
    level: Compression,
    bits: u8,
    input: &[u8],
    pieces: usize,
) -> io::Result<Vec<u8>> {
    let window = 1usize << bits;
    // A message shorter than the window is not split: the history after it would reach
    // into earlier messages, which the dictionary below could not express.
    let mut out = if pieces <= 1 || input.len() < window.max(pieces) {
        deflate_sync(c, input)?
    } else {
        let step = input.len().div_ceil(pieces);
        let parts: Vec<&[u8]> = input.chunks(step).collect();
        let piece = |i: usize| parts.get(i).copied().unwrap_or(&[]);
        // Piece `i > 0`: its own compressor, primed with the window before it.
        let later = |i: usize| {
            let start = i * step;
            let dict = input
                .get(start.saturating_sub(window)..start)
                .unwrap_or(&[]);
            let mut own = Compress::new_with_window_bits(level, false, bits);
            own.set_dictionary(dict)
                .map_err(|e| invalid(format!("deflate dictionary refused: {e}")))?;
            deflate_sync(&mut own, piece(i))
        };
        let rest = std::thread::scope(|s| {
            // A piece whose thread cannot be started (the process at its thread limit) is
            // deflated on this thread when its turn comes, instead of `scope.spawn`'s panic.
            let handles: Vec<_> = (1..parts.len())
                .map(|i| {
                    let h = std::thread::Builder::new()
                        .spawn_scoped(s, move || later(i))
                        .ok();
                    (i, h)
                })
                .collect();
            let mut all = vec![deflate_sync(c, piece(0))];
            for (i, h) in handles {
                all.push(match h {
                    Some(h) => h
                        .join()
                        .unwrap_or_else(|_| Err(invalid("a deflate thread panicked"))),
                    None => later(i),
                });
            }
            all
        });
        let mut joined =
            Vec::with_capacity(rest.iter().map(|r| r.as_ref().map_or(0, Vec::len)).sum());
        for part in rest {
            joined.extend_from_slice(&part?);
        }
        // The connection's compressor saw only the first piece: give it the history the
        // peer will have, the message's last window, after a reset (a dictionary set on a
        // stream in progress would be appended to the old window).
        c.reset();
        let tail = input
            .get(input.len().saturating_sub(window)..)
            .unwrap_or(&[]);
        c.set_dictionary(tail)
            .map_err(|e| invalid(format!("deflate dictionary refused: {e}")))?;
        joined
    };
    if out.ends_with(&TAIL) {
        out.truncate(out.len() - TAIL.len());
    }
    Ok(out)
}

/// Deflates `input` with `c` and ends with a sync flush, its `00 00 ff ff` kept.
fn deflate_sync(c: &mut Compress, input: &[u8]) -> io::Result<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(input.len() / 2 + 64);
    let start = c.total_in();
    loop {
        if out.capacity() - out.len() < 64 {
            out.reserve(out.capacity().max(4096));
        }
        let done = usize::try_from(c.total_in() - start).unwrap_or(usize::MAX);
        c.compress_vec(
            input.get(done..).unwrap_or(&[]),
            &mut out,
            FlushCompress::Sync,
        )
        .map_err(|e| invalid(format!("deflate failed: {e}")))?;
        let done = usize::try_from(c.total_in() - start).unwrap_or(usize::MAX);
        if done >= input.len() && out.len() < out.capacity() {
            return Ok(out);
        }
    }
}

#[cfg(test)]
#[path = "pack_tests.rs"]
mod tests;

//! [`DeflateStream`]: the byte-stream layer that rewrites frames.

use std::io;
use std::io::Cursor;
use std::pin::Pin;
use std::task::Context;
use std::task::Poll;

use flate2::Compress;
use flate2::Compression;
use flate2::Decompress;
use flate2::FlushDecompress;
use tokio::io::AsyncRead;
use tokio::io::AsyncWrite;
use tokio::io::ReadBuf;
use tokio_tungstenite::tungstenite::protocol::frame::FrameHeader;
use tokio_tungstenite::tungstenite::protocol::frame::coding::Data;
use tokio_tungstenite::tungstenite::protocol::frame::coding::OpCode;

use crate::negotiate;
use crate::negotiate::Params;
use crate::pack;
use crate::pack::TAIL;

/// Which end of the connection this stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Sends the upgrade request (and [`negotiate::CLIENT_OFFER`] when it offers).
    Client,
    /// Answers it.
    Server,
}

/// Settings of a [`DeflateStream`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Client: whether the upgrade request carries the offer. A client that did not offer
    /// fails an answer that accepts the extension.
    pub offered: bool,
    /// Outgoing messages smaller than this travel uncompressed.
    pub compress_threshold: usize,
    /// The deflate level, 0-9.
    pub level: u32,
    /// The largest message after inflation, and the largest frame accepted.
    pub max_message_size: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            offered: true,
            compress_threshold: 1024,
            level: 2,
            max_message_size: 16 << 20,
        }
    }
}

/// The longest HTTP upgrade head passed through before frames start.
const MAX_HEAD: usize = 64 * 1024;
/// Read chunk from the socket.
const READ_CHUNK: usize = 16 * 1024;
/// Buffers above this capacity are freed once empty, so that an idle connection does not
/// keep the largest message it ever carried.
const KEEP: usize = 64 * 1024;

/// Empties `buf`, freeing it if it grew large.
fn reset(buf: &mut Vec<u8>) {
    if buf.capacity() > KEEP {
        *buf = Vec::new();
    } else {
        buf.clear();
    }
}

/// Removes the first `n` bytes of `buf`, freeing it if that empties a large one.
fn consume(buf: &mut Vec<u8>, n: usize) {
    if n >= buf.len() {
        reset(buf);
    } else {
        buf.drain(..n);
    }
}
/// Compressed output waiting for the socket beyond which writes wait.
const HIGH_WATER: usize = 1 << 20;

pub(crate) fn invalid(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Where a direction is: the upgrade head, frames, or plain pass-through (no extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    Frames,
    Through,
}

/// The compressed message being joined from fragments.
struct Joining {
    opcode: OpCode,
    mask: Option<[u8; 4]>,
    rsv: (bool, bool),
    payload: Vec<u8>,
}

struct ReadSide {
    phase: Phase,
    head: Vec<u8>,
    raw: Vec<u8>,
    out: Vec<u8>,
    out_pos: usize,
    joining: Option<Joining>,
    inflater: Option<Decompress>,
    eof: bool,
    /// Server: the request head is in, our answer is not out yet.
    head_done: bool,
    /// Where socket reads land.
    chunk: Vec<u8>,
}

struct WriteSide {
    phase: Phase,
    head: Vec<u8>,
    raw: Vec<u8>,
    out: Vec<u8>,
    out_pos: usize,
    deflater: Option<Compress>,
    /// Inside a fragmented message tungstenite sends: its frames pass through.
    fragmented: bool,
}

/// A socket with `permessage-deflate` applied to the frames crossing it; see the crate
/// docs. tungstenite (client or server) runs on top of it.
pub struct DeflateStream<S> {
    inner: S,
    role: Role,
    opts: Options,
    params: Option<Params>,
    read: ReadSide,
    write: WriteSide,
}

impl<S> DeflateStream<S> {
    /// Wraps `inner` for `role`; nothing is changed until an upgrade that agreed on the
    /// extension has crossed it.
    pub fn new(inner: S, role: Role, opts: Options) -> DeflateStream<S> {
        DeflateStream {
            inner,
            role,
            opts,
            params: None,
            read: ReadSide {
                phase: Phase::Head,
                head: Vec::new(),
                raw: Vec::new(),
                out: Vec::new(),
                out_pos: 0,
                joining: None,
                inflater: None,
                eof: false,
                head_done: false,
                chunk: Vec::new(),
            },
            write: WriteSide {
                phase: Phase::Head,
                head: Vec::new(),
                raw: Vec::new(),
                out: Vec::new(),
                out_pos: 0,
                deflater: None,
                fragmented: false,
            },
        }
    }

    /// The parameters in force, once the upgrade agreed on the extension.
    pub fn params(&self) -> Option<Params> {
        self.params
    }

    /// The wrapped socket.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped socket.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The window bits this side compresses with, and whether it keeps its context.
    fn own_window(&self, p: &Params) -> (u8, bool) {
        match self.role {
            Role::Client => (p.client_max_window_bits, !p.client_no_context_takeover),
            Role::Server => (p.server_max_window_bits, !p.server_no_context_takeover),
        }
    }

    /// The upgrade response crossed (read by a client, written by a server): agree.
    fn on_response(&mut self, head: &[u8]) -> io::Result<()> {
        let text = String::from_utf8_lossy(head);
        let mut lines = text.split("\r\n");
        let status_ok = lines
            .next()
            .is_some_and(|l| l.split_whitespace().nth(1) == Some("101"));
        let values: Vec<&str> = lines
            .filter_map(|l| l.split_once(':'))
            .filter(|(k, _)| k.trim().eq_ignore_ascii_case("sec-websocket-extensions"))
            .map(|(_, v)| v.trim())
            .collect();
        let joined = values.join(", ");
        let header = (!values.is_empty()).then_some(joined.as_str());
        let params = match self.role {
            Role::Client => negotiate::client_accept(header, self.opts.offered)
                .map_err(|e| invalid(e.to_string()))?,
            // Our own answer: it is well-formed, we wrote it.
            Role::Server => negotiate::client_accept(header, true).unwrap_or(None),
        };
        self.params = params.filter(|_| status_ok);
        let phase = if self.params.is_some() {
            Phase::Frames
        } else {
            Phase::Through
        };
        // Both directions switch at the response: the request came first.
        self.read.phase = phase;
        self.write.phase = phase;
        Ok(())
    }
}

/// Index just past the `\r\n\r\n` ending an HTTP head in `buf`, if it is there.
fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// XORs `buf` with the frame's mask, eight bytes at a time: a screenshot answer (800 KB) is
/// unmasked and its compressed form masked again on its way out.
fn apply_mask(buf: &mut [u8], mask: [u8; 4]) {
    let [a, b, c, d] = mask;
    let wide = u64::from_ne_bytes([a, b, c, d, a, b, c, d]);
    let mut words = buf.chunks_exact_mut(8);
    for w in &mut words {
        let mut v = [0u8; 8];
        v.copy_from_slice(w);
        w.copy_from_slice(&(u64::from_ne_bytes(v) ^ wide).to_ne_bytes());
    }
    // The rest starts at a multiple of 8, so the mask starts over.
    for (i, x) in words.into_remainder().iter_mut().enumerate() {
        *x ^= mask[i & 3];
    }
}

/// Appends one frame: `header` (its length set from `payload`) and `payload`, masked with
/// the header's mask.
fn put_frame(out: &mut Vec<u8>, header: &FrameHeader, mut payload: Vec<u8>) -> io::Result<()> {
    header
        .format(payload.len() as u64, out)
        .map_err(|e| invalid(e.to_string()))?;
    if let Some(m) = header.mask {
        apply_mask(&mut payload, m);
    }
    out.extend_from_slice(&payload);
    Ok(())
}

/// One frame at the start of `buf`: header, header length, payload length.
fn next_frame(buf: &[u8], max: usize) -> io::Result<Option<(FrameHeader, usize, usize)>> {
    let mut cur = Cursor::new(buf);
    match FrameHeader::parse(&mut cur) {
        Ok(Some((h, len))) => {
            let len = usize::try_from(len)
                .ok()
                .filter(|l| *l <= max)
                .ok_or_else(|| invalid("WebSocket frame larger than the message limit"))?;
            let hl = usize::try_from(cur.position()).unwrap_or(usize::MAX);
            if buf.len() < hl.saturating_add(len) {
                return Ok(None);
            }
            Ok(Some((h, hl, len)))
        }
        Ok(None) => Ok(None),
        Err(e) => Err(invalid(e.to_string())),
    }
}

pub(crate) fn inflate(d: &mut Decompress, mut input: Vec<u8>, max: usize) -> io::Result<Vec<u8>> {
    input.extend_from_slice(&TAIL);
    let mut out: Vec<u8> =
        Vec::with_capacity(input.len().saturating_mul(3).min(max.saturating_add(1)));
    let mut consumed = 0usize;
    loop {
        if out.len() == out.capacity() {
            if out.len() > max {
                return Err(invalid("inflated message larger than the message limit"));
            }
            out.reserve(out.capacity().max(4096));
        }
        let (in0, out0) = (d.total_in(), out.len());
        let status = d
            .decompress_vec(
                input.get(consumed..).unwrap_or(&[]),
                &mut out,
                FlushDecompress::Sync,
            )
            .map_err(|e| invalid(format!("bad deflate data: {e}")))?;
        consumed += usize::try_from(d.total_in() - in0).unwrap_or(usize::MAX);
        if out.len() > max {
            return Err(invalid("inflated message larger than the message limit"));
        }
        if status == flate2::Status::StreamEnd {
            // The peer ended the deflate stream (BFINAL): the next message starts anew.
            d.reset(false);
            return Ok(out);
        }
        if consumed >= input.len() && out.len() < out.capacity() {
            return Ok(out);
        }
        if d.total_in() == in0 && out.len() == out0 && out.len() < out.capacity() {
            return Err(invalid("deflate data makes no progress"));
        }
    }
}

impl<S> DeflateStream<S> {
    /// Turns the complete frames in `read.raw` into what tungstenite reads.
    fn process_read(&mut self) -> io::Result<()> {
        let max = self.opts.max_message_size;
        let mut pos = 0usize;
        while let Some((h, hl, len)) = next_frame(self.read.raw.get(pos..).unwrap_or(&[]), max)? {
            let frame_end = pos + hl + len;
            let raw_frame = self.read.raw.get(pos..frame_end).unwrap_or(&[]);
            let payload = || {
                let mut p = raw_frame.get(hl..).unwrap_or(&[]).to_vec();
                if let Some(m) = h.mask {
                    apply_mask(&mut p, m);
                }
                p
            };
            match (h.opcode, self.read.joining.is_some()) {
                (OpCode::Data(Data::Text | Data::Binary), false) if h.rsv1 => {
                    let j = Joining {
                        opcode: h.opcode,
                        mask: h.mask,
                        rsv: (h.rsv2, h.rsv3),
                        payload: payload(),
                    };
                    self.read.joining = Some(j);
                }
                (OpCode::Data(Data::Continue), true) => {
                    if h.rsv1 {
                        return Err(invalid("RSV1 on a continuation frame"));
                    }
                    let p = payload();
                    if let Some(j) = self.read.joining.as_mut() {
                        if j.payload.len() + p.len() > max {
                            return Err(invalid(
                                "compressed message larger than the message limit",
                            ));
                        }
                        j.payload.extend_from_slice(&p);
                    }
                }
                _ => {
                    // Control frames (also between fragments), plain messages, and anything
                    // tungstenite must judge itself.
                    self.read.out.extend_from_slice(raw_frame);
                    pos = frame_end;
                    continue;
                }
            }
            if h.is_final
                && let Some(j) = self.read.joining.take()
            {
                let inflater = self
                    .read
                    .inflater
                    .get_or_insert_with(|| Decompress::new(false));
                let plain = inflate(inflater, j.payload, max)?;
                let mut header = FrameHeader {
                    is_final: true,
                    rsv1: false,
                    rsv2: j.rsv.0,
                    rsv3: j.rsv.1,
                    opcode: j.opcode,
                    mask: j.mask,
                };
                if self.role == Role::Client {
                    header.mask = None;
                }
                put_frame(&mut self.read.out, &header, plain)?;
            }
            pos = frame_end;
        }
        consume(&mut self.read.raw, pos);
        Ok(())
    }

    /// Turns the complete frames tungstenite wrote into what goes on the wire.
    fn process_write(&mut self) -> io::Result<()> {
        let Some(p) = self.params else {
            let raw = std::mem::take(&mut self.write.raw);
            self.write.out.extend_from_slice(&raw);
            return Ok(());
        };
        let (bits, takeover) = self.own_window(&p);
        let mut pos = 0usize;
        // Our own frames: any size tungstenite lets through.
        while let Some((h, hl, len)) =
            next_frame(self.write.raw.get(pos..).unwrap_or(&[]), usize::MAX)?
        {
            let frame_end = pos + hl + len;
            let raw_frame = self.write.raw.get(pos..frame_end).unwrap_or(&[]);
            let whole = matches!(h.opcode, OpCode::Data(Data::Text | Data::Binary))
                && h.is_final
                && !self.write.fragmented;
            if matches!(h.opcode, OpCode::Data(_)) {
                self.write.fragmented = !h.is_final;
            }
            // zlib cannot compress with an 8-bit window: that direction stays plain.
            if whole && !h.rsv1 && len >= self.opts.compress_threshold && bits >= 9 {
                let mut plain = raw_frame.get(hl..).unwrap_or(&[]).to_vec();
                if let Some(m) = h.mask {
                    apply_mask(&mut plain, m);
                }
                let level = Compression::new(self.opts.level.min(9));
                let c = self
                    .write
                    .deflater
                    .get_or_insert_with(|| Compress::new_with_window_bits(level, false, bits));
                let packed = pack::deflate_message(c, level, bits, &plain)?;
                let smaller = packed.len() < plain.len();
                if !takeover || !smaller {
                    // Without takeover every message starts afresh. A message sent plain
                    // never reaches the peer's inflater, so the compressor must forget it
                    // too, or the next message could point back into bytes the peer lacks.
                    c.reset();
                }
                if smaller {
                    let mut header = h.clone();
                    header.rsv1 = true;
                    put_frame(&mut self.write.out, &header, packed)?;
                    pos = frame_end;
                    continue;
                }
            }
            self.write.out.extend_from_slice(raw_frame);
            pos = frame_end;
        }
        consume(&mut self.write.raw, pos);
        Ok(())
    }
}

impl<S: AsyncWrite + Unpin> DeflateStream<S> {
    /// Writes pending wire bytes; `Ready(Ok)` once none are left.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.write.out_pos < self.write.out.len() {
            let chunk = self.write.out.get(self.write.out_pos..).unwrap_or(&[]);
            match Pin::new(&mut self.inner).poll_write(cx, chunk) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => self.write.out_pos += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        reset(&mut self.write.out);
        self.write.out_pos = 0;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for DeflateStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.read.out_pos < this.read.out.len() {
                let avail = this.read.out.get(this.read.out_pos..).unwrap_or(&[]);
                let n = avail.len().min(buf.remaining());
                buf.put_slice(avail.get(..n).unwrap_or(&[]));
                this.read.out_pos += n;
                if this.read.out_pos == this.read.out.len() {
                    reset(&mut this.read.out);
                    this.read.out_pos = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.read.phase == Phase::Through && this.read.raw.is_empty() {
                return Pin::new(&mut this.inner).poll_read(cx, buf);
            }
            if this.read.eof {
                return Poll::Ready(Ok(()));
            }
            let mut chunk = std::mem::take(&mut this.read.chunk);
            chunk.resize(READ_CHUNK, 0);
            let mut rb = ReadBuf::new(&mut chunk);
            let polled = Pin::new(&mut this.inner).poll_read(cx, &mut rb);
            let n = rb.filled().len();
            let r = this.on_read(polled, chunk.get(..n).unwrap_or(&[]));
            this.read.chunk = chunk;
            match r {
                Poll::Ready(Ok(true)) => continue,
                Poll::Ready(Ok(false)) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<S> DeflateStream<S> {
    /// Takes in what one socket read returned; `Ready(Ok(true))`: go on reading.
    fn on_read(&mut self, polled: Poll<io::Result<()>>, got: &[u8]) -> Poll<io::Result<bool>> {
        let this = self;
        match polled {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Ready(Ok(())) => {}
        }
        if got.is_empty() {
            this.read.eof = true;
            // A partial frame at the end is the socket's end as far as tungstenite knows.
            return Poll::Ready(Ok(true));
        }
        {
            match this.read.phase {
                Phase::Head if this.read.head_done => this.read.raw.extend_from_slice(got),
                Phase::Head => {
                    this.read.head.extend_from_slice(got);
                    if let Some(end) = head_end(&this.read.head) {
                        let rest = this.read.head.split_off(end);
                        let head = std::mem::take(&mut this.read.head);
                        this.read.out.extend_from_slice(&head);
                        this.read.raw.extend_from_slice(&rest);
                        match this.role {
                            Role::Client => {
                                this.on_response(&head)?;
                                if this.read.phase == Phase::Frames {
                                    this.process_read()?;
                                } else {
                                    let raw = std::mem::take(&mut this.read.raw);
                                    this.read.out.extend_from_slice(&raw);
                                }
                            }
                            // Our answer decides what follows (see `poll_write`).
                            Role::Server => this.read.head_done = true,
                        }
                    } else if this.read.head.len() > MAX_HEAD {
                        this.read.phase = Phase::Through;
                        let head = std::mem::take(&mut this.read.head);
                        this.read.out.extend_from_slice(&head);
                    }
                }
                Phase::Frames => {
                    this.read.raw.extend_from_slice(got);
                    this.process_read()?;
                }
                Phase::Through => {
                    let raw = std::mem::take(&mut this.read.raw);
                    this.read.out.extend_from_slice(&raw);
                    this.read.out.extend_from_slice(got);
                }
            }
        }
        Poll::Ready(Ok(true))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for DeflateStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.write.out.len() - this.write.out_pos >= HIGH_WATER {
            match this.drain(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        match this.write.phase {
            Phase::Head => {
                this.write.head.extend_from_slice(buf);
                if let Some(end) = head_end(&this.write.head) {
                    let rest = this.write.head.split_off(end);
                    let head = std::mem::take(&mut this.write.head);
                    this.write.out.extend_from_slice(&head);
                    if this.role == Role::Server {
                        this.on_response(&head)?;
                        // Frames the client sent right after its request.
                        if this.read.phase == Phase::Frames && !this.read.raw.is_empty() {
                            this.process_read()?;
                        } else if this.read.phase == Phase::Through {
                            let raw = std::mem::take(&mut this.read.raw);
                            this.read.out.extend_from_slice(&raw);
                        }
                    } else {
                        // Client: its request is out; the response decides. Frames do not
                        // follow before it.
                        this.write.phase = Phase::Frames;
                    }
                    this.write.raw.extend_from_slice(&rest);
                    this.process_write()?;
                } else if this.write.head.len() > MAX_HEAD {
                    this.write.phase = Phase::Through;
                    let head = std::mem::take(&mut this.write.head);
                    this.write.out.extend_from_slice(&head);
                }
            }
            Phase::Frames => {
                this.write.raw.extend_from_slice(buf);
                this.process_write()?;
            }
            Phase::Through => this.write.out.extend_from_slice(buf),
        }
        // Start sending; the rest goes on flush.
        match this.drain(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(buf.len())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

#[cfg(test)]
#[path = "stream_tests.rs"]
#[allow(clippy::result_large_err)]
mod tests;

//! Capture through MIT-SHM: the X server writes the pixels into a memory segment this
//! process maps, instead of sending them through the socket. A 1920x1080 screen is 8 MB a
//! shot; `GetImage` took about 15 ms of a 48 ms JPEG screenshot here (issue 29), and the
//! live view captures on every change.
//!
//! Only MIT-SHM 1.2 is used: the server creates the segment and passes it as a file
//! descriptor (`ShmCreateSegment`), so no System V segment is left behind if the daemon
//! dies. A server without it, or a connection that cannot pass descriptors (TCP), makes
//! [`Shm::capture`] answer `None` and the caller uses `GetImage`.

// Mapping the segment the X server passes us is an OS call (mmap) that Rust cannot check.
#![allow(unsafe_code)]

use std::sync::Mutex;

use x11rb::connection::Connection as _;
use x11rb::connection::RequestConnection as _;
use x11rb::protocol::shm;
use x11rb::protocol::shm::ConnectionExt as _;
use x11rb::protocol::xproto::ImageFormat;
use x11rb::protocol::xproto::Window;
use x11rb::rust_connection::RustConnection;

/// A segment shared with the X server, mapped read-only here.
struct Segment {
    id: shm::Seg,
    map: memmap2::Mmap,
}

/// The MIT-SHM state of one connection: whether the server offers 1.2, and the segment,
/// made on the first capture and grown when a larger one is asked for.
pub(super) struct Shm {
    usable: bool,
    segment: Mutex<Option<Segment>>,
}

impl Shm {
    /// Asks the server for MIT-SHM 1.2.
    pub(super) fn probe(conn: &RustConnection) -> Shm {
        let usable = matches!(
            conn.extension_information(shm::X11_EXTENSION_NAME),
            Ok(Some(_))
        ) && conn
            .shm_query_version()
            .ok()
            .and_then(|c| c.reply().ok())
            .is_some_and(|v| (v.major_version, v.minor_version) >= (1, 2));
        Shm {
            usable,
            segment: Mutex::new(None),
        }
    }

    /// `w` x `h` pixels at (`x`, `y`) of `root` in ZPixmap format, handed to `read` with the
    /// image's depth while the segment cannot change; `None` when MIT-SHM cannot serve.
    pub(super) fn capture<R>(
        &self,
        conn: &RustConnection,
        root: Window,
        [x, y]: [i16; 2],
        [w, h]: [u16; 2],
        read: impl FnOnce(&[u8], u8) -> R,
    ) -> Option<R> {
        if !self.usable {
            return None;
        }
        let need = usize::from(w) * usize::from(h) * 4;
        let mut slot = self.segment.lock().ok()?;
        if slot.as_ref().is_none_or(|s| s.map.len() < need) {
            if let Some(old) = slot.take() {
                let _ = conn.shm_detach(old.id);
            }
            *slot = Some(Segment::create(conn, need)?);
        }
        let seg = slot.as_ref()?;
        let reply = conn
            .shm_get_image(
                root,
                x,
                y,
                w,
                h,
                !0,
                ImageFormat::Z_PIXMAP.into(),
                seg.id,
                0,
            )
            .ok()?
            .reply()
            .ok()?;
        let len = usize::try_from(reply.size).ok()?.min(seg.map.len());
        Some(read(&seg.map[..len], reply.depth))
    }
}

impl Segment {
    /// A segment of at least `size` bytes, made by the server and mapped here.
    fn create(conn: &RustConnection, size: usize) -> Option<Segment> {
        let id = conn.generate_id().ok()?;
        // The server writes into it, so it must not be read-only for the server.
        let reply = conn
            .shm_create_segment(id, u32::try_from(size).ok()?, false)
            .ok()?
            .reply()
            .ok()?;
        let file = std::fs::File::from(reply.shm_fd);
        // SAFETY: the file is the memory segment the X server just made for this
        // connection; nothing truncates it while it is mapped. The server writes it only
        // while it serves a ShmGetImage of ours, which runs under `Shm::segment`'s lock and
        // has completed (its reply read) before the mapping is read.
        let map = unsafe { memmap2::MmapOptions::new().len(size).map(&file) };
        match map {
            Ok(map) => Some(Segment { id, map }),
            Err(_) => {
                let _ = conn.shm_detach(id);
                None
            }
        }
    }
}

#[cfg(test)]
#[path = "shm_tests.rs"]
mod tests;

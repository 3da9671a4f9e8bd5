//! The live view's source on X11: a connection of its own that learns what changed on the
//! screen from the DAMAGE extension (no polling, no capture while nothing changes),
//! captures just those rectangles, and injects the local user's input during a take-over.

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;

use x11rb::connection::Connection;
use x11rb::connection::RequestConnection as _;
use x11rb::protocol::Event;
use x11rb::protocol::damage::ConnectionExt as _;
use x11rb::protocol::damage::ReportLevel;
use x11rb::protocol::xfixes::ConnectionExt as _;
use x11rb::protocol::xproto::ClientMessageEvent;
use x11rb::protocol::xproto::ConnectionExt as _;
use x11rb::protocol::xproto::CreateWindowAux;
use x11rb::protocol::xproto::EventMask;
use x11rb::protocol::xproto::WindowClass;
use x11rb::wrapper::ConnectionExt as _;

use super::X11;
use super::xerr;
use crate::Cookie;
use crate::Unavailable;
use crate::backend::Capture;
use crate::backend::Image;
use crate::backend::Input;
use crate::error::CuResult;

/// Most rectangles one change reports; more are merged into their bounding box.
pub const MAX_RECTS: usize = 16;

/// What [`Watcher::next`] saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// These rectangles (`[x1, y1, x2, y2)`, desktop coordinates) changed.
    Damaged(Vec<[i64; 4]>),
    /// [`Watcher::wake`] was called.
    Woken,
}

/// A damage-driven view of one X screen.
pub struct Watcher {
    x: X11,
    damage: u32,
    region: u32,
    /// An unmapped window of this connection: [`Watcher::wake`] sends it a message.
    mailbox: u32,
    first_event: u8,
    woken: AtomicBool,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("display", &self.x.display)
            .finish_non_exhaustive()
    }
}

fn unavailable(e: impl std::fmt::Display) -> Unavailable {
    Unavailable::NoDisplay(e.to_string())
}

impl Watcher {
    /// Connects to `display` (with `cookie` when given) and starts listening for damage on
    /// the whole screen. Fails when the server lacks DAMAGE.
    pub fn open(display: Option<&str>, cookie: Option<&Cookie>) -> Result<Watcher, Unavailable> {
        let x = X11::connect(display, cookie)?;
        let c = &x.conn;
        let ext = c
            .extension_information(x11rb::protocol::damage::X11_EXTENSION_NAME)
            .map_err(unavailable)?
            .ok_or_else(|| unavailable("the X server lacks the DAMAGE extension"))?;
        c.damage_query_version(1, 1)
            .map_err(unavailable)?
            .reply()
            .map_err(unavailable)?;
        let damage = c.generate_id().map_err(unavailable)?;
        c.damage_create(damage, x.root, ReportLevel::NON_EMPTY)
            .map_err(unavailable)?;
        let region = c.generate_id().map_err(unavailable)?;
        c.xfixes_create_region(region, &[]).map_err(unavailable)?;
        let mailbox = c.generate_id().map_err(unavailable)?;
        c.create_window(
            0,
            mailbox,
            x.root,
            -1,
            -1,
            1,
            1,
            0,
            WindowClass::INPUT_ONLY,
            0,
            &CreateWindowAux::new(),
        )
        .map_err(unavailable)?;
        c.sync().map_err(unavailable)?;
        Ok(Watcher {
            first_event: ext.first_event,
            x,
            damage,
            region,
            mailbox,
            woken: AtomicBool::new(false),
        })
    }

    /// The screen's size in pixels.
    pub fn size(&self) -> [i64; 2] {
        self.x.screen
    }

    /// Blocks until the screen changes or [`Watcher::wake`] is called; changes that arrive
    /// together are returned together.
    pub fn next(&self) -> CuResult<Change> {
        let first = self.x.conn.wait_for_event().map_err(xerr)?;
        let mut damaged = self.is_damage(&first);
        while let Some(e) = self.x.conn.poll_for_event().map_err(xerr)? {
            damaged |= self.is_damage(&e);
        }
        if damaged {
            return self.take_damage().map(Change::Damaged);
        }
        self.woken.store(false, Ordering::SeqCst);
        Ok(Change::Woken)
    }

    /// Takes what changed since the last call without waiting (empty when nothing did).
    pub fn pending(&self) -> CuResult<Vec<[i64; 4]>> {
        let mut damaged = false;
        while let Some(e) = self.x.conn.poll_for_event().map_err(xerr)? {
            damaged |= self.is_damage(&e);
        }
        if damaged {
            self.take_damage()
        } else {
            Ok(Vec::new())
        }
    }

    fn is_damage(&self, e: &Event) -> bool {
        match e {
            Event::DamageNotify(_) => true,
            // x11rb decodes extension events by the offsets it looked up itself.
            Event::Unknown(raw) => raw.first().is_some_and(|t| *t & 0x7f == self.first_event),
            _ => false,
        }
    }

    /// Moves the accumulated damage into our region and reads its rectangles.
    fn take_damage(&self) -> CuResult<Vec<[i64; 4]>> {
        let c = &self.x.conn;
        c.damage_subtract(self.damage, x11rb::NONE, self.region)
            .map_err(xerr)?;
        let r = c
            .xfixes_fetch_region(self.region)
            .map_err(xerr)?
            .reply()
            .map_err(xerr)?;
        let [w, h] = self.x.screen;
        let mut rects: Vec<[i64; 4]> = r
            .rectangles
            .iter()
            .map(|r| {
                let (x, y) = (i64::from(r.x).max(0), i64::from(r.y).max(0));
                [
                    x,
                    y,
                    (i64::from(r.x) + i64::from(r.width)).min(w),
                    (i64::from(r.y) + i64::from(r.height)).min(h),
                ]
            })
            .filter(|r| r[2] > r[0] && r[3] > r[1])
            .collect();
        if rects.len() > MAX_RECTS {
            rects = vec![bounding(&rects)];
        }
        Ok(rects)
    }

    /// Makes a blocked [`Watcher::next`] return [`Change::Woken`] (from any thread).
    pub fn wake(&self) {
        if self.woken.swap(true, Ordering::SeqCst) {
            return;
        }
        let ev = ClientMessageEvent::new(32, self.mailbox, x11rb::NONE, [0u32; 5]);
        // An empty event mask delivers it to the window's creator: this connection.
        let _ = self
            .x
            .conn
            .send_event(false, self.mailbox, EventMask::NO_EVENT, ev);
        let _ = self.x.conn.flush();
    }

    /// Captures `rect` (`[x1, y1, x2, y2)`) without the pointer.
    pub fn capture(&self, rect: [i64; 4]) -> CuResult<Image> {
        self.x.capture(rect, false)
    }

    /// Injects input on this screen (the local user's, during a take-over).
    pub fn input(&self) -> &dyn Input {
        &self.x
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let c = &self.x.conn;
        let _ = c.damage_destroy(self.damage);
        let _ = c.xfixes_destroy_region(self.region);
        let _ = c.destroy_window(self.mailbox);
        let _ = c.flush();
    }
}

/// The bounding box of `rects` (not empty).
pub fn bounding(rects: &[[i64; 4]]) -> [i64; 4] {
    rects.iter().fold([i64::MAX, i64::MAX, 0, 0], |a, r| {
        [
            a[0].min(r[0]),
            a[1].min(r[1]),
            a[2].max(r[2]),
            a[3].max(r[3]),
        ]
    })
}

/// Adds `more` to `acc`, merging into one bounding box past [`MAX_RECTS`].
pub fn merge(acc: &mut Vec<[i64; 4]>, more: Vec<[i64; 4]>) {
    acc.extend(more);
    if acc.len() > MAX_RECTS {
        let b = bounding(acc);
        acc.clear();
        acc.push(b);
    }
}

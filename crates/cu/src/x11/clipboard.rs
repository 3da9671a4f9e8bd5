//! The X11 clipboard (4.7.5 notes): a hidden window owns `CLIPBOARD` and a thread keeps
//! serving conversions (`TARGETS`, `UTF8_STRING`, `STRING`, `TEXT`, INCR for large
//! transfers) after the write returns; reads convert `CLIPBOARD` on a second connection
//! (INCR supported); XFixes selection-owner notifications drive a change counter.

use std::sync::Arc;
use std::sync::Condvar;
use std::sync::Mutex;
use std::time::Duration;
use std::time::Instant;

use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xfixes::ConnectionExt as _;
use x11rb::protocol::xfixes::SelectionEventMask;
use x11rb::protocol::xproto::AtomEnum;
use x11rb::protocol::xproto::ChangeWindowAttributesAux;
use x11rb::protocol::xproto::ConnectionExt as _;
use x11rb::protocol::xproto::CreateWindowAux;
use x11rb::protocol::xproto::EventMask;
use x11rb::protocol::xproto::GetPropertyReply;
use x11rb::protocol::xproto::PropMode;
use x11rb::protocol::xproto::Property;
use x11rb::protocol::xproto::SelectionNotifyEvent;
use x11rb::protocol::xproto::SelectionRequestEvent;
use x11rb::protocol::xproto::Window;
use x11rb::protocol::xproto::WindowClass;
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

use super::Atoms;
use crate::backend::Clipboard;
use crate::backend::ClipboardState;
use crate::error::CuError;
use crate::error::CuResult;

/// Above this size, transfers use INCR.
const INCR_THRESHOLD: usize = 256 * 1024;
/// One INCR chunk.
const INCR_CHUNK: usize = 64 * 1024;
/// How long a read waits for the owner at each step.
const READ_STEP_TIMEOUT: Duration = Duration::from_secs(3);

fn xerr(e: impl std::fmt::Display) -> CuError {
    CuError::internal(format!("X11 clipboard failed: {e}"))
}

/// No clipboard backend: every operation is `DEPENDENCY_MISSING`.
#[derive(Debug)]
pub(super) struct NoClipboard;

impl Clipboard for NoClipboard {
    fn available(&self) -> bool {
        false
    }
    fn read(&self) -> CuResult<ClipboardState> {
        Err(CuError::dependency("X11 clipboard", "clipboard.read"))
    }
    fn counter(&self) -> Option<u64> {
        None
    }
    fn write(&self, _text: &str) -> CuResult<Option<u64>> {
        Err(CuError::dependency("X11 clipboard", "clipboard.write"))
    }
}

struct Incr {
    requestor: Window,
    property: u32,
    ty: u32,
    data: Arc<Vec<u8>>,
    offset: usize,
}

#[derive(Default)]
struct OwnerState {
    data: Option<Arc<Vec<u8>>>,
    counter: u64,
    /// Text conversions answered with our content.
    served: u64,
    xfixes: bool,
    /// The CLIPBOARD owner as of the last XFixes notification processed (or the start).
    owner: Window,
}

/// How long a read waits for the notification thread to catch up with the owner it saw.
const OWNER_SYNC: Duration = Duration::from_millis(200);

struct Shared {
    state: Mutex<OwnerState>,
    changed: Condvar,
}

struct Reader {
    conn: RustConnection,
    window: Window,
}

/// The selection owner and reader.
pub(super) struct X11Clipboard {
    owner: Arc<RustConnection>,
    window: Window,
    atoms: Atoms,
    shared: Arc<Shared>,
    reader: Mutex<Reader>,
}

fn hidden_window(conn: &RustConnection, screen: usize, mask: EventMask) -> CuResult<Window> {
    let root = conn
        .setup()
        .roots
        .get(screen)
        .map(|s| s.root)
        .ok_or_else(|| CuError::internal("no X screen"))?;
    let w = conn.generate_id().map_err(xerr)?;
    conn.create_window(
        0,
        w,
        root,
        -10,
        -10,
        1,
        1,
        0,
        WindowClass::INPUT_ONLY,
        0,
        &CreateWindowAux::new().event_mask(mask),
    )
    .map_err(xerr)?;
    Ok(w)
}

impl X11Clipboard {
    /// Connects twice (owner, reader) and starts the owner thread.
    pub(super) fn start(
        display: Option<&str>,
        cookie: Option<&crate::Cookie>,
    ) -> CuResult<X11Clipboard> {
        let (owner, screen) = super::connect(display, cookie).map_err(xerr)?;
        let atoms = Atoms::new(&owner).map_err(xerr)?.reply().map_err(xerr)?;
        let window = hidden_window(&owner, screen, EventMask::PROPERTY_CHANGE)?;
        let xfixes = owner
            .xfixes_query_version(5, 0)
            .ok()
            .and_then(|c| c.reply().ok())
            .is_some();
        if xfixes {
            owner
                .xfixes_select_selection_input(
                    window,
                    atoms.CLIPBOARD,
                    SelectionEventMask::SET_SELECTION_OWNER
                        | SelectionEventMask::SELECTION_WINDOW_DESTROY
                        | SelectionEventMask::SELECTION_CLIENT_CLOSE,
                )
                .map_err(xerr)?;
        }
        owner.sync().map_err(xerr)?;
        // Selected before this query, so any later change arrives as a notification.
        let initial_owner = owner
            .get_selection_owner(atoms.CLIPBOARD)
            .map_err(xerr)?
            .reply()
            .map_err(xerr)?
            .owner;
        let (rconn, rscreen) = super::connect(display, cookie).map_err(xerr)?;
        let rwin = hidden_window(&rconn, rscreen, EventMask::PROPERTY_CHANGE)?;
        rconn.sync().map_err(xerr)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(OwnerState {
                xfixes,
                owner: initial_owner,
                ..OwnerState::default()
            }),
            changed: Condvar::new(),
        });
        let owner = Arc::new(owner);
        let (c, s) = (owner.clone(), shared.clone());
        std::thread::Builder::new()
            .name("x11-clipboard".into())
            .spawn(move || serve(&c, window, atoms, &s))
            .map_err(xerr)?;
        Ok(X11Clipboard {
            owner,
            window,
            atoms,
            shared,
            reader: Mutex::new(Reader {
                conn: rconn,
                window: rwin,
            }),
        })
    }
}

fn serve(conn: &RustConnection, window: Window, atoms: Atoms, shared: &Shared) {
    let mut incr: Vec<Incr> = Vec::new();
    loop {
        let Ok(ev) = conn.wait_for_event() else {
            return;
        };
        match ev {
            Event::SelectionRequest(e) => {
                let data = shared.state.lock().ok().and_then(|s| s.data.clone());
                let prop = answer(conn, &atoms, &e, data, &mut incr);
                if prop != u32::from(AtomEnum::NONE)
                    && e.target != atoms.TARGETS
                    && let Ok(mut s) = shared.state.lock()
                {
                    s.served += 1;
                }
                notify_requestor(conn, &e, prop);
            }
            Event::PropertyNotify(e) if e.state == Property::DELETE => {
                if let Some(i) = incr
                    .iter()
                    .position(|t| t.requestor == e.window && t.property == e.atom)
                {
                    let t = &mut incr[i];
                    let end = (t.offset + INCR_CHUNK).min(t.data.len());
                    let chunk = &t.data[t.offset..end];
                    let _ = conn.change_property8(
                        PropMode::REPLACE,
                        t.requestor,
                        t.property,
                        t.ty,
                        chunk,
                    );
                    let _ = conn.flush();
                    if chunk.is_empty() {
                        let done = incr.remove(i);
                        let _ = conn.change_window_attributes(
                            done.requestor,
                            &ChangeWindowAttributesAux::new().event_mask(EventMask::NO_EVENT),
                        );
                    } else {
                        t.offset = end;
                    }
                }
            }
            Event::SelectionClear(e) if e.owner == window => {
                if let Ok(mut s) = shared.state.lock() {
                    s.data = None;
                }
            }
            Event::XfixesSelectionNotify(e) => {
                if let Ok(mut s) = shared.state.lock() {
                    s.counter += 1;
                    s.owner = e.owner;
                }
                shared.changed.notify_all();
            }
            _ => {}
        }
    }
}

/// Answers one conversion; returns the property written or NONE.
/// Tells the requestor of `e` where its conversion went: `property`, or NONE when refused.
pub(crate) fn notify_requestor(conn: &impl Connection, e: &SelectionRequestEvent, property: u32) {
    let notify = SelectionNotifyEvent {
        response_type: x11rb::protocol::xproto::SELECTION_NOTIFY_EVENT,
        sequence: 0,
        time: e.time,
        requestor: e.requestor,
        selection: e.selection,
        target: e.target,
        property,
    };
    let _ = conn.send_event(false, e.requestor, EventMask::NO_EVENT, notify);
    let _ = conn.flush();
}

fn answer(
    conn: &RustConnection,
    atoms: &Atoms,
    e: &SelectionRequestEvent,
    data: Option<Arc<Vec<u8>>>,
    incr: &mut Vec<Incr>,
) -> u32 {
    let none = u32::from(AtomEnum::NONE);
    let Some(data) = data else {
        return none;
    };
    if e.selection != atoms.CLIPBOARD {
        return none;
    }
    let prop = if e.property == none {
        e.target
    } else {
        e.property
    };
    let string = u32::from(AtomEnum::STRING);
    if e.target == atoms.TARGETS {
        let targets = [atoms.TARGETS, atoms.UTF8_STRING, string, atoms.TEXT];
        let _ = conn.change_property32(
            PropMode::REPLACE,
            e.requestor,
            prop,
            AtomEnum::ATOM,
            &targets,
        );
        return prop;
    }
    let ty = if e.target == atoms.UTF8_STRING || e.target == atoms.TEXT {
        atoms.UTF8_STRING
    } else if e.target == string {
        string
    } else {
        return none;
    };
    if data.len() > INCR_THRESHOLD {
        let _ = conn.change_window_attributes(
            e.requestor,
            &ChangeWindowAttributesAux::new().event_mask(EventMask::PROPERTY_CHANGE),
        );
        let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let _ = conn.change_property32(PropMode::REPLACE, e.requestor, prop, atoms.INCR, &[len]);
        incr.retain(|t| !(t.requestor == e.requestor && t.property == prop));
        incr.push(Incr {
            requestor: e.requestor,
            property: prop,
            ty,
            data,
            offset: 0,
        });
    } else {
        let _ = conn.change_property8(PropMode::REPLACE, e.requestor, prop, ty, &data);
    }
    prop
}

impl Reader {
    /// Waits for an event matching `f` on the reader connection.
    fn wait<T>(&self, mut f: impl FnMut(&Event) -> Option<T>) -> CuResult<T> {
        let deadline = Instant::now() + READ_STEP_TIMEOUT;
        loop {
            while let Some(ev) = self.conn.poll_for_event().map_err(xerr)? {
                if let Some(t) = f(&ev) {
                    return Ok(t);
                }
            }
            if Instant::now() >= deadline {
                return Err(CuError::internal("the clipboard owner did not answer"));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Reads and deletes `prop` of the reader window (deleting asks an INCR owner for more).
    fn take_property(&self, prop: u32) -> CuResult<GetPropertyReply> {
        self.conn
            .get_property(true, self.window, prop, AtomEnum::ANY, 0, u32::MAX / 4)
            .map_err(xerr)?
            .reply()
            .map_err(xerr)
    }

    /// Converts CLIPBOARD to `target`; `None` when refused.
    fn convert(&self, atoms: &Atoms, target: u32) -> CuResult<Option<(u32, Vec<u8>)>> {
        let prop = atoms.SHIM_SELECTION;
        let _ = self.conn.delete_property(self.window, prop);
        self.conn
            .convert_selection(
                self.window,
                atoms.CLIPBOARD,
                target,
                prop,
                x11rb::CURRENT_TIME,
            )
            .map_err(xerr)?;
        self.conn.flush().map_err(xerr)?;
        let got = self.wait(|ev| match ev {
            Event::SelectionNotify(n) if n.requestor == self.window => Some(n.property),
            _ => None,
        })?;
        if got == u32::from(AtomEnum::NONE) {
            return Ok(None);
        }
        let r = self.take_property(prop)?;
        if r.type_ != atoms.INCR {
            return Ok(Some((r.type_, r.value)));
        }
        // INCR: each deletion asks for the next chunk; an empty chunk ends it.
        let mut out = Vec::new();
        let mut ty = 0;
        loop {
            self.wait(|ev| match ev {
                Event::PropertyNotify(p)
                    if p.window == self.window
                        && p.atom == prop
                        && p.state == Property::NEW_VALUE =>
                {
                    Some(())
                }
                _ => None,
            })?;
            let r = self.take_property(prop)?;
            self.conn.flush().map_err(xerr)?;
            if r.value.is_empty() {
                return Ok(Some((ty, out)));
            }
            ty = r.type_;
            out.extend_from_slice(&r.value);
        }
    }
}

impl X11Clipboard {
    /// The change counter once the notification thread has processed `owner` taking the
    /// selection (bounded by [`OWNER_SYNC`]). Another client's change reaches the reader's
    /// `GetSelectionOwner` before its XFixes event reaches the owner connection; a counter
    /// read in between would be one short, and a paste's restore (4.2.2 step 5) would then
    /// take its own write for a foreign one and skip.
    fn counter_seeing(&self, owner: Window) -> Option<u64> {
        let s = self.shared.state.lock().ok()?;
        if !s.xfixes {
            return None;
        }
        let (s, _) = self
            .shared
            .changed
            .wait_timeout_while(s, OWNER_SYNC, |s| s.owner != owner)
            .ok()?;
        Some(s.counter)
    }
}

impl Clipboard for X11Clipboard {
    fn available(&self) -> bool {
        true
    }

    fn read(&self) -> CuResult<ClipboardState> {
        let reader = self
            .reader
            .lock()
            .map_err(|_| CuError::internal("clipboard poisoned"))?;
        let owner = reader
            .conn
            .get_selection_owner(self.atoms.CLIPBOARD)
            .map_err(xerr)?
            .reply()
            .map_err(xerr)?
            .owner;
        let counter = self.counter_seeing(owner);
        if owner == x11rb::NONE {
            return Ok(ClipboardState {
                text: None,
                counter,
                marker: None,
            });
        }
        let targets: Vec<u32> = reader
            .convert(&self.atoms, self.atoms.TARGETS)?
            .map(|(_, v)| {
                v.chunks_exact(4)
                    .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
                    .collect()
            })
            .unwrap_or_default();
        let marker = targets
            .contains(&self.atoms.KDE_PASSWORD_HINT)
            .then(|| "x-kde-passwordManagerHint".to_owned());
        let text = reader
            .convert(&self.atoms, self.atoms.UTF8_STRING)?
            .map(|(_, v)| String::from_utf8_lossy(&v).into_owned());
        Ok(ClipboardState {
            text,
            counter,
            marker,
        })
    }

    fn counter(&self) -> Option<u64> {
        let s = self.shared.state.lock().ok()?;
        s.xfixes.then_some(s.counter)
    }

    fn served(&self) -> Option<u64> {
        self.shared.state.lock().ok().map(|s| s.served)
    }

    fn write(&self, text: &str) -> CuResult<Option<u64>> {
        let before = {
            let mut s = self
                .shared
                .state
                .lock()
                .map_err(|_| CuError::internal("clipboard poisoned"))?;
            s.data = Some(Arc::new(text.as_bytes().to_vec()));
            s.counter
        };
        self.owner
            .set_selection_owner(self.window, self.atoms.CLIPBOARD, x11rb::CURRENT_TIME)
            .map_err(xerr)?;
        let owner = self
            .owner
            .get_selection_owner(self.atoms.CLIPBOARD)
            .map_err(xerr)?
            .reply()
            .map_err(xerr)?
            .owner;
        if owner != self.window {
            return Err(CuError::internal("could not take ownership of CLIPBOARD"));
        }
        // Wait for our own owner-change notification so the counter includes this write.
        let s = self
            .shared
            .state
            .lock()
            .map_err(|_| CuError::internal("clipboard poisoned"))?;
        if !s.xfixes {
            return Ok(None);
        }
        let (s, _) = self
            .shared
            .changed
            .wait_timeout_while(s, Duration::from_secs(2), |s| s.counter == before)
            .map_err(|_| CuError::internal("clipboard poisoned"))?;
        Ok(Some(s.counter))
    }
}

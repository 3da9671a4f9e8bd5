// The console page: renders the daemon's state from the event stream (/api/events) and
// posts the buttons' actions. Everything is written with textContent: nothing the daemon
// sends (commands, paths, messages) is ever parsed as HTML.
"use strict";

const $ = (id) => document.getElementById(id);

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

// The connection's state in words a user understands; the same words as
// ConnectionStatus::words in crates/daemon/src/ipc.rs (`autogpt-shim status`).
const TROUBLE = {
  no_network: "waiting for network",
  proxy: "proxy refused",
  certificate: "certificate not trusted",
  settings: "a setting is wrong",
  unreachable: "platform unreachable",
};
function connectionWords(c) {
  const t = TROUBLE[c.problem];
  const waiting = c.state === "reconnecting" || c.state === "connecting";
  const n = c.retry_in_seconds;
  if (waiting && t) return n === null || n === undefined ? t + ", trying now" : t + ", trying again in " + n + " s";
  if (c.state === "reconnecting" && n !== null && n !== undefined) return "reconnecting in " + n + " s";
  return c.state;
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = document.createElement("td");
    if (c instanceof Node) td.appendChild(c);
    else td.textContent = c === null || c === undefined ? "" : String(c);
    tr.appendChild(td);
  }
  return tr;
}

function say(text) {
  $("message").textContent = text;
}

async function act(url, what) {
  try {
    const r = await fetch(url, { method: "POST", credentials: "same-origin" });
    const body = (await r.text()).trim();
    say(r.ok ? what : body || "refused (" + r.status + ")");
  } catch (e) {
    say("the daemon did not answer: " + e);
  }
}

function button(label, cls, url, what, dataName) {
  const b = el("button", label, cls);
  b.type = "button";
  if (dataName) b.dataset.action = dataName;
  b.addEventListener("click", () => act(url, what));
  return b;
}

function seconds(ms) {
  return ms < 10000 ? (ms / 1000).toFixed(1) + " s" : Math.round(ms / 1000) + " s";
}

function fill(tableId, rows) {
  const body = $(tableId).querySelector("tbody");
  body.replaceChildren(...rows);
  const empty = $(tableId + "-empty");
  if (empty) {
    empty.hidden = rows.length > 0;
    $(tableId).hidden = rows.length === 0;
  }
}

function render(v) {
  const s = v.status;
  const daemon = $("daemon");
  daemon.textContent = s.paused ? "PAUSED" : "running";
  daemon.className = "pill " + (s.paused ? "bad" : "ok");
  $("pause").disabled = s.paused;
  $("resume").disabled = !s.paused;

  fill("approvals", v.approvals.map((a) => {
    const buttons = el("span");
    buttons.append(
      button("Approve", "ok", "/api/approvals/" + a.id + "/approve", "Approved command " + a.id + ".", "approve"),
      " ",
      button("Deny", "danger", "/api/approvals/" + a.id + "/deny", "Denied command " + a.id + ".", "deny"),
      " ",
      button("Always allow", "", "/api/approvals/" + a.id + "/always", "Always allowed.", "always"),
    );
    const tr = row([a.id, a.session_id, el("span", a.command, "cmd"), a.reason, a.seconds_left + " s", buttons]);
    tr.dataset.approval = a.id;
    tr.children[2].className = "cmd";
    return tr;
  }));

  fill("operations", s.operations.map((o) => {
    const kill = o.killable
      ? button("Kill", "danger", "/api/operations/" + o.id + "/kill", "Ended operation " + o.id + ".", "kill")
      : el("span", "");
    const tr = row([o.id, o.session_id || "", o.kind, o.summary, seconds(o.age_ms), kill]);
    tr.dataset.operation = o.id;
    tr.children[3].className = "cmd";
    return tr;
  }));

  fill("connections", s.connections.map((c) => {
    const tr = row([
      c.kind === "control" ? "control connection" : "chat " + c.session_id,
      c.folder || "",
      connectionWords(c) + " (" + c.state_seconds + " s)",
      c.granted_capabilities.join(", "),
    ]);
    tr.dataset.session = c.session_id || "control";
    return tr;
  }));

  const r = s.command_rate;
  const a = s.audit;
  $("facts").textContent =
    "Shell commands: " + s.sandbox.description + ". " +
    "Commands: " + r.in_window + " of " + r.max_per_window + " in the last " + r.window_seconds + " s, " +
    r.running + " of " + r.max_concurrent + " running. " +
    "Audit log: last seq " + (a.last_seq === null ? "none" : a.last_seq) + ", chain " + a.chain +
    (a.problem ? " (" + a.problem + ")" : "") + ". " +
    "Policy: " + (s.policy_file || "none (every command is allowed)") + ".";

  const errs = s.last_errors.slice().reverse().map((e) =>
    el("li", new Date(e.at_unix * 1000).toLocaleTimeString() + " " + e.source +
      (e.session_id ? " (chat " + e.session_id + ")" : "") + ": " + e.code + " " + e.message));
  $("errors").replaceChildren(...errs);
  $("errors-empty").hidden = errs.length > 0;

  const lines = v.audit.slice().reverse().map((l) => {
    const li = el("li", null, l.ok ? "" : "failed");
    li.value = l.seq;
    li.append(el("span", l.time, "t"), el("span", (l.session_id ? "[" + l.session_id + "] " : "") + l.text));
    return li;
  });
  $("audit").replaceChildren(...lines);

  renderDesk(v);

  const screen = $("screen");
  screen.hidden = !(v.computer_use && v.screenshot !== null);
  if (!screen.hidden) {
    const src = "/api/screenshot?v=" + v.screenshot;
    if ($("screenshot").getAttribute("src") !== src) $("screenshot").setAttribute("src", src);
  }
}

function connect() {
  const live = $("live");
  const es = new EventSource("/api/events");
  es.addEventListener("state", (e) => {
    live.textContent = "live";
    live.className = "pill ok";
    render(JSON.parse(e.data));
  });
  es.onerror = () => {
    live.textContent = "live updates: disconnected (retrying)";
    live.className = "pill bad";
  };
}

// ---- live view and take-over (docs/console.md) ----

const desk = { ws: null, screen: null, input: false, held: false, last: null, drawing: Promise.resolve() };

function renderDesk(v) {
  $("desk").hidden = !v.computer_use;
  const d = v.status.desktop;
  desk.held = d.held_by !== null;
  desk.last = d.last_action;
  $("holder").textContent = desk.held ? "you hold the desktop (" + d.held_by + ")" : "the agent has the desktop";
  $("holder").className = "pill " + (desk.held ? "bad" : "ok");
  $("takeover").disabled = desk.held;
  $("handback").disabled = !desk.held;
  $("livecanvas").classList.toggle("held", desk.held && desk.input);
  const a = d.last_action;
  let said = "";
  if (a) {
    said = "Last agent action" + (a.session_id ? " (chat " + a.session_id + ")" : "") + ": " + a.action;
    if (a.chord) said += " " + a.chord;
    if (a.typed_chars !== null) said += ", typed " + a.typed_chars + " characters";
    if (a.point) said += " at (" + a.point[0] + ", " + a.point[1] + ")";
    said += ", " + seconds(a.age_ms) + " ago";
  }
  $("last-action").textContent = said;
  placeMarker();
}

function placeMarker() {
  const m = $("marker");
  const c = $("livecanvas");
  const a = desk.last;
  if (!a || !a.point || !desk.screen || !desk.ws) {
    m.hidden = true;
    return;
  }
  m.hidden = false;
  m.style.left = (a.point[0] * c.clientWidth) / desk.screen[0] + "px";
  m.style.top = (a.point[1] * c.clientHeight) / desk.screen[1] + "px";
}

// One frame: "AGL1", a 4-byte big-endian header length, the JSON header, then the JPEG
// tiles in header order.
async function drawFrame(buf) {
  const bytes = new Uint8Array(buf);
  if (bytes.length < 8 || String.fromCharCode(...bytes.slice(0, 4)) !== "AGL1") return;
  const n = new DataView(buf).getUint32(4);
  const head = JSON.parse(new TextDecoder().decode(bytes.slice(8, 8 + n)));
  const c = $("livecanvas");
  if (c.width !== head.screen[0] || c.height !== head.screen[1]) {
    c.width = head.screen[0];
    c.height = head.screen[1];
  }
  desk.screen = head.screen;
  const ctx = c.getContext("2d");
  let off = 8 + n;
  for (const t of head.tiles) {
    const blob = new Blob([bytes.slice(off, off + t.bytes)], { type: "image/jpeg" });
    off += t.bytes;
    const bmp = await createImageBitmap(blob);
    ctx.drawImage(bmp, t.x, t.y);
    bmp.close();
  }
  c.dataset.frames = String(Number(c.dataset.frames || "0") + 1);
  c.dataset.seq = String(head.seq);
  placeMarker();
}

function watch() {
  if (desk.ws) {
    desk.ws.close();
    return;
  }
  const ws = new WebSocket("ws://" + location.host + "/api/live");
  ws.binaryType = "arraybuffer";
  desk.ws = ws;
  $("watch").textContent = "Stop watching";
  $("desk-state").textContent = "Connecting…";
  ws.onmessage = (e) => {
    if (typeof e.data === "string") {
      const m = JSON.parse(e.data);
      if (m.type === "hello") {
        desk.input = m.input;
        $("desk-state").textContent = m.input
          ? "Watching the private desktop. Take over to use it with your mouse and keyboard here."
          : "Watching your own display. Take over, then use your own mouse and keyboard.";
      } else {
        $("desk-state").textContent = m.message;
      }
      return;
    }
    desk.drawing = desk.drawing.then(() => drawFrame(e.data)).catch(() => {});
  };
  ws.onclose = () => {
    desk.ws = null;
    desk.screen = null;
    $("watch").textContent = "Watch live";
    $("desk-state").textContent = "Not watching.";
    placeMarker();
  };
}

function send(ev) {
  if (desk.ws && desk.ws.readyState === WebSocket.OPEN && desk.held && desk.input) {
    desk.ws.send(JSON.stringify(ev));
    return true;
  }
  return false;
}

// The canvas shows the desktop scaled: a point on it is scaled back to desktop pixels.
function point(e) {
  const c = $("livecanvas");
  const r = c.getBoundingClientRect();
  return {
    x: Math.round(((e.clientX - r.left) * c.width) / r.width),
    y: Math.round(((e.clientY - r.top) * c.height) / r.height),
  };
}

const BUTTONS = ["left", "middle", "right"];

function chord(e) {
  const named = { Enter: "enter", Tab: "tab", Escape: "escape", Backspace: "backspace", Delete: "delete",
    ArrowUp: "up", ArrowDown: "down", ArrowLeft: "left", ArrowRight: "right", Home: "home", End: "end",
    PageUp: "pageup", PageDown: "pagedown", " ": "space" };
  let k = named[e.key] || (/^F\d{1,2}$/.test(e.key) ? e.key.toLowerCase() : null);
  const mods = [];
  if (e.ctrlKey) mods.push("ctrl");
  if (e.altKey) mods.push("alt");
  if (e.metaKey) mods.push("super");
  if (!k && e.key.length === 1 && mods.length > 0) k = e.key.toLowerCase();
  if (!k) return null;
  if (e.shiftKey && (named[e.key] || mods.length > 0)) mods.push("shift");
  return mods.concat([k]).join("+");
}

function wireCanvas() {
  const c = $("livecanvas");
  c.addEventListener("mousemove", (e) => {
    if (desk.held) send(Object.assign({ type: "move" }, point(e)));
  });
  c.addEventListener("mousedown", (e) => {
    c.focus();
    if (send(Object.assign({ type: "move" }, point(e)))) {
      send({ type: "button", button: BUTTONS[e.button] || "left", down: true });
      e.preventDefault();
    }
  });
  c.addEventListener("mouseup", (e) => {
    if (send(Object.assign({ type: "move" }, point(e)))) {
      send({ type: "button", button: BUTTONS[e.button] || "left", down: false });
      e.preventDefault();
    }
  });
  c.addEventListener("contextmenu", (e) => {
    if (desk.held && desk.input) e.preventDefault();
  });
  c.addEventListener("wheel", (e) => {
    if (send({ type: "wheel", direction: e.deltaY < 0 ? "up" : "down" })) e.preventDefault();
  }, { passive: false });
  c.addEventListener("keydown", (e) => {
    const ch = chord(e);
    const sent = ch ? send({ type: "key", chord: ch }) : e.key.length === 1 && send({ type: "text", text: e.key });
    if (sent) e.preventDefault();
  });
}

document.addEventListener("DOMContentLoaded", () => {
  $("watch").addEventListener("click", watch);
  $("takeover").addEventListener("click", () => act("/api/takeover", "You hold the desktop: the agent's input is refused until you hand it back."));
  $("handback").addEventListener("click", () => act("/api/handback", "Handed back: the agent may use the desktop again."));
  wireCanvas();
  $("pause").addEventListener("click", () => act("/api/pause", "Paused: new operations are refused."));
  $("resume").addEventListener("click", () => act("/api/resume", "Resumed."));
  $("kill-all").addEventListener("click", () => act("/api/kill", "Ended every running command."));
  connect();
});

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

document.addEventListener("DOMContentLoaded", () => {
  $("pause").addEventListener("click", () => act("/api/pause", "Paused: new operations are refused."));
  $("resume").addEventListener("click", () => act("/api/resume", "Resumed."));
  $("kill-all").addEventListener("click", () => act("/api/kill", "Ended every running command."));
  connect();
});

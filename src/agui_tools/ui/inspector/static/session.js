// Sessions you control, interrupts, replay and compose: the parts of the inspector page
// that drive the session rather than render its stream. Plugged into the handlers table
// (on(kind, fn)) — one more handler per kind, after chat.js's own (imported first).
//
// The page's rule holds here too: everything the agent, a tool, a file or the user
// produced is DATA, put into the DOM with textContent / value only.

import { $, el, json, api, announce, config, on, ruleLink } from "./core.js";
import { addToLog, card, errorList, schemaForm, setStatus } from "./chat.js";


// -- statuses: every card says where its call is ---------------------------------------------

const LABELS = {
  called: "called",
  agent: "answered by the agent",
  rejected: "run rejected",
  stopped: "stopped",
  awaiting_approval: "awaiting approval",
  frontend: "left to the frontend",
  answered: "answered by the frontend",
};

function fixCard(msg) {
  const c = card(msg.callId, msg.name, msg.threadId);
  if (msg.status in LABELS) setStatus(c, msg.status, LABELS[msg.status]);
  if (msg.status !== "streaming" && c.argsLabel.textContent.startsWith("arguments (streaming")) {
    // the arguments are complete (or the call is over): no longer a preview
    c.argsLabel.textContent = "arguments";
  }
  if (msg.status === "rejected") {
    c.actions.replaceChildren(el("p", { class: "muted", text: msg.note || "The run was rejected." }));
  }
  if (msg.status === "stopped") {
    c.actions.replaceChildren(el("p", { class: "muted", text: "You stopped the turn; the next prompt asks again." }));
  }
  if (msg.decision) {
    const d = msg.decision;
    c.actions.replaceChildren(el("p", { class: "muted", text: d.action === "resolve" ? "You approved it (interrupt resolved)." : `You declined it (interrupt cancelled${d.reason ? `: ${d.reason}` : ""}).` }));
  }
  if (msg.answer && msg.answer.error) {
    // a failed call's error is its content too: said once
    const errors = c.result.querySelectorAll("p.error");
    const content = json(msg.answer.content);
    for (const p of errors) if (content.includes(msg.answer.error)) p.remove();
  }
}

on("call", fixCard);

// -- the controls: stop, new thread, agents, URL and headers ------------------------------------

let busy = false;
let agents = [];
let current = null;

function toolbar() {
  const stop = el("button", { type: "button", id: "stop", class: "decline", text: "Stop", disabled: true, "aria-label": "Stop the run in progress",
    onclick: () => api("stop", {}).catch((err) => announce(err.message)) });
  const fresh = el("button", { type: "button", id: "new-thread", class: "ghost", text: "New thread", "aria-label": "Start a new thread",
    onclick: () => newThread().catch((err) => announce(err.message)) });
  const pick = el("select", { id: "agent-select", "aria-label": "Agent", hidden: true,
    onchange: () => api("agent", { agent: pick.value }).catch((err) => announce(err.message)) });
  const settings = el("button", { type: "button", id: "agent-settings", class: "ghost", text: "Agent…", "aria-expanded": "false", "aria-controls": "agent-box",
    onclick: () => toggle($("agent-box"), settings) });
  const replay = el("button", { type: "button", id: "replay-open", class: "ghost", text: "Replay…", "aria-expanded": "false", "aria-controls": "replay-box",
    onclick: () => toggle($("replay-box"), replay) });
  const thread = el("span", { id: "thread-id", class: "muted thread-id", title: "the thread this page drives" });
  const threads = el("select", { id: "thread-select", "aria-label": "Thread", hidden: true,
    onchange: () => api("thread", { threadId: threads.value }).catch((err) => announce(err.message)) });
  const controls = el("div", { class: "session-controls", role: "group", "aria-label": "Session" }, pick, settings, stop, fresh, threads, replay, thread);
  const bar = document.querySelector("header.bar");
  bar.insertBefore(controls, $("status"));
  document.body.append(agentBox(), replayBox());
}

function toggle(box, button) {
  box.hidden = !box.hidden;
  button.setAttribute("aria-expanded", String(!box.hidden));
  if (!box.hidden) {
    const first = box.querySelector("input, textarea, select") || box.querySelector("button");
    if (first) first.focus();
  } else {
    button.focus(); // back where the keyboard opened it
  }
}

// Escape closes an open panel (Agent…, Replay…)
document.addEventListener("keydown", (ev) => {
  if (ev.key !== "Escape") return;
  for (const [box, button] of [["agent-box", "agent-settings"], ["replay-box", "replay-open"]]) {
    if (!$(box).hidden && $(box).contains(document.activeElement)) toggle($(box), $(button));
  }
});

function agentBox() {
  const url = el("input", { type: "url", id: "agent-url", "aria-label": "Agent URL", size: 40 });
  const bearer = el("input", { type: "password", id: "agent-bearer", "aria-label": "Bearer token", autocomplete: "off", placeholder: "unchanged" });
  const headers = el("textarea", { id: "agent-headers", rows: 3, "aria-label": "Request headers (one header a line)", placeholder: "Name: value (replaces the headers; empty: unchanged)" });
  const known = el("p", { id: "agent-header-names", class: "muted" });
  const problems = el("div", { class: "edit-errors", role: "alert" });
  const apply = el("button", { type: "button", id: "agent-apply", text: "Apply",
    onclick: async () => {
      problems.replaceChildren();
      const body = { url: url.value };
      if (bearer.value) body.bearer = bearer.value;
      if (headers.value.trim()) {
        body.headers = {};
        for (const line of headers.value.split("\n")) {
          if (!line.trim()) continue;
          const at = line.indexOf(":");
          if (at < 1) {
            problems.append(el("p", { class: "error", text: `not a header: ${line}` }));
            return;
          }
          body.headers[line.slice(0, at).trim()] = line.slice(at + 1).trim();
        }
      }
      try {
        await api("agent", body);
        bearer.value = "";
        headers.value = "";
        announce("agent settings applied");
      } catch (err) {
        problems.append(el("p", { class: "error", text: err.message }));
      }
    } });
  const clear = el("button", { type: "button", class: "ghost", text: "Remove the bearer token",
    onclick: () => api("agent", { bearer: "" }).catch((err) => problems.replaceChildren(el("p", { class: "error", text: err.message }))) });
  // a button to close it, as Replay has: a phone has no Escape key
  const close = el("button", { type: "button", class: "ghost", text: "Close", onclick: () => toggle($("agent-box"), $("agent-settings")) });
  return el("section", { id: "agent-box", class: "overlay agent-box", hidden: true, "aria-label": "Agent settings" },
    el("header", {}, el("h2", { text: "Agent" }), close),
    el("label", { class: "field" }, el("span", { text: "URL" }), url),
    el("label", { class: "field" }, el("span", { text: "Bearer token (sent as Authorization; never shown again)" }), bearer),
    el("label", { class: "field" }, el("span", { text: "Headers" }), headers),
    known, el("div", { class: "buttons" }, apply, clear), problems);
}

on("agents", (m) => {
  agents = m.agents;
  current = agents.find((a) => a.name === m.current) || agents[0];
  const pick = $("agent-select");
  pick.replaceChildren(...agents.map((a) => el("option", { value: a.name, text: `${a.name} — ${a.url}` })));
  pick.value = m.current;
  pick.hidden = agents.length < 2;
  $("agent").textContent = agents.length > 1 ? `${current.name}: ${current.url}` : current.url;
  $("agent-url").value = current.url;
  $("agent-header-names").textContent = current.headers.length
    ? `Headers sent (values hidden): ${current.headers.join(", ")}${current.bearer ? " — a bearer token is set" : ""}`
    : "No extra headers are sent.";
  $("thread-id").textContent = m.threadId;
  // with a store: the threads this inspector kept, to go back to one
  const threads = $("thread-select");
  const kept = m.threads || [];
  const listed = kept.includes(m.threadId) ? kept : [...kept, m.threadId];
  threads.replaceChildren(...listed.map((t) => el("option", { value: t, text: t })));
  threads.value = m.threadId;
  threads.hidden = !m.threads || listed.length < 2;
});

// The turn waits only for the person's answers to open interrupts (the run is over):
// New thread stays usable — after a confirmation it stops the turn, which withdraws the
// open interrupts (the thread records them unanswered), then starts over.
const openInterrupts = new Set();
let idleAgain = null; // resolved when the back end says the turn ended

function newThreadState() {
  $("new-thread").disabled = busy && openInterrupts.size === 0;
}

async function newThread() {
  if (busy && openInterrupts.size) {
    const n = openInterrupts.size;
    if (!window.confirm(`A new thread abandons the ${n} open interrupt${n === 1 ? "" : "s"} of this one. Start a new thread?`)) return;
    const ended = new Promise((resolve) => { idleAgain = resolve; });
    try {
      await api("stop", {});
    } catch (err) {
      if (busy) throw err; // (a 409 when the turn ended meanwhile: nothing left to stop)
    }
    if (busy) await ended;
  }
  await api("new-thread", {});
}

on("interrupt", (m) => {
  openInterrupts.add(m.id);
  newThreadState();
});
on("interrupt-done", (m) => {
  openInterrupts.delete(m.id);
  newThreadState();
});

on("busy", (m) => {
  busy = m.busy;
  if (!busy) {
    openInterrupts.clear();
    if (idleAgain) idleAgain();
    idleAgain = null;
  }
  $("stop").disabled = !busy;
  newThreadState();
  $("agent-select").disabled = busy;
  $("thread-select").disabled = busy;
  $("agent-apply").disabled = busy;
  $("compose-send").disabled = busy;
});

// A new thread after the one this page was served on: reload, and the fresh connection
// starts at the new thread (the back end replays a new tab only the current thread).
on("new-thread", (m) => {
  if (m.seq > (config.threadStart || 0)) location.reload();
});

on("stopped", (m) => {
  addToLog(el("div", { class: "bubble stopped", role: "status" }, el("span", { class: "who", text: "stopped" }), el("p", { text: m.message })));
});

on("restored", (m) => {
  addToLog(el("div", { class: "bubble note" }, el("span", { class: "who", text: "restored" }),
    el("p", { text: `Thread ${m.threadId} resumed from the store: ${m.messages} message(s).` })));
});

// -- the interrupt card --------------------------------------------------------------------

const interrupts = new Map(); // interrupt id → card parts

// The form for a responseSchema is chat.js's (the mock tools' answer form); a JSON editor
// for a schema it has no fields for, or on request.
function jsonEditor(label, initial) {
  const area = el("textarea", { rows: 4, class: "editor", "aria-label": label });
  area.value = initial === null ? "" : json(initial);
  return { node: el("label", { class: "field" }, el("span", { text: label }), area), read: () => JSON.parse(area.value) };
}

function showInterrupt(m) {
  const title = m.call ? `Approval: ${m.call.name}` : `Interrupt: ${m.reason || m.id}`;
  const node = el("section", { class: "card interrupt", "data-interrupt-id": m.id, "aria-label": `interrupt ${m.id}` });
  const badge = el("span", { class: "badge", "data-status": "awaiting_approval", text: m.expired ? "expired" : "awaiting your answer" });
  node.append(el("header", {}, el("h3", { class: "tool-name", text: title }), badge));
  const facts = el("dl", { class: "facts" });
  const fact = (name, value) => {
    if (value === null || value === undefined || value === "") return;
    facts.append(el("dt", { text: name }), el("dd", { text: typeof value === "string" ? value : json(value) }));
  };
  fact("reason", m.reason);
  fact("message", m.message);
  fact("interrupt id", m.id);
  fact("expires", m.expiresAt ? `${m.expiresAt}${m.expired ? " (expired: it can only be cancelled, INT-8)" : ""}` : null);
  if (m.call) {
    fact("call", `${m.call.name} (${m.call.callId})`);
    if (m.call.description) fact("tool", m.call.description);
  }
  node.append(facts);
  if (m.call) node.append(el("span", { class: "label", text: "arguments" }), el("pre", { class: "json args", text: json(m.call.arguments) }));
  if (m.metadata) node.append(el("details", {}, el("summary", { text: "metadata" }), el("pre", { class: "json", text: json(m.metadata) })));
  if (m.responseSchema) node.append(el("details", {}, el("summary", { text: "response schema" }), el("pre", { class: "json schema", text: json(m.responseSchema) })));

  const actions = el("div", { class: "actions" });
  const problems = el("div", { class: "edit-errors", role: "alert" });
  let form = m.responseSchema ? schemaForm(m.responseSchema, "your answer") : jsonEditor("your answer (JSON)", m.call ? { approved: true } : {});
  const holder = el("div", { class: "interrupt-form" }, form.node);
  const rawToggle = el("button", { type: "button", class: "ghost", text: "Edit as JSON", "aria-pressed": "false",
    onclick: () => {
      const raw = rawToggle.getAttribute("aria-pressed") !== "true";
      rawToggle.setAttribute("aria-pressed", String(raw));
      let current;
      try {
        current = form.read();
      } catch (err) {
        current = {};
      }
      form = raw || !m.responseSchema ? jsonEditor("your answer (JSON)", current === undefined ? {} : current) : schemaForm(m.responseSchema, "your answer");
      holder.replaceChildren(form.node);
    } });
  const send = async (body) => {
    problems.replaceChildren();
    try {
      await api("interrupt", { id: m.id, ...body });
    } catch (err) {
      problems.append(el("p", { class: "error", text: err.message }), errorList(err.details, "(payload)"));
    }
  };
  const resolve = el("button", { type: "button", class: "approve", text: "Resolve", "aria-label": `Resolve interrupt ${m.reason || m.id}`, disabled: m.expired,
    onclick: () => {
      let payload;
      try {
        payload = form.read();
      } catch (err) {
        problems.replaceChildren(el("p", { class: "error", text: `not JSON: ${err.message}` }));
        return;
      }
      send({ action: "resolve", payload });
    } });
  const reason = el("input", { type: "text", class: "reason", "aria-label": `Reason for cancelling interrupt ${m.reason || m.id}`, placeholder: "reason (optional)" });
  const cancel = el("button", { type: "button", class: "decline", text: "Cancel", "aria-label": `Cancel interrupt ${m.reason || m.id}`,
    onclick: () => send({ action: "cancel", reason: reason.value }) });
  const ask = el("p", { class: "ask", tabindex: "-1", text: m.call ? `The agent asks for your approval to run ${m.call.name}.` : "The agent asks:" });
  actions.append(ask, holder, el("div", { class: "buttons", role: "group", "aria-label": `Your answer to interrupt ${m.reason || m.id}` }, resolve, rawToggle, cancel, reason), problems);
  node.append(actions);
  interrupts.set(m.id, { node, badge, actions });
  addToLog(node);
  // the status region says how many interrupts wait for an answer (controls.js)
  const active = document.activeElement;
  if (!active || active === document.body || active === $("prompt")) ask.focus();
}

on("interrupt", showInterrupt);
on("interrupt-done", (m) => {
  const shown = interrupts.get(m.id);
  if (!shown) return;
  const resolved = m.action === "resolve";
  shown.badge.dataset.status = resolved ? "done" : m.action === "stopped" ? "stopped" : "declined";
  shown.badge.textContent = resolved ? "resolved" : m.action === "stopped" ? "stopped" : "cancelled";
  shown.node.dataset.status = shown.badge.dataset.status;
  shown.actions.replaceChildren(el("p", { class: "muted", text: resolved ? "You resolved it with:" : m.action === "stopped" ? "You stopped the turn before answering." : `You cancelled it${m.reason ? `: ${m.reason}` : ""}.` }));
  if (resolved) shown.actions.append(el("pre", { class: "json payload", text: json(m.payload) }));
});

// -- replay: import a capture, compose an input ------------------------------------------------

const inputs = new Map(); // run number → the RunAgentInput sent
on("run-start", (m) => {
  if (m.input && typeof m.input === "object") inputs.set(m.run, m.input);
  const pick = $("compose-run");
  if (!pick.querySelector(`option[value="${m.run}"]`)) pick.append(el("option", { value: String(m.run), text: `run ${m.run}${m.composed ? " (composed)" : ""}` }));
});

on("verdict", (m) => {
  $("compose-verdict").replaceChildren(el("h3", { text: `run ${m.run}: what verify says` }), el("pre", { class: "json verdict-lines", text: m.lines.join("\n") }));
});

function replayBox() {
  const file = el("input", { type: "file", id: "import-file", "aria-label": "A capture to import (.sse, .ndjson, .json, protobuf, thread.json)" });
  const view = el("div", { id: "import-view", class: "import-view" });
  file.addEventListener("change", async () => {
    const chosen = file.files[0];
    if (!chosen) return;
    view.replaceChildren(el("p", { class: "muted", text: `reading ${chosen.name}…` }));
    const bytes = new Uint8Array(await chosen.arrayBuffer());
    let binary = "";
    for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
    try {
      showImport(await api("import", { name: chosen.name, data: btoa(binary) }));
    } catch (err) {
      view.replaceChildren(el("p", { class: "error", role: "alert", text: err.message }));
    }
  });

  const pick = el("select", { id: "compose-run", "aria-label": "The run whose input to start from" }, el("option", { value: "", text: "(choose a run)" }));
  const editor = el("textarea", { id: "compose-input", rows: 12, "aria-label": "The RunAgentInput to send (JSON)" });
  pick.addEventListener("change", () => {
    const input = inputs.get(Number(pick.value));
    if (input) editor.value = json(input);
  });
  const problems = el("div", { id: "compose-errors", class: "edit-errors", role: "alert" });
  const read = () => {
    problems.replaceChildren();
    try {
      return JSON.parse(editor.value);
    } catch (err) {
      problems.append(el("p", { class: "error", text: `not JSON: ${err.message}` }));
      return undefined;
    }
  };
  const report = (err) => {
    problems.append(el("p", { class: "error", text: err.message }));
    const list = el("ul", { class: "errors" });
    for (const e of err.details || []) {
      list.append(el("li", {}, el("code", { class: "path", text: e.path === "" ? "(input)" : e.path }), " ", e.rule ? ruleLink(e.rule) : "", " ", el("span", { text: e.message })));
    }
    problems.append(list);
  };
  const check = el("button", { type: "button", id: "compose-check", class: "ghost", text: "Check",
    onclick: async () => {
      const input = read();
      if (input === undefined) return;
      try {
        await api("compose", { input, check: true });
        problems.append(el("p", { class: "ok", text: "A valid RunAgentInput." }));
      } catch (err) {
        report(err);
      }
    } });
  const send = el("button", { type: "button", id: "compose-send", text: "Send this input",
    onclick: async () => {
      const input = read();
      if (input === undefined) return;
      // said before the post returns: the verdict may arrive before its answer does
      $("compose-verdict").replaceChildren(el("p", { class: "muted", text: "sent: the stream shows in the timeline…" }));
      try {
        await api("compose", { input });
      } catch (err) {
        $("compose-verdict").replaceChildren();
        report(err);
      }
    } });
  const close = el("button", { type: "button", class: "ghost", text: "Close", onclick: () => toggle($("replay-box"), $("replay-open")) });
  return el("section", { id: "replay-box", class: "overlay replay-box", hidden: true, "aria-label": "Replay and compose" },
    el("header", {}, el("h2", { text: "Replay and compose" }), close),
    el("h3", { text: "Import a capture (read-only)" }),
    el("p", { class: "muted", text: "A run's stream (.sse, NDJSON, a JSON array, the protobuf binding) or this inspector's thread.json: judged by the verifier agui-tools verify uses." }),
    file, view,
    el("h3", { text: "Compose a request" }),
    el("p", { class: "muted", text: "Start from an earlier run's input, edit it, check it against the RunAgentInput schema and send it as it is. The thread is not changed." }),
    pick, editor, el("div", { class: "buttons" }, check, send), problems, el("div", { id: "compose-verdict" }));
}

const MAX_ROWS = 2000; // an import's frame list shows this many; the verdict covers all

function showImport(data) {
  const view = $("import-view");
  view.replaceChildren(el("p", { class: "muted", text: `${data.name}: ${data.kind === "thread" ? `thread ${data.threadId || ""} — ${data.runs.length} run(s)` : "one capture"}` }));
  for (const run of data.runs) {
    const verdict = run.verdict || {};
    const marks = new Map(); // frame index → notes
    const mark = (index, kind, rule, message) => {
      if (typeof index !== "number") return;
      if (!marks.has(index)) marks.set(index, []);
      marks.get(index).push({ kind, rule, message });
    };
    if (verdict.error) mark(verdict.error.index, "violation", verdict.error.rule, verdict.error.message);
    for (const w of verdict.warnings || []) mark(w.index, "warning", w.rule, w.text || w.message);
    const rows = el("ol", { class: "timeline imported" });
    for (const frame of run.frames.slice(0, MAX_ROWS)) {
      const row = el("li", { class: "event", "data-index": frame.index, "data-type": frame.type },
        el("details", {}, el("summary", { text: `#${frame.index} ${frame.type}` }), el("pre", { class: "json", text: json(frame.event === null ? frame.raw : frame.event) })));
      for (const note of marks.get(frame.index) || []) {
        row.append(el("div", { class: `note ${note.kind}` }, el("span", { class: "note-kind", text: note.kind }), " ", note.rule ? ruleLink(note.rule) : "", " ", el("span", { text: note.message })));
      }
      rows.append(row);
    }
    const more = run.frames.length > MAX_ROWS ? el("p", { class: "muted", text: `… ${run.frames.length - MAX_ROWS} more frame(s) not listed` }) : null;
    view.append(el("section", { class: "imported-run", "data-run": run.run, "data-outcome": verdict.outcome },
      el("h4", { text: `run ${run.run}: ${verdict.outcome}` }),
      el("pre", { class: "json verdict-lines", "aria-label": `what verify says of run ${run.run}`, text: run.lines.join("\n") }),
      run.input ? el("details", {}, el("summary", { text: "its input" }), el("pre", { class: "json", text: json(run.input) })) : null,
      rows, more));
  }
}

export function setupSession() {
  toolbar();
}

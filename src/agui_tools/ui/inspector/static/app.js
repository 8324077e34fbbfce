// The AG-UI inspector page. No framework, no build step, no network beyond this server.
//
// One rule above all: everything the agent, a tool or the user produced is DATA.
// It reaches the DOM only through textContent / value / attribute setters — never
// innerHTML, insertAdjacentHTML or document.write — so "<script>" in a result shows
// as those characters. The Content-Security-Policy backs this up.
"use strict";

const config = JSON.parse(document.querySelector('meta[name="inspector-config"]').content);
const $ = (id) => document.getElementById(id);

const STATUS = {
  streaming: "streaming…",
  awaiting_consent: "awaiting consent",
  approved: "approved",
  executing: "running",
  done: "done",
  failed: "failed",
  declined: "declined",
  outcome_unknown: "outcome unknown",
};

// el("div", {class: "x", text: "y"}, child, …): the only way nodes are made.
function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function json(value) {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch (err) {
    return String(value);
  }
}

async function api(action, body) {
  const response = await fetch(`/api/${action}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Inspector-Token": config.token },
    body: JSON.stringify(body),
  });
  let data = {};
  try {
    data = await response.json();
  } catch (err) {
    data = { error: `HTTP ${response.status}` };
  }
  if (!response.ok) {
    const error = new Error(data.error || `HTTP ${response.status}`);
    error.details = data.errors || [];
    throw error;
  }
  return data;
}

// -- the chat ------------------------------------------------------------------------

const log = $("log");
const texts = new Map(); // messageId → text node holder
const cards = new Map(); // callId → card

function addToLog(node) {
  log.append(node);
  log.scrollTop = log.scrollHeight;
}

function showUser(text) {
  addToLog(el("div", { class: "bubble user" }, el("span", { class: "who", text: "you" }), el("p", { text })));
}

function showText(msg) {
  let holder = texts.get(msg.messageId);
  if (!holder) {
    const body = el("p", { class: "streamed" });
    const node = el("div", { class: `bubble ${msg.role === "reasoning" ? "reasoning" : "assistant"}`, "data-message-id": msg.messageId },
      el("span", { class: "who", text: msg.role }), body);
    holder = { body };
    texts.set(msg.messageId, holder);
    addToLog(node);
  }
  holder.body.textContent += msg.delta;
  log.scrollTop = log.scrollHeight;
}

function errorList(errors) {
  const list = el("ul", { class: "errors" });
  for (const e of errors || []) {
    list.append(el("li", {}, el("code", { class: "path", text: e.path === "" ? "(arguments)" : e.path }), " ", el("span", { text: e.message })));
  }
  return list;
}

function card(callId, name) {
  let c = cards.get(callId);
  if (c) return c;
  const title = el("h3", { class: "tool-name", text: name || "(unnamed tool)" });
  const status = el("span", { class: "badge", "data-status": "streaming", text: STATUS.streaming });
  const description = el("p", { class: "description muted" });
  const argsLabel = el("span", { class: "label", text: "arguments" });
  const args = el("pre", { class: "json args", "aria-label": `arguments of ${name}` });
  const errors = el("div", { class: "validation" });
  const actions = el("div", { class: "actions" });
  const result = el("div", { class: "result" });
  const node = el("article", { class: "card", "data-call-id": callId, "aria-label": `tool call ${name}` },
    el("header", {}, title, status), description, el("div", { class: "args-box" }, argsLabel, args), errors, actions, result);
  c = { node, title, status, description, args, argsLabel, errors, actions, result, name };
  cards.set(callId, c);
  addToLog(node);
  return c;
}

function setStatus(c, status, label) {
  c.status.dataset.status = status;
  c.status.textContent = label || STATUS[status] || status;
  c.node.dataset.status = status;
}

function showCall(msg) {
  const c = card(msg.callId, msg.name);
  if (msg.description) c.description.textContent = msg.description + (msg.sideEffects ? " — has side effects" : "");
  if (msg.agentSide) setStatus(c, "done", "answered by the agent");
  else setStatus(c, msg.status);
  if ("preview" in msg && msg.status === "streaming") {
    c.argsLabel.textContent = `arguments (streaming: first ${msg.previewChars} characters)`;
    c.args.textContent = msg.preview === null ? "" : json(msg.preview);
  }
  if ("arguments" in msg) {
    c.argsLabel.textContent = msg.edited ? "arguments (edited by you)" : "arguments";
    c.args.textContent = msg.arguments === null ? msg.text : json(msg.arguments);
    c.errors.replaceChildren();
    if (msg.errors && msg.errors.length) {
      c.errors.append(el("p", { class: "error", text: "The arguments do not match the tool's schema:" }), errorList(msg.errors));
    } else if (msg.advertised === false) {
      c.errors.append(el("p", { class: "error", text: "This tool was never advertised to the agent." }));
    }
  }
  if (msg.answer) {
    c.actions.replaceChildren();
    c.result.replaceChildren(
      el("span", { class: "label", text: msg.answer.outcome === "executed" ? "result" : msg.answer.outcome }),
      el("pre", { class: "json result-text", text: json(msg.answer.content) }),
    );
    if (msg.answer.error) c.result.append(el("p", { class: "error", text: `error: ${msg.answer.error}` }));
  }
}

function showConsent(msg) {
  const c = card(msg.callId, msg.name);
  setStatus(c, "awaiting_consent");
  const reason = el("input", { type: "text", class: "reason", "aria-label": `Reason for declining ${msg.name}`, placeholder: "reason (optional)" });
  const editor = el("textarea", { class: "editor", rows: 4, "aria-label": `Edited arguments for ${msg.name} (JSON)` });
  editor.value = json(msg.arguments || {});
  const problems = el("div", { class: "edit-errors", role: "alert" });
  const editBox = el("div", { class: "edit-box", hidden: true }, editor, problems);
  const decide = async (decision, extra) => {
    problems.replaceChildren();
    try {
      await api("consent", { callId: msg.callId, decision, ...extra });
    } catch (err) {
      problems.append(el("p", { class: "error", text: err.message }), errorList(err.details));
      editBox.hidden = false;
    }
  };
  const approve = el("button", { type: "button", class: "approve", "aria-label": `Approve ${msg.name}`, text: "Approve",
    onclick: () => decide("approve") });
  const decline = el("button", { type: "button", class: "decline", "aria-label": `Decline ${msg.name}`, text: "Decline",
    onclick: () => decide("decline", { reason: reason.value }) });
  const save = el("button", { type: "button", class: "save", "aria-label": `Approve ${msg.name} with the edited arguments`, text: "Approve edited", hidden: true,
    onclick: () => {
      let parsed;
      try {
        parsed = JSON.parse(editor.value);
      } catch (err) {
        problems.replaceChildren(el("p", { class: "error", text: `not JSON: ${err.message}` }));
        return;
      }
      decide("edit", { arguments: parsed });
    } });
  const edit = el("button", { type: "button", class: "edit", "aria-label": `Edit the arguments of ${msg.name}`, "aria-expanded": "false", text: "Edit arguments",
    onclick: () => {
      editBox.hidden = !editBox.hidden;
      save.hidden = editBox.hidden;
      edit.setAttribute("aria-expanded", String(!editBox.hidden));
      if (!editBox.hidden) editor.focus();
    } });
  const ask = el("p", { class: "ask", tabindex: "-1", text: `The agent wants to run ${msg.name}${msg.sideEffects ? ", which has side effects" : ""}. Your decision:` });
  c.actions.replaceChildren(ask,
    el("div", { class: "buttons", role: "group", "aria-label": `Your decision on ${msg.name}` }, approve, decline, reason, edit, save), editBox);
  announce(`${msg.name} awaits your consent`);
  // a keyboard user lands on the question, one Tab from its buttons — never on Approve
  // itself, where a second press of Enter would approve a call nobody read
  const active = document.activeElement;
  if (!active || active === document.body || !document.contains(active)) ask.focus();
}

function consentDone(msg) {
  const c = cards.get(msg.callId);
  if (!c) return;
  c.actions.replaceChildren(el("p", { class: "muted", text: `You chose: ${msg.action}${msg.reason ? ` (${msg.reason})` : ""}` }));
}

// -- mock tools: a form generated from a JSON Schema -------------------------------------

function schemaForm(schema, label) {
  const type = schema && schema.type;
  const described = (node) => el("label", { class: "field" }, el("span", { text: label }), node);
  if (schema && Array.isArray(schema.enum)) {
    const select = el("select", {}, el("option", { value: "", text: "(none)" }));
    schema.enum.forEach((option, i) => select.append(el("option", { value: String(i), text: typeof option === "string" ? option : json(option) })));
    return { node: described(select), read: () => (select.value === "" ? undefined : schema.enum[Number(select.value)]) };
  }
  if (type === "string") {
    const input = el("input", { type: "text" });
    return { node: described(input), read: () => input.value };
  }
  if (type === "integer" || type === "number") {
    const input = el("input", { type: "number", step: type === "integer" ? "1" : "any" });
    return { node: described(input), read: () => (input.value === "" ? undefined : Number(input.value)) };
  }
  if (type === "boolean") {
    const input = el("input", { type: "checkbox" });
    return { node: el("label", { class: "field inline" }, input, el("span", { text: label })), read: () => input.checked };
  }
  if (type === "object" && schema.properties && Object.keys(schema.properties).length) {
    const fields = Object.entries(schema.properties).map(([name, sub]) => [name, schemaForm(sub, name + ((schema.required || []).includes(name) ? " *" : ""))]);
    const set = el("fieldset", { class: "object" }, el("legend", { text: label }), ...fields.map(([, f]) => f.node));
    return {
      node: set,
      read: () => {
        const out = {};
        for (const [name, f] of fields) {
          const value = f.read();
          if (value !== undefined) out[name] = value;
        }
        return out;
      },
    };
  }
  const area = el("textarea", { rows: 3 });
  area.value = type === "array" ? "[]" : type === "object" ? "{}" : "";
  return { node: described(area), read: () => JSON.parse(area.value) };
}

function showAnswerForm(msg) {
  const c = card(msg.callId, msg.name);
  setStatus(c, "executing");
  const form = schemaForm(msg.schema, `your answer for ${msg.name}`);
  const problems = el("div", { class: "edit-errors", role: "alert" });
  const reason = el("input", { type: "text", "aria-label": `Why ${msg.name} failed`, placeholder: "error message" });
  const send = async (body) => {
    problems.replaceChildren();
    try {
      await api("answer", { callId: msg.callId, ...body });
    } catch (err) {
      problems.append(el("p", { class: "error", text: err.message }), errorList(err.details));
    }
  };
  const submit = el("button", { type: "button", class: "answer", text: "Send answer", "aria-label": `Send the answer for ${msg.name}`,
    onclick: () => {
      let value;
      try {
        value = form.read();
      } catch (err) {
        problems.replaceChildren(el("p", { class: "error", text: `not JSON: ${err.message}` }));
        return;
      }
      send({ value });
    } });
  const fail = el("button", { type: "button", class: "fail", text: "Fail the call", "aria-label": `Answer ${msg.name} as failed`,
    onclick: () => send({ error: reason.value || "failed by the user" }) });
  c.actions.replaceChildren(el("p", { class: "ask", text: `Answer this call to ${msg.name} yourself:` }), form.node,
    el("div", { class: "buttons" }, submit, fail, reason), problems);
  announce(`${msg.name} waits for your answer`);
}

// -- the timeline -----------------------------------------------------------------------------

const timeline = $("timeline");
const eventRows = new Map(); // `${run}:${index}` → row

function expandable(summaryText, value, extraClass) {
  return el("details", { class: extraClass || "" }, el("summary", { text: summaryText }), el("pre", { class: "json", text: json(value) }));
}

function ruleLink(rule) {
  return el("a", { href: `#rule-${rule}`, class: "rule", "data-rule": rule, text: rule, onclick: (ev) => {
    ev.preventDefault();
    showRule(rule);
  } });
}

async function showRule(rule) {
  const box = $("rule-box");
  $("rule-title").textContent = rule;
  $("rule-text").textContent = "…";
  $("rule-page").textContent = "";
  box.hidden = false;
  try {
    const response = await fetch(`/api/rules/${encodeURIComponent(rule)}`, { headers: { "X-Inspector-Token": config.token } });
    const data = await response.json();
    $("rule-text").textContent = data.text || data.error;
    $("rule-page").textContent = response.ok ? "from spec/RULES.md" : "";
  } catch (err) {
    $("rule-text").textContent = `could not load the rule (${err.message})`;
  }
  $("rule-close").focus();
}

function timelineRow(node) {
  timeline.append(node);
  const panel = $("panel-timeline");
  panel.scrollTop = panel.scrollHeight;
}

function showRunStart(msg) {
  timelineRow(el("li", { class: "run-start" }, expandable(`run ${msg.run} — input sent to ${msg.url}`, msg.input)));
  $("last-input").textContent = json(msg.input);
}

function showEvent(msg) {
  const row = el("li", { class: "event", "data-index": msg.index, "data-type": msg.type },
    expandable(`#${msg.index} ${msg.type}`, msg.event === null ? msg.raw : msg.event));
  eventRows.set(`${msg.run}:${msg.index}`, row);
  timelineRow(row);
  if (msg.type === "STATE_DELTA" || msg.type === "STATE_SNAPSHOT") {
    const payload = msg.type === "STATE_DELTA" ? msg.event.delta : msg.event.snapshot;
    $("deltas").append(el("li", {}, expandable(`run ${msg.run} #${msg.index} ${msg.type}`, payload)));
  }
}

function showNote(msg, kind) {
  const note = el("div", { class: `note ${kind}`, role: kind === "violation" ? "alert" : null },
    el("span", { class: "note-kind", text: kind === "violation" ? "violation" : "warning" }), " ", ruleLink(msg.rule), " ",
    el("span", { text: msg.message }));
  const row = eventRows.get(`${msg.run}:${msg.index}`);
  if (row) row.append(note);
  else timelineRow(el("li", { class: "event" }, note));
}

function showRunEnd(msg) {
  const pending = msg.pending && msg.pending.length ? `; pending calls: ${msg.pending.join(", ")}` : "";
  const error = msg.error ? ` — ${json(msg.error.message || msg.error)}` : "";
  timelineRow(el("li", { class: `run-end status-${msg.status}` }, el("span", { text: `run ${msg.run} ended: ${msg.status}${pending}${error}` })));
  refreshExports();
}

// -- views ------------------------------------------------------------------------------------

let runs = 0;
function refreshExports() {
  runs = timeline.querySelectorAll("li.run-start").length;
  const list = $("exports");
  // the token travels in the page's cookie, never in a URL (history, logs, Referer)
  const link = (what, label) => el("li", {}, el("a", { href: `/api/export/${what}`, download: what, text: label }));
  list.replaceChildren(link("thread.json", "thread.json — the thread, its runs and inputs"));
  for (let n = 1; n <= runs; n++) {
    list.append(link(`run-${n}.sse`, `run-${n}.sse — run ${n}'s stream as received`), link(`run-${n}.input.json`, `run-${n}.input.json — its RunAgentInput`));
  }
}

function showThread(msg) {
  $("state").textContent = json(msg.state);
  $("messages").textContent = json(msg.messages);
}

function showTools(msg) {
  const list = $("tools");
  list.replaceChildren();
  for (const tool of msg.tools) {
    list.append(el("li", {}, el("strong", { text: tool.name }), el("span", { class: "muted", text: ` — ${tool.description}` }),
      tool.sideEffects ? el("span", { class: "tag", text: "side effects" }) : null, tool.mock ? el("span", { class: "tag", text: "mock" }) : null,
      expandable("parameters", tool.parameters || {})));
  }
}

function announce(text) {
  $("status").textContent = text;
}

let busy = false;
function setBusy(value) {
  busy = value;
  $("send").disabled = value;
  document.body.dataset.busy = String(value);
  announce(value ? "the agent is working…" : "idle");
}

function showFailure(msg) {
  addToLog(el("div", { class: "bubble failure", role: "alert" },
    el("span", { class: "who", text: "run failed" }), msg.rule ? ruleLink(msg.rule) : null, el("p", { text: msg.message })));
}

// -- the message stream -----------------------------------------------------------------------

const handlers = {
  user: (m) => showUser(m.text),
  text: showText,
  call: showCall,
  consent: showConsent,
  "consent-done": consentDone,
  "answer-form": showAnswerForm,
  "answer-done": consentDone,
  "run-start": showRunStart,
  event: showEvent,
  warning: (m) => showNote(m, "warning"),
  violation: (m) => showNote(m, "violation"),
  "run-end": showRunEnd,
  thread: showThread,
  tools: showTools,
  busy: (m) => setBusy(m.busy),
  failed: showFailure,
};

function connect() {
  const source = new EventSource("/api/events"); // authenticated by the page's cookie
  source.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    const handler = handlers[msg.kind];
    if (handler) handler(msg);
    document.body.dataset.seq = String(msg.seq);
  };
  source.onerror = () => announce(busy ? "reconnecting…" : "disconnected — retrying");
}

// -- the controls ----------------------------------------------------------------------------

function setupTabs() {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  const select = (tab) => {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute("aria-selected", String(on));
      t.tabIndex = on ? 0 : -1;
      $(t.getAttribute("aria-controls")).hidden = !on;
    }
    tab.focus();
  };
  tabs.forEach((tab, i) => {
    tab.addEventListener("click", () => select(tab));
    tab.addEventListener("keydown", (ev) => {
      if (ev.key === "ArrowRight") select(tabs[(i + 1) % tabs.length]);
      if (ev.key === "ArrowLeft") select(tabs[(i - 1 + tabs.length) % tabs.length]);
    });
  });
}

function setupPrompt() {
  const prompt = $("prompt");
  prompt.value = config.prompt || "";
  const send = async () => {
    if (busy || !prompt.value.trim()) return;
    const text = prompt.value;
    try {
      await api("prompt", { text });
      prompt.value = "";
    } catch (err) {
      showFailure({ message: err.message });
    }
  };
  $("prompt-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    send();
  });
  prompt.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      send();
    }
  });
}

function setupMockForm() {
  $("mock-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const error = $("mock-error");
    error.textContent = "";
    let parameters, result;
    try {
      parameters = JSON.parse($("mock-parameters").value);
      result = JSON.parse($("mock-result").value);
    } catch (err) {
      error.textContent = `not JSON: ${err.message}`;
      return;
    }
    try {
      await api("tools", { name: $("mock-name").value, description: $("mock-description").value, parameters, result,
        sideEffects: $("mock-side-effects").checked });
      $("mock-name").value = "";
      $("mock-description").value = "";
    } catch (err) {
      error.textContent = err.message;
    }
  });
}

function setupViews() {
  $("build-input").addEventListener("click", async () => {
    try {
      const data = await api("next-input", { prompt: $("prompt").value });
      $("next-input").textContent = data.input ? json(data.input) : data.note;
    } catch (err) {
      $("next-input").textContent = err.message;
    }
  });
  $("rule-close").addEventListener("click", () => {
    $("rule-box").hidden = true;
  });
  $("theme").addEventListener("click", () => {
    const root = document.documentElement;
    const dark = root.dataset.theme ? root.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
    root.dataset.theme = dark ? "light" : "dark";
  });
}

// the hook session.js (sessions, interrupts, replay) plugs into: more handlers per kind
window.inspector = {
  el, json, api, announce, card, setStatus, addToLog, ruleLink, errorList, cards, config, $,
  on(kind, fn) {
    const before = handlers[kind];
    handlers[kind] = before ? (m) => { before(m); fn(m); } : fn;
  },
};

$("agent").textContent = config.title;
setupTabs();
setupPrompt();
setupMockForm();
setupViews();
refreshExports();
connect();

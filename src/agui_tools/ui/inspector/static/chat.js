// The chat: the user's prompts, the agent's text (safe Markdown or plain), tool-call
// cards with their consent questions and mock-tool forms. Updated in place; the log
// sticks to the bottom once per frame, never once per message.

import { $, el, json, api, announce, on, onRender, ruleLink, shownValue } from "./core.js";
import { renderMarkdown, stableEnd } from "./markdown.js";

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

const log = $("log");
const texts = new Map(); // messageId → {body, text, shown, closed, …}
const dirtyTexts = new Set();
export const cards = new Map(); // callId → card
let stick = true;
let grew = false;
let plain = false;
const LIVE_MARKDOWN = 8192; // an open block longer than this shows as plain text until it closes
const CHUNK_BLOCKS = 24;

// Stick to the bottom unless the user scrolled away: decided on the user's scrolls (not
// re-measured each frame — a chunk laid out late must not unstick the log), applied
// once per frame after the batch (one layout per frame, not one per message).
let ourTop = -1;
log.addEventListener("scroll", () => {
  if (Math.abs(log.scrollTop - ourTop) <= 1) return; // our own scroll
  stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 40;
}, { passive: true });

onRender(() => {
  for (const holder of dirtyTexts) paint(holder);
  dirtyTexts.clear();
  if (grew && stick) {
    log.scrollTop = log.scrollHeight;
    ourTop = log.scrollTop;
  }
  grew = false;
});

export function addToLog(node) {
  log.append(node);
  grew = true;
}

function showUser(msg) {
  addToLog(el("div", { class: "bubble user" }, el("span", { class: "who", text: "you" }), el("p", { text: msg.text })));
}

function textHolder(messageId, role) {
  let holder = texts.get(messageId);
  if (!holder) {
    const body = el("div", { class: "streamed" });
    const node = el("div", { class: `bubble ${role === "reasoning" ? "reasoning" : "assistant"}`, "data-message-id": messageId },
      el("span", { class: "who", text: role }), body);
    holder = { node, body, chunks: [], text: "", stable: 0, closedNodes: null, open: null, plainNode: null, closed: false };
    texts.set(messageId, holder);
    addToLog(node);
  }
  return holder;
}

function showText(msg) {
  const holder = textHolder(msg.messageId, msg.role);
  holder.chunks.push(msg.delta);
  dirtyTexts.add(holder);
}

function closeText(messageId) {
  const holder = texts.get(messageId);
  if (!holder) return;
  holder.closed = true;
  dirtyTexts.add(holder);
}

// Paint what arrived since the last frame. Plain: the new characters appended as one
// text node. Markdown: the blocks before the last blank line are final and rendered
// once; only the open block is re-rendered (so the work is linear in the text).
function paint(holder) {
  if (holder.chunks.length) {
    const added = holder.chunks.join("");
    holder.chunks = [];
    holder.text += added;
    if (holder.plainNode) holder.plainNode.append(added);
  }
  grew = true;
  if (plain) {
    if (!holder.plainNode) {
      holder.plainNode = el("p", { class: "plain", text: holder.text });
      holder.body.replaceChildren(holder.plainNode);
      holder.closedNodes = null;
    }
    return;
  }
  if (holder.plainNode || !holder.closedNodes) {
    holder.plainNode = null;
    holder.closedNodes = el("div", { class: "md" });
    holder.open = el("div", { class: "md open" });
    holder.stable = 0;
    holder.chunk = null;
    holder.body.replaceChildren(holder.closedNodes, holder.open);
  }
  const end = holder.closed ? holder.text.length : stableEnd(holder.text, holder.stable);
  if (end > holder.stable) {
    // final blocks go into chunks the browser may skip laying out while off-screen
    // (content-visibility), so a long message costs layout for what is in view
    if (!holder.chunk || holder.chunk.childElementCount >= CHUNK_BLOCKS) {
      holder.chunk = el("div", { class: "md-chunk" });
      holder.closedNodes.append(holder.chunk);
    }
    holder.chunk.append(renderMarkdown(holder.text.slice(holder.stable, end)));
    holder.stable = end;
  }
  const rest = holder.text.slice(holder.stable);
  if (rest.length > LIVE_MARKDOWN) holder.open.replaceChildren(el("p", { class: "plain", text: rest }));
  else holder.open.replaceChildren(renderMarkdown(rest));
}

/** Forget the messages and cards whose nodes left the log (the proxy's read-only page
 * keeps its recent traffic only): a later delta of one starts a new bubble. */
export function forgetDetached() {
  for (const [key, c] of cards) if (!c.node.isConnected) cards.delete(key);
  for (const [id, holder] of texts) {
    if (!holder.node.isConnected) {
      texts.delete(id);
      dirtyTexts.delete(holder);
    }
  }
}

export function setPlain(value) {
  plain = value;
  for (const holder of texts.values()) {
    if (!plain) holder.plainNode = null;
    dirtyTexts.add(holder);
  }
}

export function errorList(errors, root = "(arguments)") {
  const list = el("ul", { class: "errors" });
  for (const e of errors || []) {
    list.append(el("li", {}, el("code", { class: "path", text: e.path === "" ? root : e.path }), " ", el("span", { text: e.message })));
  }
  return list;
}

// A card is keyed by its call id — and by its thread when the message names one (the
// proxy's inspector shows several threads, whose call ids may be the same).
export function card(callId, name, threadId) {
  const key = threadId ? `${threadId}\u0000${callId}` : callId;
  let c = cards.get(key);
  if (c) return c;
  const title = el("h3", { class: "tool-name", text: name || "(unnamed tool)" });
  const status = el("span", { class: "badge", "data-status": "streaming", text: STATUS.streaming });
  const description = el("p", { class: "description muted" });
  const argsLabel = el("span", { class: "label", text: "arguments" });
  const args = el("pre", { class: "json args", "aria-label": `arguments of ${name}` });
  const errors = el("div", { class: "validation" });
  const actions = el("div", { class: "actions" });
  const result = el("div", { class: "result" });
  const node = el("article", { class: "card", "data-call-id": callId, "data-thread-id": threadId || null, "aria-label": `tool call ${name}` },
    el("header", {}, title, status), description, el("div", { class: "args-box" }, argsLabel, args), errors, actions, result);
  c = { node, title, status, description, args, argsLabel, errors, actions, result, name };
  cards.set(key, c);
  addToLog(node);
  return c;
}

export function setStatus(c, status, label) {
  c.status.dataset.status = status;
  c.status.textContent = label || STATUS[status] || status;
  c.node.dataset.status = status;
}

function showCall(msg) {
  const c = card(msg.callId, msg.name, msg.threadId);
  if (msg.description) c.description.textContent = msg.description + (msg.sideEffects ? " — has side effects" : "");
  if (msg.agentSide) setStatus(c, "done", "answered by the agent");
  else setStatus(c, msg.status);
  if (msg.status === "streaming" && ("preview" in msg || "previewText" in msg)) {
    if ("previewText" in msg) {
      // a long argument: the back end sends a bounded head of it, not the whole preview
      c.argsLabel.textContent = `arguments (streaming: ${msg.previewChars} characters; the first ${msg.previewText.length} shown)`;
      c.args.textContent = msg.previewText + "…";
    } else {
      c.argsLabel.textContent = `arguments (streaming: first ${msg.previewChars} characters)`;
      c.args.textContent = msg.preview === null ? "" : json(msg.preview);
    }
  }
  if ("arguments" in msg || "argumentsHead" in msg) {
    c.argsLabel.textContent = msg.edited ? "arguments (edited by you)" : "arguments";
    c.args.textContent = msg.arguments === null ? shownValue(msg, "text") : shownValue(msg, "arguments");
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
      el("pre", { class: "json result-text", text: shownValue(msg.answer, "content") }),
    );
    if (msg.answer.error) c.result.append(el("p", { class: "error", text: `error: ${msg.answer.error}` }));
  }
}

// A question takes the focus — unless the user is typing somewhere else (a reason, an
// edit, another answer), which a new question must not interrupt. The prompt box does
// not count: after Ctrl+Enter the next thing to do is answer.
function takeFocus(node) {
  const active = document.activeElement;
  const typing = active && active !== $("prompt") && active.matches && active.matches("input, textarea, select, [contenteditable]") && document.contains(active);
  if (!typing) node.focus();
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
  // the keyboard lands on the question, one Tab from its buttons — never on Approve
  // itself, where a second press of Enter would approve a call nobody read
  takeFocus(ask);
  grew = true;
}

function consentDone(msg) {
  const c = cards.get(msg.callId);
  if (!c) return;
  c.actions.replaceChildren(el("p", { class: "muted", text: `You chose: ${msg.action}${msg.reason ? ` (${msg.reason})` : ""}` }));
}

// -- mock tools: a form generated from a JSON Schema -------------------------------------

let hints = 0;

// a field's schema `description` is the agent's word on what goes there: shown under the
// field and tied to its control (aria-describedby), so a screen reader says it too
function withHint(schema, field, control) {
  const text = schema && typeof schema.description === "string" ? schema.description.trim() : "";
  if (!text) return field;
  const id = `field-hint-${++hints}`;
  control.setAttribute("aria-describedby", id);
  return el("div", { class: "described" }, field, el("p", { class: "field-hint muted", id, text }));
}

export function schemaForm(schema, label) {
  const type = schema && schema.type;
  const described = (node) => withHint(schema, el("label", { class: "field" }, el("span", { text: label }), node), node);
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
    return { node: withHint(schema, el("label", { class: "field inline" }, input, el("span", { text: label })), input), read: () => input.checked };
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
  grew = true;
}

export function showFailure(msg) {
  addToLog(el("div", { class: "bubble failure", role: "alert" },
    el("span", { class: "who", text: "run failed" }), msg.rule ? ruleLink(msg.rule) : null, el("p", { text: msg.message })));
}

const CLOSES_TEXT = new Set(["TEXT_MESSAGE_END", "REASONING_MESSAGE_END"]);

on("user", showUser);
on("text", showText);
on("event", (m) => {
  if (CLOSES_TEXT.has(m.type) && m.event && typeof m.event.messageId === "string") closeText(m.event.messageId);
});
on("run-end", () => {
  for (const holder of texts.values()) if (!holder.closed) closeText(holder.node.dataset.messageId);
});
on("call", showCall);
on("consent", showConsent);
on("consent-done", consentDone);
on("answer-form", showAnswerForm);
on("answer-done", consentDone);
on("failed", showFailure);

export function setupChat() {
  const toggle = $("plain-text");
  toggle.addEventListener("click", () => {
    const on = toggle.getAttribute("aria-pressed") !== "true";
    toggle.setAttribute("aria-pressed", String(on));
    setPlain(on);
    for (const holder of texts.values()) paint(holder);
    dirtyTexts.clear();
  });
}

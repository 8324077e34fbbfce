// The inspector page's core: node building, the server API, and the one place messages
// from the back end are applied — a table of handlers keyed by message kind, run in
// batches once per animation frame, followed by each view's renderer.
//
// One rule above all: everything the agent, a tool or the user produced is DATA.
// It reaches the DOM only through textContent / value / attribute setters — never
// an HTML-parsing sink — so "<script>" in a result shows as those characters. The
// Content-Security-Policy backs this up.

export const config = JSON.parse(document.querySelector('meta[name="inspector-config"]').content);
export const $ = (id) => document.getElementById(id);

// el("div", {class: "x", text: "y"}, child, …): the only way nodes are made.
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child !== null && child !== undefined && child !== false) node.append(child);
  return node;
}

export function json(value) {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch (err) {
    return String(value);
  }
}

/** A value the back end may have cut (issue 28): ``msg[name]``, or — when it was over
 * its limit — the head it sent with the size, as text. */
export function shownValue(msg, name) {
  if (name in msg) return json(msg[name]);
  if (`${name}Head` in msg) {
    const chars = Number(msg[`${name}Chars`]).toLocaleString("en");
    return `${msg[`${name}Head`]}… (${chars} characters in all: the export has the whole)`;
  }
  return "";
}

export async function api(action, body) {
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

export function announce(text) {
  $("status").textContent = text;
}

// -- rules ------------------------------------------------------------------------------------

export function ruleLink(rule, focusable = true) {
  return el("a", { href: `#rule-${rule}`, class: "rule", "data-rule": rule, text: rule, tabindex: focusable ? null : "-1",
    onclick: (ev) => {
      ev.preventDefault();
      showRule(rule);
    } });
}

export async function showRule(rule, focus = true) {
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
  if (focus) $("rule-close").focus();
}

// -- the message table and the frame loop ----------------------------------------------------
//
// handlers: message kind → the functions that apply it, in registration order. A view
// registers with on(kind, fn); a new kind of message plugs in the same way. Handlers
// update models (and cheap DOM in place); anything costly is left to a renderer,
// which runs once per frame after the batch (onRender), so 1,000 messages arriving
// within a frame cost one layout, not 1,000.

export const handlers = new Map();
const renderers = [];
const preparers = [];

export function on(kind, fn) {
  if (!handlers.has(kind)) handlers.set(kind, []);
  handlers.get(kind).push(fn);
}

/** fn() runs once per frame after the batch was applied (render from the models). */
export function onRender(fn) {
  renderers.push(fn);
}

/** fn() runs once per frame before the batch (read layout while it is still clean). */
export function onPrepare(fn) {
  preparers.push(fn);
}

const queue = [];
let head = 0;
let scheduled = false;
const BUDGET_MS = 8; // a batch yields to the browser after this long; the rest waits a frame

export function enqueue(msg) {
  queue.push(msg);
  schedule();
}

export function schedule() {
  if (scheduled) return;
  scheduled = true;
  // rAF does not fire in a hidden tab: a timer keeps the models current there
  if (document.hidden) setTimeout(flush, 100);
  else requestAnimationFrame(flush);
}

function apply(msg) {
  const fns = handlers.get(msg.kind);
  if (!fns) return;
  for (const fn of fns) {
    try {
      fn(msg);
    } catch (err) {
      reportError(err); // one bad message must not stop the rest of the batch
    }
  }
}

let lastSeq = null;
function flush() {
  scheduled = false;
  for (const fn of preparers) fn();
  const started = performance.now();
  while (head < queue.length) {
    const msg = queue[head++];
    apply(msg);
    if (typeof msg.seq === "number") lastSeq = msg.seq;
    if ((head & 31) === 0 && performance.now() - started > BUDGET_MS) break;
  }
  if (head >= queue.length) {
    queue.length = 0;
    head = 0;
  } else {
    schedule();
  }
  for (const fn of renderers) {
    try {
      fn();
    } catch (err) {
      reportError(err);
    }
  }
  if (lastSeq !== null) document.body.dataset.seq = String(lastSeq);
  document.body.dataset.pending = String(queue.length - head);
}

/** Run the renderers now (a user action that must show at once, e.g. a filter change). */
export function renderNow() {
  for (const fn of renderers) fn();
}

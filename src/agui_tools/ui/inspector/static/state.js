// State: the thread's current state, every STATE_SNAPSHOT / STATE_DELTA with the diff it
// made, and stepping back and forth through the state history. Each step's state is
// computed here from the payloads (RFC 6902 for the deltas), from a checkpoint kept
// every CHECKPOINT steps, so the history costs memory for its payloads, not one copy
// of the state per step.

import { $, el, json, on, onRender, shownValue } from "./core.js";

const CHECKPOINT = 32;
const MAX_LISTED = 500;
const steps = []; // {run, index, type: "input" | "STATE_SNAPSHOT" | "STATE_DELTA", payload}
const checkpoints = new Map(); // step → the state after it (cloned)
let current; // the state after the last step, kept up to date as steps arrive
let thread = null; // the state the back end reported after the last turn
let at = -1; // the step shown; -1: follow the latest
let dirty = true;

// -- JSON Pointer and Patch (RFC 6901, 6902) -------------------------------------------------

function tokens(pointer) {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new Error(`not a JSON Pointer: ${pointer}`);
  return pointer.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function parentOf(doc, path) {
  const ts = tokens(path);
  const last = ts.pop();
  let node = doc;
  for (const t of ts) {
    if (node === null || typeof node !== "object" || !(t in node)) throw new Error(`no ${path}`);
    node = node[t];
  }
  return [node, last];
}

function get(doc, path) {
  let node = doc;
  for (const t of tokens(path)) {
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, t)) throw new Error(`no ${path}`);
    node = node[t];
  }
  return node;
}

function add(doc, path, value) {
  if (path === "") return value;
  const [parent, key] = parentOf(doc, path);
  if (Array.isArray(parent)) parent.splice(key === "-" ? parent.length : Number(key), 0, value);
  else parent[key] = value;
  return doc;
}

function remove(doc, path) {
  const [parent, key] = parentOf(doc, path);
  if (Array.isArray(parent)) parent.splice(Number(key), 1);
  else delete parent[key];
  return doc;
}

export function applyPatch(doc, ops) {
  for (const op of ops) {
    switch (op.op) {
      case "add": doc = add(doc, op.path, structuredClone(op.value)); break;
      case "remove": doc = remove(doc, op.path); break;
      case "replace": doc = op.path === "" ? structuredClone(op.value) : add(remove(doc, op.path), op.path, structuredClone(op.value)); break;
      case "move": { const v = get(doc, op.from); doc = add(remove(doc, op.from), op.path, v); break; }
      case "copy": doc = add(doc, op.path, structuredClone(get(doc, op.from))); break;
      case "test": break; // the back end's reducer already checked it
      default: throw new Error(`unknown op ${op.op}`);
    }
  }
  return doc;
}

/** The difference from ``a`` to ``b`` as JSON Patch operations (for a snapshot's diff). */
export function diff(a, b, path = "", out = []) {
  if (out.length > 200) return out;
  const bothObjects = a && b && typeof a === "object" && typeof b === "object" && Array.isArray(a) === Array.isArray(b);
  if (!bothObjects) {
    if (JSON.stringify(a) !== JSON.stringify(b)) out.push(a === undefined ? { op: "add", path, value: b } : b === undefined ? { op: "remove", path } : { op: "replace", path, value: b });
    return out;
  }
  const esc = (k) => String(k).replace(/~/g, "~0").replace(/\//g, "~1");
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) diff(Object.hasOwn(a, k) ? a[k] : undefined, Object.hasOwn(b, k) ? b[k] : undefined, `${path}/${esc(k)}`, out);
  return out;
}

// -- the history ------------------------------------------------------------------------------

function stateAfter(n) {
  if (n < 0) return undefined;
  let base = Math.floor(n / CHECKPOINT) * CHECKPOINT;
  while (base >= 0 && !checkpoints.has(base)) base -= CHECKPOINT;
  let doc = base >= 0 ? structuredClone(checkpoints.get(base)) : undefined;
  for (let i = Math.max(0, base + 1); i <= n; i++) doc = step(doc, steps[i]);
  return doc;
}

function step(doc, s) {
  if (s.type === "STATE_DELTA") {
    try {
      return applyPatch(doc === undefined ? {} : doc, Array.isArray(s.payload) ? s.payload : []);
    } catch (err) {
      s.problem = `could not apply: ${err.message}`;
      return doc;
    }
  }
  return structuredClone(s.payload);
}

function push(s) {
  steps.push(s);
  const n = steps.length - 1;
  current = step(current, s);
  if (n % CHECKPOINT === 0) checkpoints.set(n, structuredClone(current));
  dirty = true;
}

on("run-start", (m) => {
  const state = m.input && typeof m.input === "object" ? m.input.state : undefined;
  if (state !== undefined && JSON.stringify(state) !== JSON.stringify(current)) push({ run: m.run, index: null, type: "input", payload: state });
});
on("event", (m) => {
  if (m.type === "STATE_DELTA" && m.event) push({ run: m.run, index: m.index, type: m.type, payload: m.event.delta });
  else if (m.type === "STATE_SNAPSHOT" && m.event) push({ run: m.run, index: m.index, type: m.type, payload: m.event.snapshot });
});
on("thread", (m) => {
  // a state over the back end's limit comes as a head: the page's own history has it whole
  thread = "state" in m ? m.state : null;
  $("messages").textContent = shownValue(m, "messages");
  dirty = true;
});

function label(s, n) {
  if (s.type === "input") return `step ${n + 1}: run ${s.run}'s input state`;
  return `step ${n + 1}: run ${s.run} #${s.index} ${s.type}`;
}

function opLine(op) {
  const value = "value" in op ? ` ${JSON.stringify(op.value)}` : "";
  const from = "from" in op ? ` from ${op.from}` : "";
  return `${op.op} ${op.path === "" ? "(the whole state)" : op.path}${from}${value}`;
}

function render() {
  if ($("panel-state").hidden || !dirty) return;
  dirty = false;
  const shownCurrent = thread !== null && thread !== undefined ? thread : current;
  $("state").textContent = shownCurrent === undefined ? "(none yet)" : json(shownCurrent);
  const n = steps.length;
  const range = $("state-step");
  range.max = String(Math.max(0, n - 1));
  range.disabled = n === 0;
  const i = at < 0 ? n - 1 : Math.min(at, n - 1);
  range.value = String(Math.max(0, i));
  $("state-prev").disabled = i <= 0;
  $("state-next").disabled = i >= n - 1;
  if (i < 0) {
    $("state-position").textContent = "no state events yet";
    $("state-at").textContent = "";
    $("state-diff").replaceChildren();
  } else {
    const s = steps[i];
    $("state-position").textContent = `${label(s, i)} of ${n}${at < 0 ? " (following the latest)" : ""}`;
    const before = stateAfter(i - 1);
    const after = stateAfter(i);
    $("state-at").textContent = json(after);
    const ops = s.type === "STATE_DELTA" && Array.isArray(s.payload) ? s.payload : diff(before, after);
    $("state-diff").replaceChildren(...(s.problem ? [el("li", { class: "error", text: s.problem })] : []),
      ...ops.map((op) => el("li", { class: `op op-${op.op}`, text: opLine(op) })));
    if (!ops.length) $("state-diff").append(el("li", { class: "muted", text: "no change" }));
  }
  // the state events (a run's input state is a step of the history, not an event)
  const listed = [];
  let earlier = 0;
  for (let k = n - 1; k >= 0; k--) {
    if (steps[k].type === "input") continue;
    if (listed.length < MAX_LISTED) listed.push(k);
    else earlier++;
  }
  listed.reverse();
  $("deltas").replaceChildren(...listed.map((k) => el("li", { class: k === i ? "current" : null },
    el("button", { type: "button", class: "ghost step", "data-step": k, "aria-label": `show ${label(steps[k], k)}`, text: label(steps[k], k) }),
    el("details", {}, el("summary", { text: "payload" }), el("pre", { class: "json", text: json(steps[k].payload) })))));
  $("deltas-earlier").textContent = earlier ? `${earlier} earlier state events: use the slider` : "";
}

function goTo(i) {
  at = i >= steps.length - 1 ? -1 : Math.max(0, i);
  dirty = true;
  render();
}

onRender(render);

export function setupState() {
  $("state-prev").addEventListener("click", () => goTo((at < 0 ? steps.length - 1 : at) - 1));
  $("state-next").addEventListener("click", () => goTo((at < 0 ? steps.length - 1 : at) + 1));
  $("state-step").addEventListener("input", (ev) => goTo(Number(ev.target.value)));
  $("deltas").addEventListener("click", (ev) => {
    const b = ev.target.closest("button.step");
    if (b) goTo(Number(b.dataset.step));
  });
  $("tab-state").addEventListener("click", () => {
    dirty = true;
    render();
  });
}

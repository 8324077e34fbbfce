// State: the thread's current state, every STATE_SNAPSHOT / STATE_DELTA with the diff it
// made, and stepping back and forth through the state history. Each step's state is
// computed here from the payloads (RFC 6902 for the deltas, as strict as the back end's
// reducer), from a checkpoint kept every CHECKPOINT steps, so the history costs memory
// for its payloads, not one copy of the state per step. A delta the back end refused
// (its STATE-2 warning names the run and event index) is never applied, even when the
// page's own code would have applied it; a composed run's events are not the thread's.
// The proxy's read-only page shows several threads: one history each, the tab showing
// the thread the traffic is on now (see "the history" below).

import { $, config, el, json, on, onRender, shownValue } from "./core.js";

const CHECKPOINT = 32;
const MAX_LISTED = 500;

// -- JSON Pointer and Patch (RFC 6901, 6902) -------------------------------------------------
//
// Strict, as the back end's reducer (app/_patch.py): a patch applies all or nothing (it
// works on a copy), an index past the end is refused (never clamped), `test` is
// evaluated, a move into its own child is refused. Only own members are walked or set:
// every object of the state is built without a prototype (own()), so a key such as
// "__proto__" or "constructor" is a plain member and can never reach Object.prototype.

/** A deep copy of a JSON value whose objects have no prototype. */
export function own(value) {
  if (Array.isArray(value)) return value.map(own);
  if (value === null || typeof value !== "object") return value;
  const out = Object.create(null);
  for (const k of Object.keys(value)) out[k] = own(value[k]);
  return out;
}

function equal(a, b) {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((v, i) => equal(v, b[i]));
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
}

function tokens(pointer) {
  if (typeof pointer !== "string") throw new Error("a path must be a JSON Pointer string");
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw new Error(`not a JSON Pointer: ${pointer}`);
  return pointer.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function index(arr, t, pointer, end) {
  if (t === "-" && end) return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(t)) throw new Error(`${pointer}: ${t} is not an array index`);
  const i = Number(t);
  if (i > arr.length || (i === arr.length && !end)) throw new Error(`${pointer}: index ${i} is out of range (the array has ${arr.length})`);
  return i;
}

function child(node, t, pointer) {
  if (Array.isArray(node)) return node[index(node, t, pointer, false)];
  if (node !== null && typeof node === "object" && Object.hasOwn(node, t)) return node[t];
  throw new Error(`${pointer} does not exist`);
}

function get(doc, pointer) {
  let node = doc;
  for (const t of tokens(pointer)) node = child(node, t, pointer);
  return node;
}

function parentOf(doc, pointer) {
  const ts = tokens(pointer);
  const last = ts.pop();
  let node = doc;
  for (const t of ts) node = child(node, t, pointer);
  if (node === null || typeof node !== "object") throw new Error(`${pointer}: the parent is not an object or an array`);
  return [node, last];
}

function put(doc, pointer, value, mustExist) {
  if (pointer === "") return value;
  const [parent, key] = parentOf(doc, pointer);
  if (Array.isArray(parent)) {
    if (mustExist) parent[index(parent, key, pointer, false)] = value;
    else parent.splice(index(parent, key, pointer, true), 0, value);
  } else {
    if (mustExist && !Object.hasOwn(parent, key)) throw new Error(`${pointer} does not exist`);
    parent[key] = value; // the parent has no prototype: "__proto__" is a plain member
  }
  return doc;
}

function take(doc, pointer) {
  if (pointer === "") throw new Error("a patch cannot remove the whole document");
  const [parent, key] = parentOf(doc, pointer);
  if (Array.isArray(parent)) return parent.splice(index(parent, key, pointer, false), 1)[0];
  if (!Object.hasOwn(parent, key)) throw new Error(`${pointer} does not exist`);
  const value = parent[key];
  delete parent[key];
  return value;
}

/** ``ops`` applied to a copy of ``doc``: the new state, or an Error thrown (``doc`` unchanged). */
export function applyPatch(doc, ops) {
  if (!Array.isArray(ops)) throw new Error("a patch must be an array of operations");
  doc = own(doc);
  ops.forEach((op, i) => {
    if (op === null || typeof op !== "object" || Array.isArray(op)) throw new Error(`operation ${i} is not an object`);
    const needsValue = op.op === "add" || op.op === "replace" || op.op === "test";
    if (needsValue && !Object.hasOwn(op, "value")) throw new Error(`operation ${i} (${op.op}) has no 'value'`);
    switch (op.op) {
      case "add": doc = put(doc, op.path, own(op.value), false); break;
      case "remove": take(doc, op.path); break;
      case "replace": doc = put(doc, op.path, own(op.value), true); break;
      case "move": {
        const src = tokens(op.from);
        const dst = tokens(op.path);
        if (src.length === dst.length && src.every((t, k) => t === dst[k])) { get(doc, op.from); break; }
        if (src.length < dst.length && src.every((t, k) => t === dst[k])) throw new Error(`operation ${i} moves ${op.from} into its own child ${op.path}`);
        doc = put(doc, op.path, take(doc, op.from), false);
        break;
      }
      case "copy": doc = put(doc, op.path, own(get(doc, op.from)), false); break;
      case "test": if (!equal(get(doc, op.path), op.value)) throw new Error(`operation ${i}: the value at ${op.path} is not the one tested`); break;
      default: throw new Error(`operation ${i}: ${JSON.stringify(op.op)} is not a JSON Patch operation`);
    }
  });
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
//
// A history: the steps of one thread, its checkpoints, the state after its last step and
// the back end's state of it after a turn. The inspector's own page drives one thread (a
// thread opened or started reloads the page): it has one history. The proxy's read-only
// page (config.readOnly) shows traffic of several threads: each has its own history, a
// step belongs to the thread of its run (its run-start names the thread), a delta is
// applied on its own thread's state only, and the tab shows the thread the traffic is on
// now — the thread of the latest input — going back to a thread continuing from its own
// last state. At most THREADS_KEPT threads are kept (as many as the back end remembers),
// the least recently active leaving first: a thread that comes back after that starts
// again from its input's state.

const live = Boolean(config.readOnly);
const THREADS_KEPT = 256;
const RUNS_KEPT = 4096; // run → thread, for the events and warnings of a run

function newHistory(key) {
  return {
    key, // the thread id (the live page), or "" (the inspector's own: one thread)
    steps: [], // {run, index, type: "input" | "STATE_SNAPSHOT" | "STATE_DELTA" | "thread", payload}
    checkpoints: new Map(), // step → the state after it (cloned)
    current: undefined, // the state after the last step, kept up to date as steps arrive
    thread: null, // the state the back end reported after the last turn
    lastRun: 0, // the thread's latest run
    messages: null, // the back end's "thread" message last told of it (its messages)
  };
}

const histories = new Map(); // thread id → its history, the least recently active first
const runThreads = new Map(); // run → its thread id (the live page)
let shownKey = live ? null : "";
let at = -1; // the step shown; -1: follow the latest
let dirty = true;

function historyOf(key) {
  let h = histories.get(key);
  if (h === undefined) {
    h = newHistory(key);
  } else {
    histories.delete(key);
  }
  histories.set(key, h); // the most recently active last
  if (histories.size > THREADS_KEPT) {
    for (const old of histories.keys()) {
      if (old === shownKey || old === key) continue; // the thread shown stays
      histories.delete(old);
      break;
    }
  }
  return h;
}

/** The history of ``run``'s thread (a run whose input the page never saw: key null). */
function historyOfRun(run) {
  if (!live) return historyOf("");
  return historyOf(runThreads.has(run) ? runThreads.get(run) : null);
}

function shown() {
  return histories.get(shownKey) || newHistory(shownKey);
}

function stateAfter(h, n) {
  if (n < 0) return undefined;
  let base = Math.floor(n / CHECKPOINT) * CHECKPOINT;
  while (base >= 0 && !h.checkpoints.has(base)) base -= CHECKPOINT;
  let doc = base >= 0 ? own(h.checkpoints.get(base)) : undefined;
  for (let i = Math.max(0, base + 1); i <= n; i++) doc = step(doc, h.steps[i]);
  return doc;
}

function step(doc, s) {
  if (s.type === "STATE_DELTA") {
    if (s.refused) return doc; // the back end's reducer refused it (STATE-2): the prior state is kept
    try {
      return applyPatch(doc === undefined ? {} : doc, s.payload); // all or nothing, on a copy
    } catch (err) {
      s.problem = `not applied (STATE-2), the prior state is kept: ${err.message}`;
      return doc;
    }
  }
  return own(s.payload);
}

function push(h, s) {
  h.steps.push(s);
  const n = h.steps.length - 1;
  h.current = step(h.current, s);
  if (n % CHECKPOINT === 0) h.checkpoints.set(n, own(h.current));
  dirty = true;
}

/** The back end refused step ``k`` after the page had applied it: every state from ``k``
 * on is computed again without it (the checkpoints after it included). */
function refuse(h, k, message) {
  const s = h.steps[k];
  if (s.refused) return;
  s.refused = true;
  s.problem = message;
  for (const c of [...h.checkpoints.keys()]) if (c >= k) h.checkpoints.delete(c);
  let doc = stateAfter(h, k - 1);
  for (let i = k; i < h.steps.length; i++) {
    doc = step(doc, h.steps[i]);
    if (i % CHECKPOINT === 0) h.checkpoints.set(i, own(doc));
  }
  h.current = doc;
  dirty = true;
}

// A composed run (Replay… → Compose) does not change the thread: its state events are
// not the thread's and never enter its history.
const composedRuns = new Set();

on("run-start", (m) => {
  if (m.composed) {
    composedRuns.add(m.run);
    return;
  }
  if (live) {
    const key = typeof m.threadId === "string" ? m.threadId : null;
    runThreads.set(m.run, key);
    if (runThreads.size > RUNS_KEPT) runThreads.delete(runThreads.keys().next().value);
    if (key !== shownKey) {
      shownKey = key; // the traffic moved to another thread: the tab shows it, at its latest
      at = -1;
    }
  }
  const h = historyOfRun(m.run);
  h.lastRun = m.run;
  // the live page: the frontend's input is the thread's state now (the back end's state
  // after the turn before is superseded by it)
  if (live) h.thread = null;
  const state = m.input && typeof m.input === "object" ? m.input.state : undefined;
  if (state !== undefined && JSON.stringify(state) !== JSON.stringify(h.current)) push(h, { run: m.run, index: null, type: "input", payload: state });
  dirty = true;
});
on("event", (m) => {
  if (composedRuns.has(m.run)) return;
  if (m.type === "STATE_DELTA" && m.event) push(historyOfRun(m.run), { run: m.run, index: m.index, type: m.type, payload: m.event.delta });
  else if (m.type === "STATE_SNAPSHOT" && m.event) push(historyOfRun(m.run), { run: m.run, index: m.index, type: m.type, payload: m.event.snapshot });
});
on("warning", (m) => {
  if (m.rule !== "STATE-2" || composedRuns.has(m.run)) return;
  const h = historyOfRun(m.run);
  for (let k = h.steps.length - 1; k >= 0; k--) {
    const s = h.steps[k];
    if (s.run === m.run && s.index === m.index) {
      if (s.type === "STATE_DELTA") refuse(h, k, `refused by the back end: ${m.message}`);
      return;
    }
    if (s.run < m.run) return;
  }
});
on("thread", (m) => {
  const h = live ? historyOf(typeof m.threadId === "string" ? m.threadId : null) : historyOf("");
  // a state over the back end's limit comes as a head: the page's own history has it whole
  h.thread = "state" in m ? m.state : null;
  // The latest step is the thread's state, always: should the back end's state after a
  // turn (or of a restored thread) differ from the page's, it is a step of its own —
  // the back end's state, never one the page made up.
  const empty = h.thread !== null && typeof h.thread === "object" && !Array.isArray(h.thread) && !Object.keys(h.thread).length;
  if (h.thread !== null && h.thread !== undefined && !(h.current === undefined && empty) && !equal(h.thread, h.current)) {
    push(h, { run: typeof m.run === "number" ? m.run : h.lastRun, index: null, type: "thread", payload: h.thread });
  }
  h.messages = m;
  if (!live) $("messages").textContent = shownValue(m, "messages");
  dirty = true;
});

function label(s, n) {
  if (s.type === "input") return `step ${n + 1}: run ${s.run}'s input state`;
  if (s.type === "thread") return `step ${n + 1}: the thread's state${s.run ? ` after run ${s.run}` : ""}, as the back end has it`;
  return `step ${n + 1}: run ${s.run} #${s.index} ${s.type}`;
}

function threadName(key) {
  return key === null ? "(a run whose input the page did not see)" : key;
}

/** The live page: whose history the tab shows, and how many steps the others keep. */
function threadNote(h) {
  let steps = 0;
  const others = [];
  for (const [key, other] of histories) {
    if (key === h.key || !other.steps.length) continue;
    steps += other.steps.length;
    others.push(threadName(key));
  }
  const whose = h.key === null && !h.steps.length ? "No thread yet." : `Thread ${threadName(h.key)}: the thread the traffic is on now; the steps below are its own.`;
  if (!others.length) return whose;
  const names = others.length > 5 ? `${others.slice(-5).join(", ")} and ${others.length - 5} more` : others.join(", ");
  return `${whose} ${steps} step${steps === 1 ? "" : "s"} of ${others.length} other thread${others.length === 1 ? "" : "s"} (${names}) kept, not listed: a thread's steps show when the traffic is back on it.`;
}

function opLine(op) {
  const value = "value" in op ? ` ${JSON.stringify(op.value)}` : "";
  const from = "from" in op ? ` from ${op.from}` : "";
  return `${op.op} ${op.path === "" ? "(the whole state)" : op.path}${from}${value}`;
}

function render() {
  if ($("panel-state").hidden || !dirty) return;
  dirty = false;
  const h = shown();
  const steps = h.steps;
  if (live) $("state-thread").textContent = threadNote(h);
  const shownCurrent = h.thread !== null && h.thread !== undefined ? h.thread : h.current;
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
    $("state-position").textContent = `${label(s, i)} of ${n}${live ? ` (thread ${threadName(h.key)})` : ""}${at < 0 ? " (following the latest)" : ""}`;
    const before = stateAfter(h, i - 1);
    const after = stateAfter(h, i);
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
    if (steps[k].type === "input" || steps[k].type === "thread") continue;
    if (listed.length < MAX_LISTED) listed.push(k);
    else earlier++;
  }
  listed.reverse();
  $("deltas").replaceChildren(...listed.map((k) => el("li", { class: k === i ? "current" : null },
    el("button", { type: "button", class: "ghost step", "data-step": k, "aria-label": `show ${label(steps[k], k)}`, text: label(steps[k], k) }),
    el("details", {}, el("summary", { text: "payload" }), el("pre", { class: "json", text: json(steps[k].payload) })))));
  $("deltas-earlier").textContent = earlier ? `${earlier} earlier state events: use the slider` : "";
  if (live) $("messages").textContent = h.messages ? shownValue(h.messages, "messages") : "[]";
}

function goTo(i) {
  const steps = shown().steps;
  at = i >= steps.length - 1 ? -1 : Math.max(0, i);
  dirty = true;
  render();
}

onRender(render);

export function setupState() {
  if (live) $("state").before(el("p", { id: "state-thread", class: "muted" }));
  const last = () => shown().steps.length - 1;
  $("state-prev").addEventListener("click", () => goTo((at < 0 ? last() : at) - 1));
  $("state-next").addEventListener("click", () => goTo((at < 0 ? last() : at) + 1));
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

// The frame list: every frame of every run, judged, with its time — virtualised (only
// the rows in view are in the DOM, every row the same height), consecutive deltas of
// one message or call grouped into one expandable row, filtered by type, family,
// message or call id, counted per family; a waterfall of each run's messages and
// calls; the selected frame's JSON and raw bytes, as received, below the list.
//
// Keyboard: the list is one Tab stop (a roving tabindex on the active row); ↑ ↓ Home
// End PageUp PageDown move, → expands a group, ← collapses it, Enter shows the frame.

import { $, el, json, on, onPrepare, onRender, ruleLink, showRule, shownValue } from "./core.js";

const ROW = 26; // px: every row is this tall, so a row's position is arithmetic
const OVERSCAN = 8;
export const FAMILIES = ["run", "text", "reasoning", "tool", "state", "messages", "activity", "custom", "other"];
const GROUPED = new Set([
  "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CHUNK", "TOOL_CALL_ARGS", "TOOL_CALL_CHUNK",
  "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_CHUNK", "THINKING_TEXT_MESSAGE_CONTENT", "ACTIVITY_DELTA",
]);

function eventOf(frame) {
  if (frame.event !== undefined) return frame.event;
  try {
    return JSON.parse(frame.raw);
  } catch (err) {
    return null;
  }
}

export function familyOf(type) {
  if (type.startsWith("RUN_") || type.startsWith("STEP_")) return "run";
  if (type.startsWith("TEXT_MESSAGE")) return "text";
  if (type.startsWith("REASONING") || type.startsWith("THINKING")) return "reasoning";
  if (type.startsWith("TOOL_CALL")) return "tool";
  if (type.startsWith("STATE_")) return "state";
  if (type === "MESSAGES_SNAPSHOT") return "messages";
  if (type.startsWith("ACTIVITY")) return "activity";
  if (type === "CUSTOM" || type === "RAW") return "custom";
  return "other";
}

function idOf(event) {
  if (!event || typeof event !== "object") return "";
  const id = event.messageId ?? event.toolCallId ?? event.stepName ?? "";
  return typeof id === "string" ? id : String(id);
}

// -- the model -----------------------------------------------------------------------------

const items = []; // run-start | run-end | group (of ≥ 1 frames) | note (a verdict with no frame)
const byFrame = new Map(); // "run:index" → {item, frame}
const runStarts = new Map(); // run → received time of its input (ms since the epoch)
const counts = new Map(FAMILIES.map((f) => [f, 0]));
let total = 0;
let nextKey = 0;

function addItem(item) {
  item.key = nextKey++;
  item.v = 0;
  items.push(item);
  structure.appended = true;
}

function onRunStart(m) {
  runStarts.set(m.run, m.t ?? null);
  const input = shownValue(m, "input");
  addItem({ kind: "run-start", run: m.run, url: m.url, input, t: m.t ?? null, threadId: typeof m.threadId === "string" ? m.threadId : null });
  $("last-input").textContent = input;
  waterfall.start(m);
}

function onEvent(m) {
  const type = typeof m.type === "string" ? m.type : "(not an event)";
  const family = familyOf(type);
  // a grouped delta keeps its raw data only (its JSON is parsed again when shown):
  // 100,000 of them are most of what the page holds
  const grouped = GROUPED.has(type) && m.event !== null;
  const frame = { run: m.run, index: m.index, type, family, id: idOf(m.event), t: m.t ?? null, event: grouped ? undefined : m.event, raw: m.raw, notes: null };
  counts.set(family, counts.get(family) + 1);
  total++;
  const last = items[items.length - 1];
  let item;
  if (last && last.kind === "group" && GROUPED.has(type) && last.type === type && last.run === frame.run && last.id === frame.id) {
    item = last;
    item.frames.push(frame);
    item.v++;
    structure.grown = true;
  } else {
    item = { kind: "group", run: frame.run, type, family, id: frame.id, frames: [frame], expanded: false, notes: 0 };
    addItem(item);
  }
  byFrame.set(`${frame.run}:${frame.index}`, { item, frame });
  waterfall.frame(frame);
}

function onNote(m, kind) {
  const note = { kind, rule: m.rule, message: m.message, run: m.run, index: m.index, side: m.side };
  const found = byFrame.get(`${m.run}:${m.index}`);
  if (found) {
    (found.frame.notes ||= []).push(note);
    found.item.notes++;
    found.item.v++;
    structure.changed = true; // a note row appears under an older row
  } else {
    addItem({ kind: "note", run: m.run, note });
  }
  noteCount++;
}
let noteCount = 0;

function onRunEnd(m) {
  addItem({ kind: "run-end", run: m.run, status: m.status, pending: m.pending || [], error: m.error, t: m.t ?? null });
  waterfall.end(m);
}

on("run-start", onRunStart);
on("event", onEvent);
on("warning", (m) => onNote(m, "warning"));
on("violation", (m) => onNote(m, "violation"));
on("run-end", onRunEnd);

// -- rows: the items a filter keeps, flattened (a group expanded adds its frames) ----------

const filter = { text: "", family: "" };
let rows = []; // {item, frame?, note?, depth}
let builtItems = 0; // items whose rows are in `rows`
let tailStart = 0; // where the rows of item builtItems - 1 start
const structure = { appended: false, grown: false, changed: true };

function keeps(item) {
  if (item.kind === "run-start" || item.kind === "run-end") return true; // the runs frame everything
  const fam = filter.family;
  if (item.kind === "note") return !fam || fam === "verdicts";
  if (fam === "verdicts") {
    if (!item.notes) return false;
  } else if (fam && item.family !== fam) return false;
  const q = filter.text;
  if (!q) return true;
  if (item.type.toLowerCase().includes(q) || item.id.toLowerCase().includes(q)) return true;
  if (q.startsWith("#")) return item.frames.some((f) => `#${f.index}` === q);
  return false;
}

function rowsOf(item, out) {
  if (!keeps(item)) return;
  out.push({ item, frame: item.kind === "group" && item.frames.length === 1 ? item.frames[0] : null, depth: 0 });
  if (item.kind !== "group") return;
  if (item.expanded && item.frames.length > 1) for (const frame of item.frames) out.push({ item, frame, depth: 1 });
  if (item.notes) {
    for (const frame of item.frames) for (const note of frame.notes || []) out.push({ item, frame, note, depth: 1 });
  }
}

function rebuild() {
  const activeRow = rows[active];
  rows = [];
  for (const item of items) {
    tailStart = rows.length;
    rowsOf(item, rows);
  }
  builtItems = items.length;
  structure.appended = structure.grown = structure.changed = false;
  active = activeRow ? Math.max(0, rows.findIndex((r) => sameRow(r, activeRow))) : 0;
}

function sameRow(a, b) {
  return a.item === b.item && a.frame === b.frame && a.note === b.note;
}

// Appending is incremental: only the last built item (it may have grown) and the new ones.
function extend() {
  if (structure.changed) return rebuild();
  if (!structure.appended && !structure.grown) return;
  const from = Math.max(0, builtItems - 1);
  const last = items[from];
  if (last && last.kind === "group" && last.expanded) return rebuild();
  rows.length = from < builtItems ? tailStart : rows.length;
  for (let i = from; i < items.length; i++) {
    tailStart = rows.length;
    rowsOf(items[i], rows);
  }
  builtItems = items.length;
  structure.appended = structure.grown = false;
}

// -- rendering ------------------------------------------------------------------------------

const scroller = $("frames");
const spacer = $("frames-spacer");
const list = $("timeline");
const mounted = new Map(); // row position → li
let active = 0; // the row that holds the one Tab stop
let stick = true;

function visible() {
  return !$("panel-timeline").hidden;
}

onPrepare(() => {
  if (visible()) stick = scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - ROW;
});

function since(t, run) {
  const start = runStarts.get(run);
  if (t === null || t === undefined || start === null || start === undefined) return "";
  return `+${((t - start) / 1000).toFixed(3)}s`;
}

function fill(li, row) {
  const { item, frame, note } = row;
  li.className = "row";
  li.dataset.run = String(item.run ?? "");
  delete li.dataset.index;
  delete li.dataset.type;
  li.removeAttribute("aria-expanded");
  li.replaceChildren();
  if (note) {
    li.classList.add("event", "note-row");
    li.dataset.index = String(note.index);
    li.dataset.type = frame ? frame.type : "";
    li.append(noteNode(note));
    return;
  }
  if (item.kind === "run-start") {
    li.classList.add("run-start");
    const thread = item.threadId ? `thread ${item.threadId} — ` : "";
    li.append(el("span", { class: "what", text: `run ${item.run} — ${thread}input sent to ${item.url}` }));
    return;
  }
  if (item.kind === "run-end") {
    // a class token has no spaces: "HTTP 502" (the proxy's page) would throw here
    li.classList.add("run-end", `status-${String(item.status).replace(/[^\w-]/g, "_")}`);
    const pending = item.pending.length ? `; pending calls: ${item.pending.join(", ")}` : "";
    const error = item.error ? ` — ${json(item.error.message || item.error)}` : "";
    li.append(el("span", { class: "what", text: `run ${item.run} ended: ${item.status}${pending}${error}` }));
    return;
  }
  if (item.kind === "note") {
    li.classList.add("event", "note-row");
    li.dataset.index = String(item.note.index);
    li.append(noteNode(item.note));
    return;
  }
  const group = !frame;
  const first = item.frames[0];
  const shown = frame || first;
  li.classList.add("event");
  if (row.depth) li.classList.add("member");
  li.dataset.index = String(shown.index);
  li.dataset.type = item.type;
  if (group) {
    li.classList.add("group");
    li.setAttribute("aria-expanded", String(item.expanded));
  }
  li.append(el("span", { class: "toggle", "aria-hidden": "true", text: group ? (item.expanded ? "▾" : "▸") : "" }));
  const lastFrame = item.frames[item.frames.length - 1];
  const index = group ? `#${first.index}–${lastFrame.index}` : `#${shown.index}`;
  li.append(el("span", { class: "t", text: since(shown.t, shown.run) }), el("span", { class: "idx", text: index }),
    el("span", { class: "type", text: item.type }));
  if (group) li.append(el("span", { class: "count", text: `×${item.frames.length}` }));
  if (item.id) li.append(el("span", { class: "id", text: item.id }));
  const notes = group ? item.notes : (shown.notes || []).length;
  if (notes) li.append(el("span", { class: "verdict", text: `${notes} verdict${notes > 1 ? "s" : ""}` }));
}

function noteNode(note) {
  return el("div", { class: `note ${note.kind}`, title: note.message },
    el("span", { class: "note-kind", text: note.kind === "violation" ? "violation" : "warning" }), " ",
    note.side ? el("span", { class: "note-side", "data-side": note.side, text: note.side === "frontend" ? "frontend (its input)" : "agent" }) : null,
    note.side ? " " : null, ruleLink(note.rule, false), " ", el("span", { text: note.message }));
}

function renderList() {
  if (!visible()) return;
  extend();
  spacer.style.height = `${rows.length * ROW}px`;
  if (stick && !userScrolled) scroller.scrollTop = rows.length * ROW;
  userScrolled = false;
  const top = scroller.scrollTop;
  const height = scroller.clientHeight || 400;
  const first = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
  const last = Math.min(rows.length - 1, Math.ceil((top + height) / ROW) + OVERSCAN);
  if (active >= rows.length) active = Math.max(0, rows.length - 1);
  const wanted = new Set();
  for (let i = first; i <= last; i++) wanted.add(i);
  if (rows.length) wanted.add(active); // the Tab stop is always in the DOM
  const hadFocus = list.contains(document.activeElement);
  for (const [i, li] of mounted) {
    if (!wanted.has(i)) {
      li.remove();
      mounted.delete(i);
    }
  }
  for (const i of wanted) {
    const row = rows[i];
    let li = mounted.get(i);
    if (!li) {
      li = el("li", { role: "listitem" });
      li.dataset.pos = String(i);
      li.style.transform = `translateY(${i * ROW}px)`;
      mounted.set(i, li);
      list.append(li);
      li._row = null;
    }
    if (li._row !== row || li._v !== row.item.v) {
      fill(li, row);
      li._row = row;
      li._v = row.item.v;
    }
    li.tabIndex = i === active ? 0 : -1;
    li.classList.toggle("active", i === active);
    li.classList.toggle("selected", selectedRow !== null && sameRow(row, selectedRow));
  }
  if (hadFocus && !list.contains(document.activeElement)) mounted.get(active)?.focus({ preventScroll: true });
  renderCounts();
}

let userScrolled = false;
scroller.addEventListener("scroll", () => {
  userScrolled = true;
  scheduleRender();
}, { passive: true });

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    renderList();
  });
}

// The counts: one button per family seen, its text updated in place.
const chips = new Map(); // family → button
function renderCounts() {
  const box = $("family-counts");
  const show = (family, label, n) => {
    let chip = chips.get(family);
    if (!chip) {
      chip = el("button", { type: "button", class: "chip", "data-family": family, onclick: () => setFamily(filter.family === family ? "" : family) });
      chips.set(family, chip);
      box.append(chip);
    }
    const text = `${label} ${n.toLocaleString("en")}`;
    if (chip.textContent !== text) chip.textContent = text;
    const pressed = String(filter.family === family);
    if (chip.getAttribute("aria-pressed") !== pressed) chip.setAttribute("aria-pressed", pressed);
  };
  show("", "all", total);
  for (const [family, n] of counts) if (n) show(family, family, n);
  if (noteCount) show("verdicts", "verdicts", noteCount);
}

onRender(renderList);

// -- selection and detail -------------------------------------------------------------------

let selectedRow = null;

function select(i) {
  const row = rows[i];
  if (!row) return;
  selectedRow = row;
  const box = $("frame-detail");
  box.hidden = false;
  const { item, frame, note } = row;
  const parts = [];
  const when = (t, run) => (t ? `received ${new Date(t).toISOString().slice(11, 23)} UTC, ${since(t, run)} after the run's input was sent` : "");
  if (note) {
    parts.push(el("h3", { text: `${note.kind} on frame #${note.index}` }), noteNode({ ...note }));
    showRule(note.rule, false); // the keyboard stays on its row
  }
  if (item.kind === "run-start") {
    parts.push(el("h3", { text: `run ${item.run}: the RunAgentInput sent to ${item.url}` }), el("p", { class: "muted", text: when(item.t, item.run) }),
      el("pre", { class: "json", text: json(item.input) }));
  } else if (item.kind === "run-end") {
    parts.push(el("h3", { text: `run ${item.run} ended: ${item.status}` }), el("p", { class: "muted", text: when(item.t, item.run) }),
      el("pre", { class: "json", text: json({ status: item.status, pending: item.pending, error: item.error }) }));
  } else if (item.kind === "group" && !note) {
    if (frame) {
      parts.push(el("h3", { text: `#${frame.index} ${frame.type}${frame.id ? ` — ${frame.id}` : ""}` }), el("p", { class: "muted", text: when(frame.t, frame.run) }));
      for (const n of frame.notes || []) parts.push(noteNode(n));
      parts.push(el("span", { class: "label", text: "as JSON" }), el("pre", { class: "json", text: json(eventOf(frame) ?? frame.raw) }),
        el("span", { class: "label", text: "raw bytes, as received" }), el("pre", { class: "raw", text: frame.raw ?? "" }));
    } else {
      const first = item.frames[0];
      const lastFrame = item.frames[item.frames.length - 1];
      const joined = item.frames.map((f) => {
        const ev = eventOf(f);
        return ev && typeof ev.delta === "string" ? ev.delta : "";
      }).join("");
      parts.push(el("h3", { text: `${item.frames.length} × ${item.type}${item.id ? ` — ${item.id}` : ""} (#${first.index}–${lastFrame.index})` }),
        el("p", { class: "muted", text: `${when(first.t, first.run)}; the last ${since(lastFrame.t, lastFrame.run)}` }),
        el("span", { class: "label", text: `the deltas joined (${joined.length.toLocaleString("en")} characters)` }),
        el("pre", { class: "json", text: joined.length > 65536 ? joined.slice(0, 65536) + "…" : joined }));
    }
  }
  box.replaceChildren(...parts);
}

function moveTo(i, focus = true) {
  if (!rows.length) return;
  active = Math.max(0, Math.min(rows.length - 1, i));
  const top = active * ROW;
  if (top < scroller.scrollTop) scroller.scrollTop = top;
  else if (top + ROW > scroller.scrollTop + scroller.clientHeight) scroller.scrollTop = top + ROW - scroller.clientHeight;
  stick = active === rows.length - 1;
  userScrolled = true;
  renderList();
  if (focus) mounted.get(active)?.focus({ preventScroll: true });
}

function toggle(i, open) {
  const row = rows[i];
  if (!row || row.item.kind !== "group" || row.item.frames.length < 2 || row.depth) return false;
  const expanded = open === undefined ? !row.item.expanded : open;
  if (expanded === row.item.expanded) return false;
  row.item.expanded = expanded;
  row.item.v++;
  structure.changed = true;
  renderList();
  return true;
}

list.addEventListener("keydown", (ev) => {
  const page = Math.max(1, Math.floor(scroller.clientHeight / ROW) - 1);
  const keys = {
    ArrowDown: () => moveTo(active + 1),
    ArrowUp: () => moveTo(active - 1),
    Home: () => moveTo(0),
    End: () => moveTo(rows.length - 1),
    PageDown: () => moveTo(active + page),
    PageUp: () => moveTo(active - page),
    ArrowRight: () => toggle(active, true),
    ArrowLeft: () => {
      const row = rows[active];
      if (row && row.depth && !row.note) {
        const parent = rows.findIndex((r) => r.item === row.item && !r.depth);
        moveTo(parent);
      } else toggle(active, false);
    },
    Enter: () => {
      toggle(active);
      select(active);
    },
    " ": () => select(active),
  };
  const fn = keys[ev.key];
  if (!fn) return;
  ev.preventDefault();
  fn();
});

list.addEventListener("click", (ev) => {
  const li = ev.target.closest("li[data-pos]");
  if (!li || ev.target.closest("a")) return;
  const i = Number(li.dataset.pos);
  active = i;
  if (ev.target.closest(".toggle") || li.classList.contains("group")) toggle(i);
  select(i);
  renderList();
  mounted.get(active)?.focus({ preventScroll: true });
});

// -- filters ----------------------------------------------------------------------------------

function setFamily(family) {
  filter.family = family;
  $("frame-family").value = family;
  applyFilter();
}

/** Apply the filter now (not on the next frame): a filter change is a user's action. */
export function applyFilter() {
  structure.changed = true;
  stick = true;
  renderList();
}

export function setupFrames() {
  const family = $("frame-family");
  for (const f of FAMILIES) family.append(el("option", { value: f, text: f }));
  family.append(el("option", { value: "verdicts", text: "with a verdict" }));
  family.addEventListener("change", () => setFamily(family.value));
  $("frame-filter").addEventListener("input", (ev) => {
    filter.text = ev.target.value.trim().toLowerCase();
    applyFilter();
  });
  $("tab-timeline").addEventListener("click", () => requestAnimationFrame(renderList));
  $("waterfall-box").addEventListener("toggle", () => waterfall.render());
  onRender(() => waterfall.render());
}

/** Drop the oldest items past ``max`` (down to nine tenths of it): the proxy's read-only
 * page, left open while the traffic goes on for days, keeps its recent runs only. */
export function trimFrames(max) {
  if (items.length <= max) return 0;
  const gone = items.splice(0, items.length - Math.floor(max * 0.9));
  for (const item of gone) {
    if (item.kind === "group") {
      for (const f of item.frames) {
        byFrame.delete(`${f.run}:${f.index}`);
        counts.set(f.family, counts.get(f.family) - 1);
        total--;
        noteCount -= (f.notes || []).length;
      }
    } else if (item.kind === "note") {
      noteCount--;
    } else if (item.kind === "run-end") {
      runStarts.delete(item.run);
      waterfall.runs.delete(item.run);
      waterfall.dirty = true;
    }
  }
  if (selectedRow && gone.includes(selectedRow.item)) selectedRow = null;
  structure.changed = true;
  return gone.length;
}

/** For tests and the benchmark: how many rows the list has, and how many are in the DOM. */
window.__frames = () => ({ rows: rows.length, mounted: list.children.length, frames: total, items: items.length });

// -- the waterfall ----------------------------------------------------------------------------

const SPAN_START = { TEXT_MESSAGE_START: "text", TOOL_CALL_START: "tool", REASONING_MESSAGE_START: "reasoning", REASONING_START: "reasoning", STEP_STARTED: "step" };
const SPAN_END = new Set(["TEXT_MESSAGE_END", "TOOL_CALL_END", "TOOL_CALL_RESULT", "REASONING_MESSAGE_END", "REASONING_END", "STEP_FINISHED"]);
const MAX_SPANS = 200;

const waterfall = {
  runs: new Map(), // run → {start, end, status, spans: Map id → span}
  dirty: false,
  start(m) {
    this.runs.set(m.run, { run: m.run, start: m.t ?? null, end: null, last: m.t ?? null, status: "running", spans: new Map() });
    this.dirty = true;
  },
  frame(frame) {
    const run = this.runs.get(frame.run);
    if (!run || frame.t === null) return;
    run.last = frame.t;
    const id = frame.id;
    const kind = SPAN_START[frame.type] || (frame.family === "text" || frame.family === "tool" || frame.family === "reasoning" ? frame.family : null);
    if (id && kind) {
      let span = run.spans.get(id);
      if (!span && run.spans.size < MAX_SPANS) {
        const name = frame.event && (frame.event.toolCallName || frame.event.stepName || frame.event.role);
        span = { id, kind, label: name ? `${name} ${id}` : id, start: frame.t, end: null, last: frame.t, frames: 0 };
        run.spans.set(id, span);
      }
      if (span) {
        span.last = frame.t;
        span.frames++;
        if (SPAN_END.has(frame.type)) span.end = frame.t;
      }
    }
    this.dirty = true;
  },
  end(m) {
    const run = this.runs.get(m.run);
    if (!run) return;
    run.end = m.t ?? run.last;
    run.status = m.status;
    this.dirty = true;
  },
  render() {
    const box = $("waterfall-box");
    if (!box.open || !this.dirty || !visible()) return;
    this.dirty = false;
    const out = [];
    for (const run of this.runs.values()) {
      const start = run.start ?? 0;
      const end = Math.max(run.end ?? run.last ?? start, start + 1);
      const span = end - start;
      out.push(el("h4", { text: `run ${run.run} — ${run.status} — ${(span / 1000).toFixed(3)} s` }));
      const bars = el("ol", { class: "bars" });
      for (const s of run.spans.values()) {
        const bar = el("span", { class: `wf-bar ${s.kind}` });
        const from = ((s.start - start) / span) * 100;
        const to = (((s.end ?? s.last) - start) / span) * 100;
        bar.style.left = `${Math.max(0, from)}%`;
        bar.style.width = `${Math.max(0.5, to - from)}%`;
        bars.append(el("li", { title: `${s.label}: ${s.frames} frames, ${(((s.end ?? s.last) - s.start) / 1000).toFixed(3)} s${s.end === null ? " (still open)" : ""}` },
          el("span", { class: "bar-label", text: s.label }), el("span", { class: "track" }, bar)));
      }
      if (run.spans.size >= MAX_SPANS) bars.append(el("li", { class: "muted", text: `only the first ${MAX_SPANS} messages and calls are drawn` }));
      out.push(bars);
    }
    $("waterfall").replaceChildren(...out);
  },
};

// The page's controls: tabs, the prompt (and what it says while the agent is busy),
// mock tools, the tools offered, the exports, the next input, the theme.

import { $, el, json, api, announce, config, on } from "./core.js";
import { showFailure } from "./chat.js";

let busy = false;
let runs = 0;

export function isBusy() {
  return busy;
}

const openInterrupts = new Set(); // the interrupts asked and not yet answered

/** What the turn waits for: the agent, or the person's answers to open interrupts (the
 * run is over then: the turn goes on once each is resolved or cancelled). */
function waitingFor() {
  const n = openInterrupts.size;
  if (!n) return { hint: "The agent is working: wait for this turn to end before sending.", status: "the agent is working…" };
  const what = `Answer the ${n} open interrupt${n === 1 ? "" : "s"} (or cancel ${n === 1 ? "it" : "them"}) to continue`;
  return { hint: `${what}; New thread abandons ${n === 1 ? "it" : "them"}.`, status: what };
}

function setBusy(value) {
  busy = value;
  if (!value) openInterrupts.clear();
  $("send").disabled = value;
  $("prompt").setAttribute("aria-busy", String(value));
  document.body.dataset.busy = String(value);
  const said = waitingFor();
  $("prompt-hint").textContent = value ? said.hint : "";
  announce(value ? said.status : "idle");
}

on("interrupt", (m) => {
  openInterrupts.add(m.id);
  if (busy) setBusy(true);
});
on("interrupt-done", (m) => {
  if (openInterrupts.delete(m.id) && busy) setBusy(true);
});

function showTools(msg) {
  const list = $("tools");
  list.replaceChildren();
  for (const tool of msg.tools) {
    list.append(el("li", {}, el("strong", { text: tool.name }), el("span", { class: "muted", text: ` — ${tool.description}` }),
      tool.sideEffects ? el("span", { class: "tag", text: "side effects" }) : null, tool.mock ? el("span", { class: "tag", text: "mock" }) : null,
      el("details", {}, el("summary", { text: "parameters" }), el("pre", { class: "json", text: json(tool.parameters || {}) }))));
  }
}

export function refreshExports() {
  const list = $("exports");
  // the token travels in the page's cookie, never in a URL (history, logs, Referer)
  const link = (what, label) => el("li", {}, el("a", { href: `/api/export/${what}`, download: what, text: label }));
  list.replaceChildren(link("thread.json", "thread.json — the thread, its runs and inputs"));
  for (let n = 1; n <= runs; n++) {
    list.append(link(`run-${n}.sse`, `run-${n}.sse — run ${n}'s stream as received`), link(`run-${n}.input.json`, `run-${n}.input.json — its RunAgentInput`));
  }
}

on("busy", (m) => setBusy(m.busy));
on("tools", showTools);
on("run-start", (m) => {
  runs = Math.max(runs, m.run);
});
on("run-end", refreshExports);

export function setupTabs() {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  const select = (tab) => {
    for (const t of tabs) {
      const selected = t === tab;
      t.setAttribute("aria-selected", String(selected));
      t.tabIndex = selected ? 0 : -1;
      $(t.getAttribute("aria-controls")).hidden = !selected;
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

export function setupPrompt() {
  const prompt = $("prompt");
  prompt.value = config.prompt || "";
  const send = async () => {
    if (busy) {
      // said, not silently ignored: the prompt stays as typed
      const text = "Not sent: the agent is still working on this turn. Your message is kept; send it when the turn ends.";
      $("prompt-hint").textContent = text;
      announce(text);
      return;
    }
    if (!prompt.value.trim()) {
      $("prompt-hint").textContent = "Type a message first.";
      return;
    }
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

export function setupMockForm() {
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

export function setupViews() {
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

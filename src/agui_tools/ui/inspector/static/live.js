// The proxy's read-only inspector (agui-tools proxy --inspect): the page shows traffic
// between a frontend and an agent that it does not drive. When the back end says so
// (config.readOnly), a banner says why and every control that would drive the thread
// — the prompt, mock tools, Stop, New thread, the agent settings, replay and compose,
// the next input — is hidden and disabled (the back end refuses each action with 403
// all the same). The chat marks where the traffic moves to another thread (a frontend
// may keep several) and shows each finding with its rule and its side: the agent
// judged as a producer, or the frontend's input judged as an application's.

import { $, el, announce, config, on, onRender, ruleLink, schedule } from "./core.js";
import { addToLog, forgetDetached } from "./chat.js";
import { trimFrames } from "./frames.js";

export const SIDES = { agent: "agent (producer)", frontend: "frontend (application)" };
const MAX_FINDINGS = 200; // bubbles in the chat; the timeline lists every one
// A page left open on a proxy that runs for days keeps its recent traffic: at most so many
// bubbles and cards in the chat and so many rows (a group of deltas is one) in the frame
// list, the oldest leaving first (the back end's log is bounded the same way).
export const MAX_LOG_NODES = 1500;
export const MAX_FRAME_ITEMS = 20000;
const DRIVING = ["prompt-form", "mock-form", "stop", "new-thread", "agent-settings", "agent-select", "thread-select", "replay-open", "build-input"];

let findings = 0;
const open = new Set(); // runs streaming now

function watching() {
  announce(open.size ? `${open.size} run${open.size === 1 ? "" : "s"} streaming` : "watching the traffic");
}

function showFinding(m) {
  if (!m.side) return;
  findings++;
  if (findings > MAX_FINDINGS) {
    if (findings === MAX_FINDINGS + 1) addToLog(el("div", { class: "bubble note", text: `More findings: the timeline lists every one (filter "with a verdict").` }));
    return;
  }
  const side = SIDES[m.side] || m.side;
  addToLog(el("div", { class: `bubble finding ${m.kind} side-${m.side}`, role: m.kind === "violation" ? "alert" : "status", "data-rule": m.rule, "data-side": m.side },
    el("span", { class: "who", text: `${m.kind === "violation" ? "violation" : "warning"} — ${side}, run ${m.run}${typeof m.index === "number" ? ` event #${m.index}` : ", its input"}` }),
    ruleLink(m.rule), el("p", { text: m.message })));
}

export function setupLive() {
  if (!config.readOnly) return;
  document.body.dataset.readOnly = "true";
  const banner = el("p", { id: "read-only", class: "read-only-banner", role: "note", title: config.readOnly },
    el("strong", { text: "Read-only: the frontend drives this thread." }), " ",
    el("span", { text: "This page shows the traffic agui-tools proxy forwards between the frontend and the agent, judged on the way; the prompts, the consent and every answer stay the frontend's." }));
  document.querySelector("main.layout").before(banner);
  for (const id of DRIVING) {
    const node = $(id);
    if (!node) continue;
    node.hidden = true;
    for (const control of [node, ...node.querySelectorAll("button, input, textarea, select")]) control.disabled = true;
  }
  $("chat-title").textContent = "Traffic, as the frontend is shown it";
  $("panel-input").querySelector("p.muted").textContent = "Read-only: the frontend builds its inputs. The last one it sent:";
  $("exports").replaceChildren(el("li", { class: "muted", text: "Read-only: agui-tools proxy --record DIR saves every exchange (input and stream, as sent) for verify, mock and the import." }));
  on("run-start", (m) => {
    open.add(m.run);
    watching();
  });
  on("run-end", (m) => {
    open.delete(m.run);
    watching();
    $("exports").replaceChildren(el("li", { class: "muted", text: "Read-only: agui-tools proxy --record DIR saves every exchange (input and stream, as sent) for verify, mock and the import." }));
  });
  on("live-thread", (m) => {
    addToLog(el("div", { class: "bubble note thread-change", "data-thread-id": m.threadId },
      el("span", { class: "who", text: m.seen ? "back to thread" : "thread" }),
      el("p", { text: m.seen ? `The frontend continues thread ${m.threadId}.` : `Thread ${m.threadId}${m.messages ? ` (${m.messages} message(s) of history in its input)` : ""}.` })));
  });
  on("violation", showFinding);
  on("warning", showFinding);
  onRender(() => {
    const log = $("log");
    if (log.childElementCount > MAX_LOG_NODES) {
      let extra = log.childElementCount - Math.floor(MAX_LOG_NODES * 0.9);
      while (extra-- > 0 && log.firstElementChild) log.firstElementChild.remove();
      forgetDetached();
    }
    if (trimFrames(MAX_FRAME_ITEMS)) schedule(); // the list is rebuilt on the next frame
  });
  watching();
}

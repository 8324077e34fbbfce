// The AG-UI inspector page: no framework, no build step, no network beyond this server.
//
// Modules (all plain ES modules served from /static/):
//   core.js      el(), api(), the handlers table (message kind → functions) and the
//                frame loop that applies messages in batches, once per animation frame;
//   chat.js      the chat, cards, consent questions, mock-tool forms (in place);
//   markdown.js  the safe Markdown renderer for assistant text;
//   frames.js    the virtualised frame list, its filters and counts, the waterfall;
//   state.js     the current state, each state event's diff, the state history;
//   controls.js  tabs, the prompt, mock tools, exports, the next input, the theme;
//   session.js   Stop, New thread, agents and headers, interrupt cards, statuses the
//                page adds, import and compose;
//   live.js      the proxy's read-only inspector: the banner, the controls put away,
//                thread changes and findings (with their side) in the chat.
// A new kind of message plugs in with on(kind, fn) from core.js.
//
// The back end sends one message per SSE event, or a "batch" of many (what a new or
// reconnecting page missed, and whatever piled up while it was busy): either way each
// message is queued and applied with the others of its frame.

import { $, config, announce, enqueue } from "./core.js";
import { setupChat } from "./chat.js";
import { setupFrames } from "./frames.js";
import { setupState } from "./state.js";
import { isBusy, refreshExports, setupMockForm, setupPrompt, setupTabs, setupViews } from "./controls.js";
import { setupSession } from "./session.js";
import { setupLive } from "./live.js";

function connect() {
  const source = new EventSource("/api/events"); // authenticated by the page's cookie, not a URL
  source.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    if (msg.kind === "batch") for (const m of msg.messages) enqueue(m);
    else enqueue(msg);
  };
  source.onerror = () => announce(isBusy() ? "reconnecting…" : "disconnected — retrying");
}

$("agent").textContent = config.title;
setupTabs();
setupPrompt();
setupMockForm();
setupViews();
setupChat();
setupFrames();
setupState();
setupSession();
refreshExports();
setupLive();
connect();

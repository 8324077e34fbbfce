#!/usr/bin/env node
// interop/ts/httpagent.mjs — the OFFICIAL @ag-ui/client 1.0.0 HttpAgent against a live server.
//
// Drives `HttpAgent.runAgent` — the real path an application uses: fetch over a
// socket, SSE parsing, the middleware chain with the CompatibilityBoundary,
// enforceEvents → transformChunks → verifyEvents, defaultApplyEvents and
// processApplyEvents — against an AG-UI endpoint, for one conversation:
//
//   1. advertise the frontend tools (`tools`) and run;
//   2. when the run leaves frontend calls pending (assistant tool calls naming an
//      advertised tool that no tool message answers — the outcome's
//      `pendingToolCallIds` is recorded and cross-checked), answer each with a
//      tool message (`agent.addMessage`, the client's API for it) and run again;
//   3. stop when nothing is pending (or after --max-runs).
//
// usage: node interop/ts/httpagent.mjs URL [--scenario NAME] [--thread-id ID]
//          [--tools JSON|@FILE] [--user TEXT] [--max-runs N] [--binary 1]
//   --binary 1: ask for the binary binding — HttpAgent with its request's Accept naming
//   application/vnd.ag-ui.event+proto beside text/event-stream (the documented way: the
//   package's HttpAgent asks for SSE only); the client then picks its parser by the
//   answer's Content-Type (transformHttpEventStream → parseProtoStream).
// prints one JSON document:
//   {"outcome": "completed"|"failed", "error", "runs": [{runId, outcome, error,
//    finishOutcome, pendingToolCallIds, answered, messages, state, newMessages}],
//    "messages" (the agent's final messages), "state", "warnings", "consoleErrors"}
//
// Warnings reach console.warn only and are captured. Against a 1.1 producer the
// client warns once per run ("[ag-ui] The producer speaks protocol 1.1; this
// client speaks 1.0 …") — the protocol version mismatch, recorded here and
// documented (docs/conformance.md); the caller decides what to count.
import fs from "node:fs";
import { HttpAgent } from "@ag-ui/client";
import { AGUI_MEDIA_TYPE } from "@ag-ui/proto";
import { captureConsole, errorText, print, usage } from "./lib.mjs";

function parse(argv) {
  const opts = { url: undefined, flags: {} };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith("--")) opts.flags[a.slice(2)] = argv[++i];
    else if (opts.url === undefined) opts.url = a;
  }
  return opts;
}

function jsonArg(value, fallback) {
  if (value === undefined) return fallback;
  return JSON.parse(value.startsWith("@") ? fs.readFileSync(value.slice(1), "utf8") : value);
}

const { url, flags } = parse(process.argv.slice(2));
if (!url) {
  usage(
    "usage: node httpagent.mjs URL [--scenario NAME] [--thread-id ID] [--tools JSON|@FILE] " +
      "[--user TEXT] [--max-runs N]",
  );
}
const scenario = flags.scenario ?? "text";
const tools = jsonArg(flags.tools, []);
const maxRuns = Number(flags["max-runs"] ?? 4);
const frontend = new Set(tools.map((t) => t.name));

class BinaryHttpAgent extends HttpAgent {
  requestInit(input) {
    const init = super.requestInit(input);
    return { ...init, headers: { ...init.headers, Accept: `${AGUI_MEDIA_TYPE}, text/event-stream` } };
  }
}

const Agent = flags.binary ? BinaryHttpAgent : HttpAgent;
const agent = new Agent({
  url,
  threadId: flags["thread-id"] ?? `ts-${scenario}`,
  initialMessages: [{ id: "u-1", role: "user", content: flags.user ?? `scenario ${scenario}` }],
  initialState: {},
});

/** Frontend calls of the thread that no tool message answers, in order. */
function unansweredFrontendCalls(messages) {
  const answered = new Set(messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
  const out = [];
  for (const m of messages) {
    if (m.role !== "assistant") continue;
    for (const call of m.toolCalls ?? []) {
      if (frontend.has(call.function.name) && !answered.has(call.id)) out.push(call);
    }
  }
  return out;
}

const cap = captureConsole();
const runs = [];
let outcome = "completed";
let error = null;
try {
  for (let n = 0; n < maxRuns; n++) {
    let finishOutcome;
    const record = { runId: undefined, outcome: "completed", error: null };
    try {
      const res = await agent.runAgent(
        { tools, context: [], forwardedProps: { scenario } },
        {
          onRunStartedEvent: ({ event }) => void (record.runId = event.runId),
          onRunFinishedEvent: ({ event }) => void (finishOutcome = event.outcome ?? null),
        },
      );
      record.newMessages = res.newMessages;
    } catch (err) {
      record.outcome = "failed";
      record.error = errorText(err);
    }
    record.finishOutcome = finishOutcome ?? null;
    record.messages = structuredClone(agent.messages);
    record.state = structuredClone(agent.state);
    runs.push(record);
    if (record.outcome === "failed") {
      outcome = "failed";
      error = record.error;
      break;
    }
    const pending = unansweredFrontendCalls(agent.messages);
    record.pendingToolCallIds = pending.map((c) => c.id);
    record.answered = [];
    if (pending.length === 0) break;
    for (const call of pending) {
      // the application runs the tool and answers with a tool message (FE-8)
      const message = {
        id: `tool-${call.id}`,
        role: "tool",
        toolCallId: call.id,
        content: `${call.function.name} done with ${call.function.arguments}`,
      };
      agent.addMessage(message);
      record.answered.push(message);
    }
    if (n === maxRuns - 1) {
      outcome = "failed";
      error = `still pending after ${maxRuns} runs: ${record.pendingToolCallIds.join(", ")}`;
    }
  }
} finally {
  cap.restore();
}
print({
  outcome,
  error,
  runs,
  messages: agent.messages,
  state: agent.state,
  warnings: cap.warnings,
  consoleErrors: cap.errors,
});

#!/usr/bin/env node
// interop/ts/differential.mjs — many streams through the OFFICIAL @ag-ui/client 1.0.0
// pipeline and reducer, in one process (tests/test_differential.py).
//
// For each stream: the stages exactly as AbstractAgent.runAgent chains them (frame
// check → CompatibilityBoundary → enforceEvents → transformChunks → verifyEvents,
// lib.mjs stagesObservable), then the official reducer (defaultApplyEvents, its
// mutations applied as processApplyEvents does, lib.mjs reduceEvents). A fatal
// error ends the stream, keeping what was applied before it — as in runAgent.
//
// usage: node interop/ts/differential.mjs FILE
//   FILE  a JSON array of {"id", "events", "input"?} — `input` supplies the initial
//         messages and state, tools, context and forwardedProps (as reducer.mjs --input)
// prints one JSON document: {"node", "results": [{"id", "outcome": "completed"|"failed",
//   "error", "warnings", "messages", "state"}]} in the order of FILE.
import fs from "node:fs";
import {
  buildRunAgentInput,
  captureConsole,
  print,
  reduceEvents,
  stagesObservable,
  usage,
} from "./lib.mjs";

const file = process.argv[2];
if (!file) usage("usage: node differential.mjs FILE  (a JSON array of {id, events, input?})");

const streams = JSON.parse(fs.readFileSync(file, "utf8"));
const results = [];
for (const { id, events, input: runInput = {} } of streams) {
  const cap = captureConsole();
  let r;
  try {
    const input = buildRunAgentInput(events, runInput);
    r = await reduceEvents(stagesObservable(events, { input }), {
      input,
      initialMessages: runInput.messages,
    });
  } catch (err) {
    // a throw outside the observable (never expected): report it as a harness failure
    r = { outcome: "harness-error", error: String(err?.stack ?? err), messages: [], state: null };
  } finally {
    cap.restore();
  }
  results.push({
    id,
    outcome: r.outcome,
    error: r.error,
    warnings: cap.warnings,
    messages: r.messages,
    state: r.state === undefined ? null : r.state,
  });
}
print({ node: process.version, results });

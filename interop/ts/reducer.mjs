#!/usr/bin/env node
// interop/ts/reducer.mjs — the OFFICIAL @ag-ui/client 1.0.0 reducer over an event file.
//
// Runs the official stages (frame check → CompatibilityBoundary → enforceEvents →
// transformChunks → verifyEvents, as in pipeline.mjs) and folds what they deliver
// with the official reducer, defaultApplyEvents (+ processApplyEvents' way of
// applying mutations), in process. agui-tools uses it as the reference for what a
// thread looks like after a stream, and as the peer of our Thread reducer in
// `make bench` (bench/reducer.py runs `--bench N --no-e2e` on the same threads).
//
// usage: node interop/ts/reducer.mjs FILE [--bench N] [--warmup K] [--no-e2e] [--no-boundary]
//          [--no-frame-check] [--max-protocol-version X] [--input RUNINPUT.json] [--agent]
//   FILE     JSON array / NDJSON / conformance fixture ({stream, input, client}). A fixture's
//            `input` (or --input) supplies the initial messages (agent.messages) and state
//            (input.state) and tools/context/forwardedProps, as
//            new HttpAgent({initialMessages, initialState}).runAgent({...}) would.
//   default  prints {"outcome","error","warnings","messages","state"[,"pendingInterrupts"]}
//   --agent  uses HttpAgent.runAgent() with an in-memory fetch instead.
//   --bench N  runs the stages once to get the delivered (verified, chunk-expanded) events,
//            then times N repetitions (after --warmup K, default 1) of defaultApplyEvents ALONE
//            over them (building the run input and the agent, i.e. cloning any initial
//            messages, is done outside the clock), and, unless --no-e2e, N repetitions of
//            stages+reducer end to end.
//            Rates are per delivered event (reducer) and per input event (endToEnd).
//            NB: the official reducer structuredClones the whole message list for every
//            mutation, so its per-event cost grows with the thread: a 1,000-run thread in
//            one fold takes minutes.
import { from } from "rxjs";
import {
  readEventsFile,
  parseArgs,
  runInputFrom,
  captureConsole,
  buildRunAgentInput,
  stagesObservable,
  collect,
  reduceEvents,
  reducerAgent,
  runViaHttpAgent,
  timeRepetitions,
  print,
  usage,
} from "./lib.mjs";

const { file, flags } = parseArgs(process.argv.slice(2));
if (!file) usage("usage: node reducer.mjs FILE [--bench N [--warmup K] [--no-e2e]] [--agent] ...");

const loaded = readEventsFile(file);
const events = loaded.events;
const runInput = runInputFrom(flags, loaded);
const ceiling = flags["max-protocol-version"] ?? loaded.maxProtocolVersion;
const stageOpts = {
  ceiling,
  boundary: !flags["no-boundary"],
  checkFrames: !flags["no-frame-check"],
};
const freshInput = () => buildRunAgentInput(events, runInput, ceiling);

/** stages → reducer, like runAgent (a fatal error ends the run; the mutations so far are kept). */
const endToEnd = () => {
  const input = freshInput();
  return reduceEvents(stagesObservable(events, { ...stageOpts, input }), {
    input,
    initialMessages: runInput.messages,
  });
};

if (flags.bench !== undefined) {
  const n = Number(flags.bench);
  const warmup = flags.warmup !== undefined ? Number(flags.warmup) : 1;
  const cap = captureConsole({ silent: true });
  try {
    const verified = await collect(stagesObservable(events, { ...stageOpts, input: freshInput() }));
    const delivered = verified.delivered;
    // The input and the agent (which clone the initial messages) are built outside the clock.
    const prepare = () => {
      const input = freshInput();
      return { input, agent: reducerAgent(input, runInput.messages) };
    };
    const reducerOnly = ({ input, agent }) => reduceEvents(from(delivered), { input, agent });
    const red = await timeRepetitions(reducerOnly, n, warmup, prepare);
    const e2e = flags["no-e2e"] ? undefined : await timeRepetitions(endToEnd, n, warmup);
    cap.restore();
    print({
      events: delivered.length * n,
      seconds: red.seconds,
      eventsPerSecond: (delivered.length * n) / red.seconds,
      bestSeconds: red.best,
      bestEventsPerSecond: delivered.length / red.best,
      secondsPerRepetition: red.perRepetition,
      repetitions: n,
      warmup,
      note:
        "reducer alone (defaultApplyEvents) over the verified/expanded events; building the " +
        "run input and the agent (cloning the initial messages) is not timed",
      initialMessageCount: (runInput.messages ?? []).length,
      inputEvents: events.length,
      deliveredPerRepetition: delivered.length,
      reducerOutcome: red.last.outcome,
      finalMessageCount: red.last.messages.length,
      ...(e2e && {
        endToEnd: {
          inputEvents: events.length * n,
          seconds: e2e.seconds,
          inputEventsPerSecond: (events.length * n) / e2e.seconds,
          bestSeconds: e2e.best,
          bestInputEventsPerSecond: events.length / e2e.best,
          outcome: e2e.last.outcome,
          note: "stages (boundary+enforce+chunks+verify) + defaultApplyEvents, per input event",
        },
      }),
      pipelineOutcome: verified.outcome,
      pipelineError: verified.error,
      node: process.version,
    });
  } finally {
    cap.restore();
  }
} else if (flags.agent) {
  const cap = captureConsole();
  let r;
  try {
    r = await runViaHttpAgent(events, { runInput, ceiling });
  } finally {
    cap.restore();
  }
  print({ outcome: r.outcome, error: r.error, warnings: cap.warnings, messages: r.messages, state: r.state });
} else {
  const cap = captureConsole();
  let r;
  try {
    r = await endToEnd();
  } finally {
    cap.restore();
  }
  print({
    outcome: r.outcome,
    error: r.error,
    warnings: cap.warnings,
    messages: r.messages,
    state: r.state,
    ...(r.pendingInterrupts?.length ? { pendingInterrupts: r.pendingInterrupts } : {}),
  });
}

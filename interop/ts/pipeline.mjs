#!/usr/bin/env node
// interop/ts/pipeline.mjs — the OFFICIAL @ag-ui/client 1.0.0 consumer pipeline over an event file.
//
// Drives, in process and with no HTTP, the stages AbstractAgent.runAgent chains
// (in its order): frame check → [era shims] → CompatibilityBoundary →
// enforceEvents → transformChunks → verifyEvents. agui-tools uses it as the
// reference consumer and as the peer in `make bench` (bench/pipeline.py runs
// `--bench N` over the same NDJSON corpus our own ConsumerPipeline is timed on).
// The events are parsed (JSON.parse) before any timing starts, so the figure is
// "from parsed objects", like our pipeline fed dicts.
//
// usage: node interop/ts/pipeline.mjs FILE [--bench N] [--warmup K] [--no-boundary]
//          [--no-frame-check] [--max-protocol-version X] [--input RUNINPUT.json] [--agent] [--full]
//   FILE     JSON array of events, NDJSON, or a conformance fixture ({stream, input, client}).
//   default  prints {"outcome","error","warnings","eventTypes"}
//   --full   adds "events" (the delivered events) and "consoleErrors"
//   --agent  runs HttpAgent.runAgent() with an in-memory fetch instead (the whole real path,
//            reducer and runAgent's producer-declaration warning included); --full adds
//            "request", "messages", "state".
//   --bench N  times N repetitions (after --warmup K, default 1) of the stage pipeline; warnings
//            are discarded. Prints {"events","seconds","eventsPerSecond" (all N together),
//            "bestSeconds","bestEventsPerSecond" (fastest single repetition),
//            "secondsPerRepetition","deliveredPerRepetition","outcome","error",...}.
import {
  readEventsFile,
  parseArgs,
  runInputFrom,
  captureConsole,
  buildRunAgentInput,
  stagesObservable,
  collect,
  collectSync,
  runViaHttpAgent,
  timeRepetitions,
  print,
  usage,
} from "./lib.mjs";

const { file, flags } = parseArgs(process.argv.slice(2));
if (!file) usage("usage: node pipeline.mjs FILE [--bench N [--warmup K]] [--agent] [--full] ...");

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

if (flags.bench !== undefined) {
  const n = Number(flags.bench);
  const warmup = flags.warmup !== undefined ? Number(flags.warmup) : 1;
  const cap = captureConsole({ silent: true });
  try {
    const once = () => collectSync(stagesObservable(events, { ...stageOpts, input: freshInput() }));
    const t = await timeRepetitions(once, n, warmup);
    cap.restore();
    print({
      events: events.length * n,
      seconds: t.seconds,
      eventsPerSecond: (events.length * n) / t.seconds,
      bestSeconds: t.best,
      bestEventsPerSecond: events.length / t.best,
      secondsPerRepetition: t.perRepetition,
      repetitions: n,
      warmup,
      eventsPerRepetition: events.length,
      deliveredPerRepetition: t.last.count,
      outcome: t.last.outcome,
      error: t.last.error,
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
  print({
    outcome: r.outcome,
    error: r.error,
    warnings: cap.warnings,
    eventTypes: r.delivered.map((e) => e.type),
    ...(flags.full && {
      events: r.delivered,
      consoleErrors: cap.errors,
      request: r.request,
      messages: r.messages,
      state: r.state,
    }),
  });
} else {
  const cap = captureConsole();
  let r;
  try {
    r = await collect(stagesObservable(events, { ...stageOpts, input: freshInput() }));
  } finally {
    cap.restore();
  }
  print({
    outcome: r.outcome,
    error: r.error,
    warnings: cap.warnings,
    eventTypes: r.delivered.map((e) => e.type),
    ...(flags.full && { events: r.delivered, consoleErrors: cap.errors }),
  });
}

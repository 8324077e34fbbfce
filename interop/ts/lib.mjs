// interop/ts/lib.mjs — shared wiring for pipeline.mjs and reducer.mjs.
//
// WHAT IT DRIVES: the OFFICIAL AG-UI TypeScript client, `@ag-ui/client` 1.0.0
// (pinned in ../package.json, installed with `npm ci --prefix interop`), in
// process, with no HTTP. Every stage that judges or folds events is the
// package's own exported code — CompatibilityBoundary, enforceEvents,
// transformChunks, verifyEvents, defaultApplyEvents, HttpAgent. This file only
// wires them together the way `AbstractAgent.runAgent` does (src/agent/agent.ts
// in the package's source maps).
//
// WHY: agui-tools measures itself side by side with the official client
// (`make bench`, bench/pipeline.py and bench/reducer.py) and uses it as a
// reference consumer. To be a fair peer, the client must run exactly as an
// application would run it, on the same events we feed our own pipeline.
//
// Things worth knowing (details: README.md next to package.json):
// * The npm client implements protocol 1.0; our spec is 1.1. 1.1-only checks
//   (e.g. the RUN_FINISHED/RUN_STARTED threadId agreement) are absent.
// * Warnings only go to console.warn; captureConsole() collects them.
// * With a from(array) source the four stages are synchronous; the reducer
//   (defaultApplyEvents, concatMap(async …)) is asynchronous.
// * defaultApplyEvents reads initial messages from agent.messages and initial
//   state from input.state; each mutation it emits is a structuredClone of the
//   WHOLE message list, so its per-event cost grows with the thread.
// * Run with NODE_ENV unset: development/test make the reducer deep-freeze.
import util from "node:util";
import { createRequire } from "node:module";
import fs from "node:fs";
import { from } from "rxjs";
import { map } from "rxjs/operators";
import {
  AbstractAgent,
  HttpAgent,
  CompatibilityBoundary,
  BackwardCompatibility_0_0_39,
  BackwardCompatibility_0_0_45,
  BackwardCompatibility_0_0_57,
  enforceEvents,
  transformChunks,
  verifyEvents,
  defaultApplyEvents,
  PROTOCOL_VERSION,
} from "@ag-ui/client";
import { compareVersions } from "compare-versions";

const require = createRequire(import.meta.url);

/** The client's own package version: the default peer ceiling (AbstractAgent.maxProtocolVersion). */
export const CLIENT_PACKAGE_VERSION = require("@ag-ui/client/package.json").version;

// ------------------------------------------------------------------ input files

/**
 * Reads an event file: a JSON array of events, NDJSON (one event per line), or a
 * conformance fixture object ({stream, input?, client?: {maxProtocolVersion}}).
 * Returns {events, input?, maxProtocolVersion?}.
 */
export function readEventsFile(path) {
  const text = fs.readFileSync(path, "utf8");
  let whole;
  try {
    whole = JSON.parse(text);
  } catch {
    whole = undefined; // not one JSON document: NDJSON
  }
  if (Array.isArray(whole)) return { events: whole };
  if (whole && typeof whole === "object" && Array.isArray(whole.stream)) {
    return {
      events: whole.stream,
      input: whole.input,
      maxProtocolVersion: whole.client?.maxProtocolVersion,
    };
  }
  if (whole && typeof whole === "object" && Array.isArray(whole.events)) {
    return { events: whole.events, input: whole.input };
  }
  const events = [];
  for (const line of text.split("\n")) {
    if (line.trim() !== "") events.push(JSON.parse(line));
  }
  return { events };
}

const VALUE_FLAGS = new Set(["bench", "warmup", "max-protocol-version", "input"]);

/** `FILE --flag --key value --key=value` → {file, flags}. */
export function parseArgs(argv) {
  const opts = { file: undefined, flags: {} };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      const k = eq < 0 ? a.slice(2) : a.slice(2, eq);
      const v = eq < 0 ? undefined : a.slice(eq + 1);
      if (VALUE_FLAGS.has(k) && v === undefined) opts.flags[k] = argv[++i];
      else opts.flags[k] = v === undefined ? true : v;
    } else if (opts.file === undefined) {
      opts.file = a;
    }
  }
  return opts;
}

/** The run input: --input FILE wins, else the fixture's `input`, else {}. */
export function runInputFrom(flags, loaded) {
  if (flags.input) return JSON.parse(fs.readFileSync(flags.input, "utf8"));
  return loaded.input ?? {};
}

// -------------------------------------------------------------- console capture

/**
 * The client reports warnings only through console.warn ([ag-ui][compat],
 * [ag-ui][enforce], [ag-ui][transform], era-shim texts, the reducer's
 * "No message found …" / "Failed to apply state patch" lines, runAgent's
 * producer-declaration warning) and run failures through console.error on the
 * runAgent path. This swaps both for collectors (or for no-ops when silent).
 */
export function captureConsole({ silent = false } = {}) {
  const warnings = [];
  const errors = [];
  const ow = console.warn;
  const oe = console.error;
  console.warn = silent ? () => {} : (...a) => warnings.push(util.format(...a));
  console.error = silent ? () => {} : (...a) => errors.push(util.format(...a));
  return {
    warnings,
    errors,
    restore() {
      console.warn = ow;
      console.error = oe;
    },
  };
}

// ------------------------------------------------------------- run input / agent

/** Mirrors AbstractAgent's constructor: the era shims a peer ceiling installs, outermost first. */
export function middlewaresFor(ceiling) {
  const middlewares = [];
  if (ceiling === undefined) return middlewares;
  if (compareVersions(ceiling, "0.0.39") <= 0) middlewares.unshift(new BackwardCompatibility_0_0_39());
  if (compareVersions(ceiling, "0.0.45") <= 0) middlewares.unshift(new BackwardCompatibility_0_0_45());
  if (compareVersions(ceiling, "0.0.57") <= 0) middlewares.unshift(new BackwardCompatibility_0_0_57());
  return middlewares;
}

/**
 * Mirrors AbstractAgent.prepareRunAgentInput: the RunAgentInput the stages and
 * the reducer receive. threadId/runId default to the first RUN_STARTED's.
 * Build a fresh one per run: the boundary rewrites input.messages in place.
 */
export function buildRunAgentInput(events, runInput = {}, ceiling) {
  const firstRunStarted = events.find((e) => e && e.type === "RUN_STARTED");
  const messages = structuredClone(runInput.messages ?? []);
  for (const m of messages) if (m && m.subagentRunId === null) delete m.subagentRunId;
  return {
    threadId: runInput.threadId ?? firstRunStarted?.threadId ?? "thread-harness",
    runId: runInput.runId ?? firstRunStarted?.runId ?? "run-harness",
    ...(compareVersions(ceiling ?? CLIENT_PACKAGE_VERSION, CLIENT_PACKAGE_VERSION) >= 0 && {
      protocolVersion: PROTOCOL_VERSION,
    }),
    tools: structuredClone(runInput.tools ?? []),
    context: structuredClone(runInput.context ?? []),
    forwardedProps: structuredClone(runInput.forwardedProps ?? {}),
    state: structuredClone(runInput.state === undefined ? {} : runInput.state),
    messages: messages.filter((m) => m.role !== "activity"),
    ...(runInput.resume !== undefined ? { resume: structuredClone(runInput.resume) } : {}),
  };
}

/** A concrete AbstractAgent whose run() replays an in-memory array (no transport). */
export class ReplayAgent extends AbstractAgent {
  constructor(events, config = {}) {
    super(config);
    this.replayEvents = events;
  }
  run() {
    return from(this.replayEvents);
  }
}

// ------------------------------------------------------------------- the stages

/**
 * The frame check transformHttpEventStream applies to every SSE frame before the
 * middleware chain (same error texts). Events here are already parsed, so this
 * is the only part of the transport the stage path keeps.
 */
function frameCheck(json) {
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new Error("Invalid event: the frame is not a JSON object.");
  }
  if (typeof json.type !== "string" || json.type.length === 0) {
    throw new Error("Invalid event: the frame carries no event type.");
  }
  return json;
}

/**
 * The consumer pipeline as AbstractAgent.runAgent builds it, minus transport,
 * takeUntil(detach), apply and processApplyEvents:
 *
 *   source → [era shims for the ceiling] → CompatibilityBoundary (innermost)
 *          → enforceEvents → transformChunks → verifyEvents
 *
 * The middleware chain is assembled with runAgent's reduceRight, so the
 * boundary is closest to the source and the era shims wrap it.
 */
export function stagesObservable(
  events,
  { input, ceiling, boundary = true, checkFrames = true, debug = false } = {},
) {
  const source = {
    run: () => (checkFrames ? from(events).pipe(map(frameCheck)) : from(events)),
    get messages() {
      return input.messages;
    },
    get state() {
      return input.state;
    },
  };
  const chain = [...middlewaresFor(ceiling), ...(boundary ? [new CompatibilityBoundary()] : [])];
  const chained = chain.reduceRight(
    (next, middleware) => ({
      run: (i) => middleware.run(i, next),
      get messages() {
        return next.messages;
      },
      get state() {
        return next.state;
      },
    }),
    source,
  );
  return chained.run(input).pipe(enforceEvents(debug), transformChunks(debug), verifyEvents(debug));
}

/** Subscribes and collects; resolves {outcome, error, delivered}. Never rejects. */
export function collect(observable$) {
  return new Promise((resolve) => {
    const delivered = [];
    observable$.subscribe({
      next: (e) => delivered.push(e),
      error: (err) => resolve({ outcome: "failed", error: errorText(err), delivered }),
      complete: () => resolve({ outcome: "completed", error: null, delivered }),
    });
  });
}

/** Synchronous drain that only counts (the stages settle synchronously on a from(array) source). */
export function collectSync(observable$) {
  let result;
  let count = 0;
  observable$.subscribe({
    next: () => count++,
    error: (err) => (result = { outcome: "failed", error: errorText(err), count }),
    complete: () => (result = { outcome: "completed", error: null, count }),
  });
  if (result === undefined) throw new Error("pipeline did not settle synchronously");
  return result;
}

export function errorText(err) {
  return err instanceof Error ? err.message : String(err);
}

// ------------------------------------------------------------------- the reducer

/**
 * The agent the reducer folds into, as runAgent has it: a concrete AbstractAgent
 * whose messages are the initial ones (the constructor clones them).
 */
export function reducerAgent(input, initialMessages) {
  return new ReplayAgent([], {
    threadId: input.threadId,
    initialMessages: initialMessages ?? input.messages,
    initialState: input.state,
  });
}

/**
 * Folds events with the official reducer, defaultApplyEvents(input, events$,
 * agent, subscribers, debugLogger) — initial messages from agent.messages,
 * initial state from input.state, as runAgent passes them — and applies its
 * mutations the way AbstractAgent.processApplyEvents does (messages if truthy,
 * state if !== undefined). Pass `agent` to reuse one built beforehand (the
 * benchmark builds it outside the clock). Resolves {outcome, error, messages,
 * state, pendingInterrupts}; on an upstream error the mutations so far are kept.
 */
export function reduceEvents(events$, { input, initialMessages, agent }) {
  agent = agent ?? reducerAgent(input, initialMessages);
  let messages = agent.messages;
  let state = input.state;
  return new Promise((resolve) => {
    const finish = (outcome, error) =>
      resolve({ outcome, error, messages, state, pendingInterrupts: agent.pendingInterrupts });
    defaultApplyEvents(input, events$, agent, [], false).subscribe({
      next: (mutation) => {
        if (mutation.messages) messages = mutation.messages;
        if (mutation.state !== undefined) state = mutation.state;
      },
      error: (err) => finish("failed", errorText(err)),
      complete: () => finish("completed", null),
    });
  });
}

// ------------------------------------------------------------ the whole runAgent

/**
 * HttpAgent.runAgent with an in-memory fetch serving the events as an SSE body
 * (no socket): transport parsing, middlewares, boundary, enforce, chunks,
 * verify, defaultApplyEvents, processApplyEvents and runAgent's built-in
 * producer-declaration warning — the complete official path.
 */
export async function runViaHttpAgent(events, { runInput = {}, ceiling } = {}) {
  const body = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join("");
  let request;
  const fetchFn = async (_url, init) => {
    request = JSON.parse(init.body);
    return new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
  };
  const Agent =
    ceiling === undefined
      ? HttpAgent
      : class PinnedHttpAgent extends HttpAgent {
          // A getter, not an instance field: the base constructor reads the
          // ceiling before subclass fields are initialised.
          get maxProtocolVersion() {
            return ceiling;
          }
        };
  const firstRunStarted = events.find((e) => e && e.type === "RUN_STARTED");
  const agent = new Agent({
    url: "http://in-memory.invalid/agent",
    fetch: fetchFn,
    threadId: runInput.threadId ?? firstRunStarted?.threadId,
    initialMessages: runInput.messages,
    initialState: runInput.state,
  });
  const delivered = [];
  let outcome = "completed";
  let error = null;
  try {
    await agent.runAgent(
      {
        runId: runInput.runId ?? firstRunStarted?.runId,
        tools: runInput.tools,
        context: runInput.context,
        forwardedProps: runInput.forwardedProps,
        ...(runInput.resume !== undefined && { resume: runInput.resume }),
      },
      { onEvent: ({ event }) => void delivered.push(event) },
    );
  } catch (err) {
    outcome = "failed";
    error = errorText(err);
  }
  return { outcome, error, delivered, messages: agent.messages, state: agent.state, request };
}

// --------------------------------------------------------------------- timing

/**
 * Runs `fn` `warmup` times, then `n` times, timing each repetition. `prepare()`
 * (untimed) builds the argument of each call. Returns {seconds (total of the
 * n), best, perRepetition, last}.
 */
export async function timeRepetitions(fn, n, warmup, prepare = () => undefined) {
  for (let i = 0; i < warmup; i++) await fn(prepare());
  const perRepetition = [];
  let last;
  for (let i = 0; i < n; i++) {
    const arg = prepare();
    const t0 = process.hrtime.bigint();
    last = await fn(arg);
    perRepetition.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  const seconds = perRepetition.reduce((a, b) => a + b, 0);
  return { seconds, best: Math.min(...perRepetition), perRepetition, last };
}

export function print(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

export function usage(text) {
  process.stderr.write(text + "\n");
  process.exit(2);
}

"""Reducer throughput: our ``ThreadState`` vs the official ``defaultApplyEvents``.

Threads of 10, 100 and 1,000 runs from ``bench.corpus.runs(n)`` (each run:
streamed text, a tool call with streamed arguments, its result, a chunked
call — the shape of the shared corpus, whose first 1,000 runs *are* the
1,000-run thread). Every event is first put through our consumer pipeline once;
both reducers then fold the same delivered (verified, chunk-expanded) events,
and only the fold is timed — ``ThreadState.apply`` for ours, ``defaultApplyEvents``
(``interop/ts/reducer.mjs --bench``) for theirs. Rates are per delivered event.

Two tables:

* **whole thread** — fold all N runs from an empty thread (one stream);
* **one more run** — fold only run N onto a thread that already holds the
  N−1 runs before it (the history is the run input's messages, as when an
  application calls ``runAgent`` on a long conversation). Building each
  reducer from the history is not timed on either side, so the figure is the
  per-event cost *at* that thread length.

The official reducer emits a ``structuredClone`` of the whole message list for
every event, so its per-event cost grows with the thread and a whole
1,000-run fold takes minutes. It is not run when the measured growth predicts
more than the peer budget (``--peer-budget``); the longest prefix of the same
thread that fits is measured instead and the full time is estimated — the
printed notes say which. The one-more-run table measures it at 1,000 runs
directly.
"""

from __future__ import annotations

import gc
import itertools
import json
import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from agui_tools.app._reducer import ThreadState
from agui_tools.wire._pipeline import ConsumerPipeline

from . import corpus, peers
from .harness import REPEATS, Result

THREADS = (10, 100, 1000)
GOAL_AT, GOAL = 100, 50.0
OURS = "agui-tools ThreadState.apply"
OFFICIAL = "official defaultApplyEvents"

Event = dict[str, Any]


@dataclass
class Pair:
    """One thread length: our result and the official one (or why it is missing)."""

    runs: int
    delivered: int
    ours: Result
    official: Result
    history: int = 0  # messages already in the thread (one-more-run table)
    label: str = ""
    estimate: float | None = None  # seconds the official whole fold would take, if not run


def deliver(events: list[Event]) -> list[Event]:
    """Our pipeline's delivered events for a stream (verified, chunks expanded)."""
    pipe = ConsumerPipeline()
    out = pipe.feed_many(events)
    result = pipe.close()
    assert result.outcome == "completed", result.error
    return out


def fold(thread: ThreadState, events: list[Event]) -> ThreadState:
    apply = thread.apply
    for e in events:
        apply(e)
    return thread


def measure_fold(
    name: str,
    events: list[Event],
    prepare: Callable[[], ThreadState],
    repeats: int = REPEATS,
) -> Result:
    """Best of ``repeats`` folds after a warm-up; ``prepare()`` (untimed) builds each thread."""
    fold(prepare(), events)
    best = math.inf
    for _ in range(repeats):
        thread = prepare()
        gc.collect()
        t0 = time.perf_counter()
        fold(thread, events)
        best = min(best, time.perf_counter() - t0)
    return Result(name, len(events), best)


def split_runs(events: list[Event], k: int) -> int:
    """Index just after the k-th RUN_FINISHED (the first k runs of the stream)."""
    seen = 0
    for i, e in enumerate(events):
        if e["type"] == "RUN_FINISHED":
            seen += 1
            if seen == k:
                return i + 1
    return len(events)


def _official(
    file: Path, delivered: int, *, repeats: int, warmup: int, timeout: float, extra: tuple[str, ...]
) -> tuple[Result, dict[str, Any] | None]:
    args = ("--bench", str(repeats), "--warmup", str(warmup), "--no-e2e", *extra)
    try:
        out = peers.run_node("reducer.mjs", file, *args, timeout=timeout)
    except peers.PeerUnavailable as exc:
        return peers.skipped(OFFICIAL, str(exc)), None
    if out["reducerOutcome"] != "completed" or out["pipelineOutcome"] != "completed":
        reason = f"peer failed: {out.get('pipelineError')}"
        return peers.skipped(OFFICIAL, reason), out
    if out["deliveredPerRepetition"] != delivered:
        reason = f"peer delivered {out['deliveredPerRepetition']:,} events, ours {delivered:,}"
        return peers.skipped(OFFICIAL, reason), out
    return Result(OFFICIAL, delivered, out["bestSeconds"]), out


def _per_event(r: Result) -> float:
    return r.seconds / r.events


def whole_threads(tmp: Path, budget: float) -> tuple[list[Pair], list[str]]:
    pairs: list[Pair] = []
    notes: list[str] = []
    for n in THREADS:
        events = corpus.runs(n)
        delivered = deliver(events)
        ours = measure_fold(
            OURS, delivered, partial(ThreadState, messages=[], state=None), repeats=10
        )
        pair = Pair(n, len(delivered), ours, peers.skipped(OFFICIAL, "not run"))
        pairs.append(pair)
        if n == max(THREADS):
            notes += _longest(tmp, pairs, events, delivered, budget)
            continue
        file = corpus.write_ndjson(events, tmp / f"thread-{n}.ndjson")
        reps, warm = (5, 2) if n <= 10 else (3, 1)
        pair.official, out = _official(
            file, len(delivered), repeats=reps, warmup=warm, timeout=600, extra=()
        )
        final = len(fold(ThreadState(messages=[], state=None), delivered))
        if out is not None and out["finalMessageCount"] != final:
            notes.append(
                f"MISMATCH at {n} runs: the official thread has {out['finalMessageCount']} "
                f"messages, ours {final}."
            )
    return pairs, notes


def _longest(
    tmp: Path, pairs: list[Pair], events: list[Event], delivered: list[Event], budget: float
) -> list[str]:
    """The official whole fold of the longest thread, if the measured growth says it fits.

    Otherwise: the longest prefix of the same thread that fits is measured (its
    own row) and the whole fold is estimated.
    """
    pair, n = pairs[-1], pairs[-1].runs
    measured = [p for p in pairs[:-1] if not isinstance(p.official, peers.Skipped)]
    if len(measured) < 2:
        reasons = [p.official.reason for p in pairs[:-1] if isinstance(p.official, peers.Skipped)]
        pair.official = peers.skipped(OFFICIAL, reasons[0] if reasons else "not run")
        return []
    a, b = measured[-2], measured[-1]
    growth = math.log(_per_event(b.official) / _per_event(a.official)) / math.log(b.runs / a.runs)
    power = max(growth, 1.0)  # a whole-list clone per event: per-event cost at least linear

    def predict(k: int) -> float:
        share = split_runs(events, k) / len(events)
        return float(len(delivered) * share * _per_event(b.official) * (k / b.runs) ** power)

    full = predict(n)
    if full <= budget:
        file = corpus.write_ndjson(events, tmp / f"thread-{n}.ndjson")
        pair.official, _ = _official(
            file, len(delivered), repeats=1, warmup=0, timeout=budget * 5 + 60, extra=()
        )
        return [f"Official whole fold of {n:,} runs: measured once, no warm-up."]
    pair.official = peers.skipped(
        OFFICIAL, f"not run: would take ≈ {full / 60:.0f} min or more (estimated)"
    )
    k = b.runs
    while k + 50 < n and predict(k + 50) <= budget:
        k += 50
    if k == b.runs:
        return [f"Official whole fold of {n:,} runs not run: predicted ≈ {full / 60:.0f} min."]
    cut = split_runs(events, k)
    prefix = deliver(events[:cut])
    file = corpus.write_ndjson(events[:cut], tmp / f"thread-{n}-first-{k}.ndjson")
    off, _ = _official(file, len(prefix), repeats=1, warmup=0, timeout=budget * 5 + 60, extra=())
    ours = measure_fold(OURS, prefix, partial(ThreadState, messages=[], state=None), repeats=10)
    pairs.append(Pair(k, len(prefix), ours, off, label=f"first {k:,} runs of the {n:,}-run thread"))
    if isinstance(off, peers.Skipped):
        return []
    g2 = max(1.0, math.log(_per_event(off) / _per_event(b.official)) / math.log(k / b.runs))
    pair.estimate = len(delivered) * _per_event(off) * (n / k) ** g2
    return [
        f"Official whole fold of {n:,} runs not run: growth measured at {a.runs:,} and "
        f"{b.runs:,} runs predicts ≥ {full / 60:.0f} min, over the {budget:.0f} s peer budget "
        f"(`--peer-budget`). Measured instead: the first {k:,} runs of the same thread "
        f"({len(prefix):,} events), once, no warm-up: {off.seconds:.1f} s. Whole-fold "
        f"estimates: ≈ {pair.estimate / 60:.1f} min extrapolating per-event cost ∝ "
        f"runs^{g2:.2f} ({b.runs:,}→{k:,} runs), and the sum of the one-more-run costs "
        f"(measured up to {n:,} runs, interpolated in between)."
    ]


def summed_estimate(delivered: list[Event], more: list[Pair]) -> float | None:
    """The official whole fold, estimated as the sum of its one-more-run costs.

    The per-event cost at k runs is interpolated linearly between the thread
    lengths measured in the one-more-run table; every event of run k is
    charged at that cost.
    """
    points = [
        (p.runs, _per_event(p.official)) for p in more if not isinstance(p.official, peers.Skipped)
    ]
    if len(points) < 2:
        return None

    def cost(k: int) -> float:
        for (k0, c0), (k1, c1) in itertools.pairwise(points):
            if k <= k1 or (k1, c1) == points[-1]:
                return c0 + (c1 - c0) * (k - k0) / (k1 - k0)
        raise AssertionError  # pragma: no cover

    total, run = 0.0, 1
    for e in delivered:
        total += cost(run)
        if e["type"] == "RUN_FINISHED":
            run += 1
    return total


def one_more_run(tmp: Path) -> list[Pair]:
    pairs: list[Pair] = []
    for n in THREADS:
        events = corpus.runs(n)
        cut = split_runs(events, n - 1)
        history = fold(ThreadState(messages=[], state=None), deliver(events[:cut])).messages
        last = deliver(events[cut:])
        # ~70 events fold in ~0.1 ms: take the best of many folds, not of 5
        ours = measure_fold(
            OURS, last, partial(ThreadState, messages=history, state=None), repeats=50
        )
        file = corpus.write_ndjson(events[cut:], tmp / f"last-of-{n}.ndjson")
        hist_file = tmp / f"history-{n}.json"
        hist_file.write_text(json.dumps({"messages": history}))
        off, _ = _official(
            file,
            len(last),
            repeats=5 if n < 1000 else 3,
            warmup=2 if n < 1000 else 1,
            timeout=600,
            extra=("--input", str(hist_file)),
        )
        pairs.append(Pair(n, len(last), ours, off, history=len(history)))
    return pairs


def same_thread_check(tmp: Path, n: int = 100) -> str:
    """Do both reducers end with the same messages on the n-run thread?"""
    events = corpus.runs(n)
    ours = fold(ThreadState(messages=[], state=None), deliver(events)).messages
    file = corpus.write_ndjson(events, tmp / f"check-{n}.ndjson")
    try:
        out = peers.run_node("reducer.mjs", file)
    except peers.PeerUnavailable as exc:
        return f"Final messages vs the official reducer: not checked ({exc})."
    same = out["outcome"] == "completed" and out["messages"] == ours
    return f"Final messages on the {n}-run thread ({len(ours)} messages): " + (
        "identical to the official reducer's." if same else "DIFFERENT from the official's!"
    )


@dataclass
class Report:
    whole: list[Pair]
    more: list[Pair]
    notes: list[str]


def results(peer_budget: float = 15.0) -> Report:
    with tempfile.TemporaryDirectory(prefix="agui-bench-") as tmpdir:
        tmp = Path(tmpdir)
        whole, notes = whole_threads(tmp, peer_budget)
        more = one_more_run(tmp)
    for pair in whole:
        if pair.estimate is not None:
            summed = summed_estimate(deliver(corpus.runs(pair.runs)), more)
            if summed is not None:
                notes.append(
                    f"Summed one-more-run estimate of the official whole fold of {pair.runs:,} "
                    f"runs: ≈ {summed / 60:.1f} min."
                )
            low, high = sorted([pair.estimate, summed or pair.estimate])
            span = f"{low / 60:.0f}–{high / 60:.0f}" if high / low > 1.15 else f"{high / 60:.0f}"
            pair.official = peers.skipped(
                OFFICIAL, f"not run: would take ≈ {span} min (estimated, see notes)"
            )
    longest = max(THREADS)
    thread = fold(ThreadState(messages=[], state=None), deliver(corpus.runs(longest)))
    t0 = time.perf_counter()
    count = len(thread.messages)
    notes.append(
        f"Reading our `ThreadState.messages` once at {longest:,} runs ({count:,} wire messages; "
        f"not part of any fold timing): {1e3 * (time.perf_counter() - t0):.1f} ms."
    )
    with tempfile.TemporaryDirectory(prefix="agui-bench-") as tmpdir:
        notes.append(same_thread_check(Path(tmpdir)))
    return Report(whole, more, notes)


def _cells(pair: Pair) -> list[str]:
    off = pair.official
    if isinstance(off, peers.Skipped):
        return [peers.rate(pair.ours), peers.micros(pair.ours), off.reason, "—", "—"]
    return [
        peers.rate(pair.ours),
        peers.micros(pair.ours),
        peers.rate(off),
        peers.micros(off),
        f"{pair.ours.rate / off.rate:,.0f}×",
    ]


def report(rep: Report) -> str:
    ours_cols = ["ours events/s", "ours µs/event", "official events/s", "official µs/event"]
    rows = [
        [pair.label or f"{pair.runs:,} runs", f"{pair.delivered:,}", *_cells(pair)]
        for pair in rep.whole
    ]
    text = peers.markdown(
        "Reducer, whole thread: fold N runs from an empty thread "
        f"({OURS} vs {OFFICIAL}, per delivered event, best of N)",
        ["thread", "events", *ours_cols, "ours ÷ official"],
        rows,
        "lrrrrrr",
    )
    rows = [
        [f"{pair.runs:,} runs", f"{pair.history:,}", f"{pair.delivered:,}", *_cells(pair)]
        for pair in rep.more
    ]
    text += "\n" + peers.markdown(
        "Reducer, one more run: fold run N onto the N−1 runs before it "
        "(history given as the initial messages; per-event cost at that length)",
        ["thread", "history messages", "events", *ours_cols, "ours ÷ official"],
        rows,
        "lrrrrrrr",
    )
    notes = list(rep.notes)
    at = next((p for p in rep.whole if p.runs == GOAL_AT and not p.label), None)
    if at is not None and not isinstance(at.official, peers.Skipped):
        x = at.ours.rate / at.official.rate
        verdict = "met" if x >= GOAL else "NOT met"
        notes.append(
            f"Goal ≥ {GOAL:.0f}× the official reducer at {GOAL_AT} runs: {x:,.0f}× — {verdict}."
        )
    else:
        notes.append(f"Goal ≥ {GOAL:.0f}× the official reducer at {GOAL_AT} runs: not measured.")
    first, last = rep.more[0], rep.more[-1]
    notes.append(
        f"Per-event cost from {first.runs:,} to {last.runs:,} runs (one-more-run table): ours "
        f"×{_per_event(last.ours) / _per_event(first.ours):.1f}"
        + (
            ""
            if isinstance(last.official, peers.Skipped) or isinstance(first.official, peers.Skipped)
            else f", official ×{_per_event(last.official) / _per_event(first.official):.0f}"
        )
        + "."
    )
    notes.append(
        "Only the fold is timed. The official reducer's output is a snapshot of the whole "
        "message list after every event; ours folds in place and builds the wire messages "
        "when `ThreadState.messages` is read (not timed here)."
    )
    return text + "\n" + "\n".join(f"* {n}" for n in notes) + "\n"

"""OpenTelemetry traces, through ``opentelemetry-api`` only (the ``otel`` extra).

The faces call the few functions here; nothing else imports OpenTelemetry, and only on the
first span. Without the API, or with no SDK configured, all are no-ops; a span that does
not record is ``None``, so its attributes are never computed. Argument values, results and
text are never recorded — their sizes are — unless a tool opts in
(``Session.tool(trace_payloads=True)``). Attribute names: docs/observability.md.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

__all__ = [
    "agent_run",
    "call_span",
    "end_span",
    "extracted",
    "inject",
    "run_span",
    "span",
    "store_op",
]

_UNSET: Any = object()
_api: Any = _UNSET  # (trace, propagate, context) once loaded; None: absent or disabled
_provider: Any = None  # a TracerProvider of this library's own (tests, bench); None: the global
_tracer: Any = None
_meter_provider: Any = None  # a MeterProvider of this library's own (tests); None: the global
_meters: Any = None  # the instruments (:class:`_Meters`) once made
_RUNS: OrderedDict[tuple[str, str], Any] = OrderedDict()  # (thread, run) → the run span's context
_RUNS_KEPT = 256
RECHECK = 1.0
"""Seconds between looks at the global providers while none is configured: a provider
set after the first span is used from at most this much later on."""
_tracer_next_check = 0.0
_meters_next_check = 0.0

SCOPE = "agui_tools"


def _load() -> Any:
    global _api
    if _api is _UNSET:
        try:
            from opentelemetry import context, propagate, trace
        except ImportError:  # the otel extra is not installed: every span is a no-op
            _api = None
        else:
            _api = (trace, propagate, context)
    return _api


def use(provider: Any = None, *, meter_provider: Any = None, enabled: bool = True) -> None:
    """Send this library's spans to ``provider`` and its measurements to
    ``meter_provider`` (``None``: the global ones); with ``enabled=False``, behave as
    if OpenTelemetry were not installed. For tests and the bench; an application
    configures the global providers instead."""
    global _api, _provider, _tracer, _meter_provider, _meters
    global _tracer_next_check, _meters_next_check
    _api = _UNSET if enabled else None
    _provider, _tracer = provider, None
    _meter_provider, _meters = meter_provider, None
    _tracer_next_check = _meters_next_check = 0.0
    _RUNS.clear()


def _get_tracer() -> Any:
    global _tracer, _tracer_next_check
    api = _load()
    if api is None:
        return None
    if _tracer is None:
        now = time.monotonic()
        if now < _tracer_next_check:
            return None
        _tracer_next_check = now + RECHECK
        from ._version import __version__

        provider = _provider if _provider is not None else api[0].get_tracer_provider()
        if isinstance(provider, api[0].ProxyTracerProvider | api[0].NoOpTracerProvider):
            # no SDK configured (yet): nothing would record — stay a no-op, and look
            # again within RECHECK s (an application may set its provider later)
            return None
        _tracer = provider.get_tracer(SCOPE, __version__)
    return _tracer


class _Meters:
    """The instruments (names and attributes: docs/observability.md)."""

    def __init__(self, meter: Any) -> None:
        self.client_runs = meter.create_counter(
            "agui.client.runs", unit="{run}", description="runs sent, by status"
        )
        self.client_events = meter.create_counter(
            "agui.client.events", unit="{event}", description="events received"
        )
        self.violations = meter.create_counter(
            "agui.client.violations", unit="{violation}", description="rule IDs broken"
        )
        self.tool_calls = meter.create_counter(
            "agui.tool_calls", unit="{call}", description="tool calls, by disposition"
        )
        self.tool_duration = meter.create_histogram(
            "agui.tool.duration", unit="s", description="execute_tool: claim, handler, finish"
        )
        self.store_duration = meter.create_histogram(
            "agui.store.duration", unit="s", description="one store operation"
        )
        self.agent_runs = meter.create_counter(
            "agui.agent.runs", unit="{run}", description="runs served, by terminal event"
        )
        self.agent_events = meter.create_counter(
            "agui.agent.events", unit="{event}", description="events emitted"
        )
        self.refusals = meter.create_counter(
            "agui.agent.refusals", unit="{refusal}", description="emitter refusals, by rule"
        )


def _get_meters() -> _Meters | None:
    global _meters, _meters_next_check
    api = _load()
    if api is None:
        return None
    if _meters is None:
        now = time.monotonic()
        if now < _meters_next_check:
            return None
        _meters_next_check = now + RECHECK
        from opentelemetry import metrics

        from ._version import __version__

        provider = _meter_provider if _meter_provider is not None else metrics.get_meter_provider()
        if type(provider).__name__ in ("_ProxyMeterProvider", "NoOpMeterProvider"):
            return None  # no SDK configured (yet): look again next time
        _meters = _Meters(provider.get_meter(SCOPE, __version__))
    made: _Meters = _meters
    return made


@contextlib.contextmanager
def span(name: str, *, parent: Any = None, kind: str = "INTERNAL") -> Iterator[Any]:
    """A span around the block, current in it; yields it, or ``None`` when nothing
    records. ``parent`` is a span (``None``: the current context). An exception
    leaving the block is recorded on the span and sets its status to error."""
    tracer = _get_tracer()
    if tracer is None:
        yield None
        return
    trace = _api[0]
    context = trace.set_span_in_context(parent) if parent is not None else None
    # the SDK's own recording would copy the exception's message (user data) into the
    # span's status and an ``exception`` event: :func:`fail` records it redacted instead
    with tracer.start_as_current_span(
        name,
        context=context,
        kind=getattr(trace.SpanKind, kind),
        record_exception=False,
        set_status_on_exception=False,
    ) as s:
        recording = s.is_recording()
        try:
            yield s if recording else None
        except BaseException as exc:
            if recording:
                fail(s, exc, keep_type=True)
            raise


def start(name: str, *, parent: Any = None, kind: str = "INTERNAL") -> Any:
    """A span started now and not made current (ended by :func:`end_span`); ``None``
    when nothing records."""
    tracer = _get_tracer()
    if tracer is None:
        return None
    trace = _api[0]
    context = trace.set_span_in_context(parent) if parent is not None else None
    s = tracer.start_span(name, context=context, kind=getattr(trace.SpanKind, kind))
    if not s.is_recording():
        s.end()
        return None
    return s


def end_span(s: Any, error: BaseException | None = None) -> None:
    if s is None:
        return
    if error is not None:
        fail(s, error)
    s.end()


def redacted(error: BaseException) -> dict[str, str]:
    """All a span may say of an exception: its type and the rule ID it names — never
    its message, which may quote an answer, an argument or an agent's error body."""
    said = {"exception.type": type(error).__qualname__}
    rule = getattr(error, "rule", None)
    if isinstance(rule, str) and rule:
        said["agui.rule"] = rule
    return said


def fail(s: Any, error: BaseException, *, keep_type: bool = False) -> None:
    """Mark ``s`` failed by ``error``: ``error.type``, an ``exception`` event and the
    error status, each :func:`redacted` (``keep_type``: an ``error.type`` already
    set, the cause a handler gave, is kept)."""
    if s is None:
        return
    from opentelemetry.trace import Status, StatusCode

    if not (keep_type and "error.type" in getattr(s, "attributes", {})):
        s.set_attribute("error.type", type(error).__qualname__)
    s.add_event("exception", redacted(error))
    s.set_status(Status(StatusCode.ERROR))


def within(s: Any) -> contextlib.AbstractContextManager[Any]:
    """The block runs with ``s`` current (``None``: as is); ``s`` is not ended."""
    if s is None:
        return _NOTHING
    return _api[0].use_span(  # type: ignore[no-any-return]
        s, end_on_exit=False, record_exception=False, set_status_on_exception=False
    )


# -- propagation ------------------------------------------------------------------------


def inject(headers: Mapping[str, str]) -> Mapping[str, str]:
    """``headers`` with the current trace context (``traceparent``) added, when any."""
    if _get_tracer() is None:
        return headers
    carrier: MutableMapping[str, str] = {}
    _api[1].inject(carrier)
    return {**headers, **carrier} if carrier else headers


@contextlib.contextmanager
def extracted(carrier: Mapping[str, str]) -> Iterator[None]:
    """The block runs in the trace context the request's headers carry (none: as is)."""
    api = _load()
    if api is None or "traceparent" not in carrier or _get_tracer() is None:
        yield
        return
    token = api[2].attach(api[1].extract(carrier))
    try:
        yield
    finally:
        api[2].detach(token)


# -- the application side ---------------------------------------------------------------


@contextlib.contextmanager
def send_span(thread_id: str | None) -> Iterator[Any]:
    """One span per ``Session.send``: the root of the turns it carries (each run sent,
    each call disposed of), so a send is one trace."""
    with span("agui.send") as s:
        if s is not None and thread_id is not None:
            s.set_attribute("agui.thread.id", thread_id)
        yield s


def sent(s: Any, result: Any, thread_id: str | None) -> None:
    if s is not None:
        if thread_id is not None:
            s.set_attribute("agui.thread.id", thread_id)
        s.set_attribute("agui.run.status", result.status)


@contextlib.contextmanager
def run_span(run_input: Mapping[str, Any], transport: str) -> Iterator[Any]:
    """One span per run sent (kind CLIENT), current while the run streams."""
    with span("agui.run", kind="CLIENT") as s:
        if s is not None:
            thread_id, run_id = str(run_input.get("threadId")), str(run_input.get("runId"))
            s.set_attribute("agui.thread.id", thread_id)
            s.set_attribute("agui.run.id", run_id)
            s.set_attribute("agui.transport", transport)
            _RUNS[(thread_id, run_id)] = s
            while len(_RUNS) > _RUNS_KEPT:
                _RUNS.popitem(last=False)
        yield s


def run_ended(s: Any, result: Any, events: int) -> None:
    m = _get_meters()
    if m is not None:
        m.client_runs.add(1, {"agui.run.status": result.status})
        m.client_events.add(events)
        for rule in [w.rule for w in result.warnings] + (
            [result.violation.rule] if result.violation is not None else []
        ):
            m.violations.add(1, {"agui.rule": rule})
    if s is None:
        return
    s.set_attribute("agui.run.status", result.status)
    s.set_attribute("agui.run.events", events)
    rules = [w.rule for w in result.warnings]
    if result.violation is not None:
        rules.insert(0, result.violation.rule)
        s.set_attribute("agui.run.violation.rule", result.violation.rule)
    if rules:
        s.set_attribute("agui.run.violations", rules)
    if result.status in ("error", "truncated", "rejected"):
        from opentelemetry.trace import Status, StatusCode

        s.set_status(Status(StatusCode.ERROR, result.status))


def call_span(call: Any, *, restored: bool = False, streamed: float | None = None) -> Any:
    """The span of one tool call under disposition (not current: the session's loop
    spans many steps), a child of the span of the run that made the call when this
    process sent it (else, and for a call a restore disposed of, of the current span)."""
    parent = None if restored else _RUNS.get((call.thread_id, str(call.run_id)))
    s = start(f"agui.tool_call {call.name}", parent=parent)
    if s is not None:
        s.set_attribute("gen_ai.tool.name", call.name)
        s.set_attribute("gen_ai.tool.call.id", call.call_id)
        s.set_attribute("agui.thread.id", call.thread_id)
        if call.run_id is not None:
            s.set_attribute("agui.run.id", call.run_id)
        s.set_attribute("agui.tool_call.argument_bytes", len(call.text.encode()))
        s.set_attribute("agui.tool_call.status.initial", str(call.status))
        if streamed is not None:
            s.set_attribute("agui.tool_call.stream_duration", streamed)
    return s


def call_ended(s: Any, call: Any, error: BaseException | None = None) -> None:
    m = _get_meters()
    if m is not None:
        outcome = call.answer.outcome if call.answer is not None else "unanswered"
        m.tool_calls.add(1, {"gen_ai.tool.name": call.name, "agui.tool_call.outcome": outcome})
    if s is None:
        return
    s.set_attribute("agui.tool_call.status", str(call.status))
    answer = call.answer
    if answer is not None:
        s.set_attribute("agui.tool_call.outcome", answer.outcome)
        s.set_attribute(
            "agui.tool_call.outcome_unknown", (answer.error or "").startswith("outcome unknown")
        )
        if answer.decided_by is not None:
            s.set_attribute("agui.tool_call.decided_by", answer.decided_by)
    if error is not None:
        fail(s, error)
    s.end()


_RESTORED: weakref.WeakSet[Any] = weakref.WeakSet()


def restored(conversation: Any) -> None:
    """The calls a restore disposed of (once per conversation): a span each, with
    ``agui.tool_call.restored`` — a call whose execution started and left no answer
    reads ``agui.tool_call.outcome_unknown`` true, never "not run"."""
    if (_get_tracer() is None and _get_meters() is None) or conversation in _RESTORED:
        return
    _RESTORED.add(conversation)
    for call in conversation._calls.values():
        if call.answer is None:
            continue
        s = call_span(call, restored=True)
        if s is not None:
            s.set_attribute("agui.tool_call.restored", True)
        call_ended(s, call)


def consent_start(parent: Any) -> Any:
    """The consent span of a call (its decision set by :func:`consent_end`)."""
    return start("agui.consent", parent=parent)


def consent_end(s: Any, approved: bool, decided_by: str, asked: bool) -> None:
    """``decided_by`` is who decided — ``user``, ``system`` (nobody could answer the
    prompt) or ``policy`` (nobody was asked) —, never a user for a call no user saw."""
    if s is None:
        return
    s.set_attribute("agui.consent.decision", "approved" if approved else "declined")
    s.set_attribute("agui.consent.decided_by", decided_by)
    s.set_attribute("agui.consent.asked", asked)
    s.end()


@contextlib.contextmanager
def execute_tool(call: Any, parent: Any, payloads: bool) -> Iterator[Any]:
    """``execute_tool {name}`` (GenAI semantic conventions), current while it runs, so
    the store's claim and finish, and the handler's own spans, nest under it."""
    m = _get_meters()
    t0 = time.perf_counter()
    outcome = "error"  # an exception left the block
    try:
        with span(f"execute_tool {call.name}", parent=parent) as s:
            if s is not None:
                s.set_attribute("gen_ai.operation.name", "execute_tool")
                s.set_attribute("gen_ai.tool.name", call.name)
                s.set_attribute("gen_ai.tool.call.id", call.call_id)
                s.set_attribute("gen_ai.tool.type", "function")
                if payloads:
                    s.set_attribute("gen_ai.tool.call.arguments", _json(call.effective_arguments))
            yield s
            outcome = call.answer.outcome if call.answer is not None else "error"
    finally:
        if m is not None:
            m.tool_duration.record(
                time.perf_counter() - t0,
                {"gen_ai.tool.name": call.name, "agui.tool.outcome": outcome},
            )


def executed(s: Any, answer: Any, payloads: bool) -> None:
    if s is None:
        return
    s.set_attribute("agui.tool.outcome", answer.outcome)
    content = answer.content if isinstance(answer.content, str) else _json(answer.content)
    s.set_attribute("agui.tool.result_bytes", len(content.encode()))
    if payloads:
        s.set_attribute("gen_ai.tool.call.result", content)
    if answer.outcome != "executed":
        if "error.type" not in getattr(s, "attributes", {}):
            s.set_attribute("error.type", "tool_error")
        from opentelemetry.trace import Status, StatusCode

        s.set_status(Status(StatusCode.ERROR))


def handler_failed(s: Any, error: BaseException) -> None:
    if s is not None:
        s.set_attribute("error.type", type(error).__qualname__)


def store_op(method: str, writes: bool) -> contextlib.AbstractContextManager[None]:
    """The context of one store operation (the shared no-op when nothing records)."""
    if _get_tracer() is None and _get_meters() is None:
        return _NOTHING
    return _store_op(method, writes)


_NOTHING: contextlib.nullcontext[None] = contextlib.nullcontext()


@contextlib.contextmanager
def _store_op(method: str, writes: bool) -> Iterator[None]:
    """One store operation (``agui.store {method}``); ``agui.store.outcome`` is ``ok``,
    ``failed`` (a read failed: nothing was written) or ``unknown`` (a write failed:
    whether it was written is not known)."""
    m = _get_meters()
    t0 = time.perf_counter()
    outcome = "ok"
    with span(f"agui.store {method}") as s:
        if s is None and m is None:
            yield
            return
        if s is not None:
            s.set_attribute("agui.store.operation", method)
        try:
            yield
        except BaseException as exc:
            outcome = "unknown" if writes else "failed"
            if s is not None:
                s.set_attribute("agui.store.outcome", outcome)
                fail(s, exc)
            raise
        else:
            if s is not None:
                s.set_attribute("agui.store.outcome", "ok")
        finally:
            if m is not None:
                m.store_duration.record(
                    time.perf_counter() - t0,
                    {"agui.store.operation": method, "agui.store.outcome": outcome},
                )


# -- the agent side ---------------------------------------------------------------------


_AGENT_SPAN: contextvars.ContextVar[Any] = contextvars.ContextVar("agui_agent_span", default=None)
"""The span of the run being served, in the agent's task: where refusals are recorded
(not the current span, which may be one the agent opened itself)."""


@contextlib.contextmanager
def agent_run(run_input: Mapping[str, Any]) -> Iterator[Any]:
    """One span per run served (kind SERVER): a child of the client's run span when the
    request carried its context."""
    with span("agui.agent.run", kind="SERVER") as s:
        if s is None:
            yield s
            return
        s.set_attribute("agui.thread.id", str(run_input.get("threadId")))
        s.set_attribute("agui.run.id", str(run_input.get("runId")))
        token = _AGENT_SPAN.set(s)
        try:
            yield s
        finally:
            _AGENT_SPAN.reset(token)


def agent_ended(s: Any, channel: Any) -> None:
    m = _get_meters()
    if m is not None:
        m.agent_runs.add(1, {"agui.run.terminal": channel.ended_with or "none"})
        m.agent_events.add(channel.pushed)
    if s is None:
        return
    s.set_attribute("agui.agent.events", channel.pushed)
    if channel.ended_with is not None:
        s.set_attribute("agui.run.terminal", channel.ended_with)


def refused(error: Any) -> None:
    """The emitter refused what the agent asked of it (a protocol rule it would
    break) — recorded as the refusal is made, so one the agent catches is too: an event
    on the agent's run span (the current span outside a run), counted in
    ``agui.agent.refusals``."""
    api = _load()
    if api is None:
        return
    rule = str(getattr(error, "rule", "") or "")
    m = _get_meters()
    if m is not None:
        m.refusals.add(1, {"agui.rule": rule})
    s = _AGENT_SPAN.get()
    if s is None:
        s = api[0].get_current_span()
    if not s.is_recording():
        return
    s.add_event("agui.emitter.refusal", {"agui.rule": rule})
    count = getattr(s, "attributes", {}).get("agui.agent.refusals", 0)
    s.set_attribute("agui.agent.refusals", count + 1)


_DECISION_FIELDS = (
    ("threadId", "agui.thread.id"),
    ("runId", "agui.run.id"),
    ("toolCallId", "gen_ai.tool.call.id"),
    ("interruptId", "agui.interrupt.id"),
    ("tool", "gen_ai.tool.name"),
    ("decidedBy", "agui.consent.decided_by"),
    ("argumentsShown", "agui.consent.arguments_shown"),
    ("argumentsApproved", "agui.consent.arguments_approved"),
    ("expiresAt", "agui.consent.expires_at"),
)


def decided(decision: Mapping[str, Any]) -> None:
    """A consent decision the store just recorded (with its ledger entry): an
    ``agui.decision`` event on the current span (the store operation's) — its ids,
    who decided, the arguments' hashes; never the arguments, a reason or a name."""
    api = _load()
    if api is None:
        return
    s = api[0].get_current_span()
    if not s.is_recording():
        return
    attributes: dict[str, Any] = {
        name: value for key, name in _DECISION_FIELDS if isinstance(value := decision.get(key), str)
    }
    attributes["agui.consent.decision"] = "approved" if decision.get("approved") else "declined"
    principal = decision.get("principal")
    if isinstance(principal, Mapping) and isinstance(principal.get("id"), str):
        attributes["agui.consent.principal"] = principal["id"]
        attributes["agui.consent.authenticated"] = "authenticatedBy" in principal
    s.add_event("agui.decision", attributes)


def _json(value: Any) -> str:
    import orjson

    return orjson.dumps(value).decode()

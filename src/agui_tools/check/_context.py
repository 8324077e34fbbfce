"""What cases share while one check runs: the probe, the settings, the streams seen.

Several cases read one exchange (the frontend round trip feeds five), so exchanges are
made once and cached; every stream received is remembered for the cases judging
"whenever the agent did X".
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._version import PROTOCOL_VERSION
from ..wire._framing import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from ._judge import Judged, judge_stream
from ._probe import STREAM_CAP, Probe
from ._report import CaseResult, Exchange, Finding, Verdict

__all__ = ["DEFAULT_PROMPTS", "DEFAULT_TOOLS", "Context", "Settings", "Stream"]

DEFAULT_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "name": "get_weather",
        "description": "Look up the current weather for a city. The application runs this tool "
        "and returns the forecast.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "the city's name"}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
    {
        "name": "confirm_order",
        "description": "Ask the user to confirm an order before it is placed. The application "
        "shows the order and returns the user's answer.",
        "parameters": {
            "type": "object",
            "properties": {
                "item": {"type": "string"},
                "quantity": {"type": "integer", "minimum": 1},
            },
            "required": ["item", "quantity"],
            "additionalProperties": False,
        },
    },
)
"""The frontend tools advertised when no ``--tools`` are given."""

DEFAULT_PROMPTS: dict[str, str] = {
    "get_weather": "What is the weather in Paris right now? Use the get_weather tool.",
    "confirm_order": "Order two blue widgets for me; confirm the order with the confirm_order "
    "tool first.",
}
"""The user message sent to invite a call of each default frontend tool, when no
``--prompt`` is given."""


@dataclass(frozen=True)
class Settings:
    """How the check runs (the CLI's flags, :func:`check_agent`'s arguments)."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout: float = 10.0
    strict: bool = False
    tools: Sequence[Mapping[str, Any]] = DEFAULT_TOOLS
    prompt: str | None = None
    oversize_bytes: int = 16 * 1024 * 1024
    interrupt_prompt: str | None = None
    max_stream_bytes: int = STREAM_CAP
    """What the checker reads of one answer before it stops (a ``LIMIT`` warning)."""

    def prompt_for(self, tools: Sequence[Mapping[str, Any]]) -> str:
        if self.prompt:
            return self.prompt
        for tool in tools:
            if tool["name"] in DEFAULT_PROMPTS:
                return DEFAULT_PROMPTS[tool["name"]]
        if tools:
            return f"Please call the {tools[0]['name']} tool now."
        return "Say hello in one short sentence."


@dataclass
class Stream:
    """One request the check made and, when a stream came back, its judgement."""

    input: dict[str, Any]
    exchange: Exchange
    judged: Judged | None
    binary: bool = False
    """The answer was the binary binding (protobuf frames, TRANS-7), not SSE."""
    resumable: bool = False
    """The answer confirmed the resumable extension (``Agui-Resumable: 1``, RESUME-1)."""

    @property
    def streamed(self) -> bool:
        return self.judged is not None


def new_input(
    *,
    user: str,
    tools: Sequence[Mapping[str, Any]] | None = (),
    thread_id: str | None = None,
    messages: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """A well-formed RunAgentInput, declaring the version this checker speaks (INPUT-4)."""
    history = [dict(m) for m in messages]
    history.append({"id": f"msg-{uuid.uuid4().hex[:12]}", "role": "user", "content": user})
    out: dict[str, Any] = {
        "threadId": thread_id or f"check-thread-{uuid.uuid4().hex[:12]}",
        "runId": f"check-run-{uuid.uuid4().hex[:12]}",
        "protocolVersion": PROTOCOL_VERSION,
        "messages": history,
    }
    if tools is not None:
        out["tools"] = [dict(t) for t in tools]
    return out


class Context:
    """Shared by the cases of one check run."""

    def __init__(self, settings: Settings, probe: Probe) -> None:
        self.settings = settings
        self.probe = probe
        self.streams: list[Stream] = []
        self.plain_stalled = False
        """The plain run (``lifecycle.stream``'s) did not finish within the time bound."""
        self._cache: dict[str, Any] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def send(
        self,
        res: CaseResult,
        label: str,
        run_input: Mapping[str, Any] | bytes,
        *,
        judge_as: Mapping[str, Any] | None = None,
        accept: str = "text/event-stream",
        stop_after: int | None = None,
    ) -> Stream:
        """POST for case ``res``; judge an event stream against its input.

        ``judge_as``: the input a stream is judged against when the bytes sent
        were not one (an input with an unknown member is judged as the input
        it stands for).
        """
        exchange = await self.probe.post(
            label, run_input, res.exchanges, accept=accept, stop_after=stop_after
        )
        judged = None
        basis = judge_as if judge_as is not None else run_input
        sent = self.probe.sent(exchange)
        if _is_stream(exchange) and isinstance(basis, Mapping):
            judged = judge_stream(
                exchange,
                0,  # re-indexed to each case's transcript by findings_of()
                basis,
                abandoned=stop_after is not None or sent.slow,
                capped=sent.capped,
                binary=sent if sent.binary else None,
                slow=self.settings.timeout if sent.slow else None,
            )
        stream = Stream(
            dict(basis) if isinstance(basis, Mapping) else {}, exchange, judged, sent.binary
        )
        self.streams.append(stream)
        return stream

    def cached(self, key: str) -> Any:
        """What :meth:`once` made for ``key`` so far (``None`` when nothing yet)."""
        return self._cache.get(key)

    async def once(self, key: str, make: Callable[[], Awaitable[Any]]) -> Any:
        """The value ``make`` produces, made once per check run and shared."""
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in self._cache:
                self._cache[key] = await make()
            return self._cache[key]


def _is_stream(exchange: Exchange) -> bool:
    kind = exchange.content_type.split(";")[0].strip().lower()
    return (
        exchange.status is not None
        and 200 <= exchange.status < 300
        and kind in (SSE_MEDIA_TYPE, PROTO_MEDIA_TYPE)
    )


def use(res: CaseResult, stream: Stream) -> int:
    """Show a shared exchange in ``res``'s transcript; return its index there."""
    for i, ex in enumerate(res.exchanges):
        if ex is stream.exchange:
            return i
    res.exchanges.append(stream.exchange)
    return len(res.exchanges) - 1


def findings_of(
    res: CaseResult,
    stream: Stream,
    *,
    only: frozenset[str] | None = None,
    exclude: frozenset[str] = frozenset(),
) -> list[Finding]:
    """Add the stream's judgement to ``res`` (re-indexed to its transcript)."""
    if stream.judged is None:
        return []
    at = use(res, stream)
    added = []
    for f in stream.judged.findings:
        if (only is not None and f.rule not in only) or f.rule in exclude:
            continue
        finding = Finding(f.verdict, f.rule, f.message, at, f.event)
        res.findings.append(finding)
        added.append(finding)
    return added


def add(
    res: CaseResult,
    verdict: Verdict,
    rule: str,
    message: str,
    stream: Stream | None = None,
    event: int | None = None,
) -> None:
    at = use(res, stream) if stream is not None else None
    res.findings.append(Finding(verdict, rule, message, at, event))

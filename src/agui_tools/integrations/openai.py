"""An OpenAI Chat Completions stream, emitted as AG-UI events through a :class:`Run`.

Pass the ``chat.completion.chunk`` objects as dicts: a text message for ``delta.content``,
one tool call per ``delta.tool_calls[index]`` in the model's fragments, returned so the
agent can run its own tools and leave the frontend's pending::

    async def agent(run: Run) -> None:
        stream = await client.chat.completions.create(..., stream=True,
                                                      stream_options={"include_usage": True})
        said = await stream_completion(run, (c.model_dump() async for c in stream))
        for call in said.tool_calls:
            if call.name not in run.frontend_tools:          # agent-side tool
                await run.result(call.id, my_tools[call.name](call.arguments))
        # frontend calls stay unanswered: the run finishes with pendingToolCallIds

All calls of a completion hang off one assistant message. Usage becomes the protocol's
accounting (RUN-11): cached tokens inside ``inputTokens``, reasoning inside
``outputTokens``, never added twice.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from .._errors import ProviderStreamError
from ..agent import MessageHandle, Run, ToolCallHandle, new_id

__all__ = [
    "CompletionCall",
    "CompletionResult",
    "ProviderStreamError",
    "stream_completion",
    "usage_entry",
]


@dataclass(frozen=True)
class CompletionCall:
    """A tool call the model made, as streamed: ``arguments`` is the raw text."""

    id: str
    name: str
    arguments: str
    index: int


@dataclass
class CompletionResult:
    """One chat completion as the stream told it: the assistant message's id and text,
    the tool calls it asked for, why it ended and the usage the API reported."""

    message_id: str
    content: str = ""
    tool_calls: list[CompletionCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None


def usage_entry(
    usage: Mapping[str, Any], *, model: str | None, provider: str = "openai"
) -> dict[str, Any]:
    """OpenAI ``usage`` → a ``TokenUsage`` entry (RUN-11: totals, and parts of them).

    ``prompt_tokens`` already includes cached tokens and ``completion_tokens``
    reasoning tokens, so those are reported as parts and not added again; a
    count the provider did not report is left absent, never zero.
    """
    entry: dict[str, Any] = {"provider": provider}
    if model:
        entry["model"] = model
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if isinstance(prompt, int):
        entry["inputTokens"] = prompt
    if isinstance(completion, int):
        entry["outputTokens"] = completion
    if isinstance(prompt, int) and isinstance(completion, int):
        entry["totalTokens"] = prompt + completion  # computed, never copied (RUN-11)
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
    if isinstance(cached, int):
        entry["cachedInputTokens"] = cached
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens")
    if isinstance(reasoning, int):
        entry["reasoningTokens"] = reasoning
    return entry


class _Call:
    __slots__ = ("handle", "id", "index", "name", "parts")

    def __init__(self, index: int, handle: ToolCallHandle) -> None:
        self.index = index
        self.handle = handle
        self.id = handle.id
        self.name = handle.name
        self.parts: list[str] = []


async def _chunks(source: AsyncIterable[Mapping[str, Any]] | Iterable[Mapping[str, Any]]) -> Any:
    if isinstance(source, AsyncIterable):
        async for chunk in source:
            yield chunk
    else:
        for chunk in source:
            yield chunk


async def stream_completion(
    run: Run,
    chunks: AsyncIterable[Mapping[str, Any]] | Iterable[Mapping[str, Any]],
    *,
    message_id: str | None = None,
    provider: str = "openai",
) -> CompletionResult:
    """Emit one streamed completion on ``run``; return what was said and called.

    The text message and every tool call close when the stream ends (the
    model's ``finish_reason`` or the iterator's end). If the stream raises, the
    open items are abandoned by the :class:`Run` and the exception propagates.
    """
    result = CompletionResult(message_id=message_id or new_id("msg"))
    calls: dict[int, _Call] = {}
    text: list[str] = []
    model: str | None = None
    async with AsyncExitStack() as stack:
        message: MessageHandle | None = None
        async for chunk in _chunks(chunks):
            if not isinstance(chunk, Mapping):
                raise ProviderStreamError(
                    f"a completion chunk must be an object, got {type(chunk).__name__}"
                )
            model = chunk.get("model") or model
            usage = chunk.get("usage")
            if isinstance(usage, Mapping):
                result.usage = usage_entry(usage, model=model, provider=provider)
            for choice in chunk.get("choices") or ():
                if choice.get("index", 0) != 0:
                    raise ProviderStreamError(
                        "only single-choice completions (n=1) can drive a run"
                    )
                delta = choice.get("delta") or {}
                piece = delta.get("content") or delta.get("refusal")
                if piece:
                    if message is None:
                        message = await stack.enter_async_context(
                            run.message(message_id=result.message_id)
                        )
                    await message.delta(piece)
                    text.append(piece)
                for fragment in delta.get("tool_calls") or ():
                    await _tool_fragment(run, stack, calls, fragment, result.message_id)
                if choice.get("finish_reason"):
                    result.finish_reason = choice["finish_reason"]
        # leaving the stack closes the calls (LIFO) and the message: arguments complete
    result.content = "".join(text)
    result.tool_calls = [
        CompletionCall(c.id, c.name, "".join(c.parts), c.index)
        for c in sorted(calls.values(), key=lambda c: c.index)
    ]
    if result.usage is not None:
        run.add_usage(result.usage)
    return result


async def _tool_fragment(
    run: Run,
    stack: AsyncExitStack,
    calls: dict[int, _Call],
    fragment: Mapping[str, Any],
    parent: str,
) -> None:
    index = fragment.get("index")
    if not isinstance(index, int):
        raise ProviderStreamError(
            f"a tool-call fragment carries no integer index: {dict(fragment)!r}"
        )
    function = fragment.get("function") or {}
    call = calls.get(index)
    if call is None:
        name, call_id = function.get("name"), fragment.get("id")
        if not isinstance(name, str) or not name:
            raise ProviderStreamError(
                f"the first fragment of tool call #{index} carries no function name"
            )
        handle = await stack.enter_async_context(
            run.tool_call(
                name,
                call_id=call_id if isinstance(call_id, str) and call_id else None,
                parent_message_id=parent,
            )
        )
        call = calls[index] = _Call(index, handle)
    elif fragment.get("id") not in (None, call.id):
        raise ProviderStreamError(f"tool call #{index} changed its id mid-stream")
    args = function.get("arguments")
    if args:
        await call.handle.args(args)
        call.parts.append(args)

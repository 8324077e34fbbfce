"""Tool-call argument text: a live preview while it streams, a verdict when it closes.

Arguments are text (TOOL-4), not to be acted on before ``TOOL_CALL_END`` (TOOL-5), so
there are two readings, kept apart by type: :meth:`ArgumentBuffer.preview` (a
:class:`Preview` for a UI, always a prefix, which nothing turns into arguments) and
:meth:`ArgumentBuffer.final` / :func:`parse_arguments` (a strict parse at the end, returning
:class:`ParsedArguments` or :class:`UnparseableArguments` — a value for the application,
not a violation). Blank text parses to ``{}``, as providers send for parameterless calls:
the tool's schema still judges it, naming any missing field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from pydantic_core import from_json

from .._errors import UsageError, json_type_name

__all__ = [
    "ArgumentBuffer",
    "FinalArguments",
    "ParsedArguments",
    "Preview",
    "PreviewPolicy",
    "UnparseableArguments",
    "parse_arguments",
]

PartialMode: TypeAlias = Literal["on", "trailing-strings"]


@dataclass(frozen=True, slots=True)
class PreviewPolicy:
    """When :meth:`ArgumentBuffer.preview` re-parses, and how.

    Re-parsing the whole prefix per delta is quadratic. With ``n`` the size now and ``p`` at
    the last parse, it re-parses never when ``n == p``, always while ``n <= live_limit``, and
    beyond only once ``n - p >= max(min_step, growth * p)``. Past ``live_limit`` the parse sizes
    grow geometrically, so the characters parsed are bounded, however the text is cut::

        parsed <= N * (1 + growth) / growth  +  live_limit * min(live_limit, D)

    (``N`` the final size, ``D`` the non-empty deltas below ``live_limit``): linear in ``N``.
    The price is staleness, at most ``max(min_step, growth * n)``; :attr:`Preview.chars` says it.

    Attributes:
        live_limit: re-parse on every delta up to this many characters.
        growth: past ``live_limit``, the relative growth that triggers a re-parse (> 0).
        min_step: the absolute growth also required, so mid-sized texts do not re-parse often.
        partial: ``pydantic_core`` partial mode: ``"trailing-strings"`` shows a string as it
            streams, ``"on"`` only once its closing quote arrived.
    """

    live_limit: int = 4096
    growth: float = 0.25
    min_step: int = 4096
    partial: PartialMode = "trailing-strings"

    def __post_init__(self) -> None:
        if self.live_limit < 0 or self.min_step < 0:
            raise UsageError("PreviewPolicy limits must be non-negative")
        if not self.growth > 0:
            raise UsageError(
                "PreviewPolicy.growth must be > 0: without geometric growth the preview "
                "cost is quadratic in the argument length"
            )
        if self.partial not in ("on", "trailing-strings"):
            raise UsageError(
                f"PreviewPolicy.partial must be 'on' or 'trailing-strings', not {self.partial!r}"
            )

    def due(self, size: int, parsed_at: int | None) -> bool:
        """Whether a preview at ``size`` must re-parse, the last parse being at ``parsed_at``."""
        if parsed_at is None:
            return True
        if size == parsed_at:
            return False
        if size <= self.live_limit:
            return True
        return size - parsed_at >= max(self.min_step, self.growth * parsed_at)


@dataclass(frozen=True, slots=True, repr=False)
class Preview:
    """A PREFIX of the argument text, parsed leniently for display. Never act on it.

    The call is still streaming (TOOL-5): fields may be missing or cut short. The validator
    refuses it and nothing turns it into :class:`ParsedArguments`: wait for
    :meth:`ArgumentBuffer.final`.

    Attributes:
        value: the partial value of the first ``chars`` characters, ``None`` when they do not
            parse even partially; shared with the buffer's cache (do not mutate it).
        chars: how many characters it reflects (may trail :attr:`ArgumentBuffer.size`).
        error: why ``value`` is ``None`` for a non-blank prefix.
        complete, is_prefix: always ``False`` and ``True``; not constructor arguments.
    """

    value: Any
    chars: int
    error: str | None = None
    complete: Literal[False] = field(default=False, init=False)
    is_prefix: Literal[True] = field(default=True, init=False)

    def __repr__(self) -> str:
        return f"Preview(PREFIX of {self.chars} chars, not final: value={self.value!r})"


@dataclass(frozen=True, slots=True)
class ParsedArguments:
    """The closed call's argument text, parsed strictly: a JSON object — still untrusted
    (TOOL-21). ``from_empty_text``: the text was blank and read as ``{}``.
    """

    value: dict[str, Any]
    from_empty_text: bool = False


UnparseableKind: TypeAlias = Literal["syntax", "not_an_object", "encoding"]


@dataclass(frozen=True, slots=True)
class UnparseableArguments:
    """The closed call's argument text is not usable as arguments — the application's to
    answer (typically with :attr:`reason`, so the model can retry), not a violation.

    Attributes:
        reason: one sentence for a person or a model, with line and column.
        position: character offset of the problem.
        kind: ``"syntax"``, ``"not_an_object"`` or ``"encoding"`` (a lone surrogate).
    """

    reason: str
    position: int
    kind: UnparseableKind = "syntax"

    def __str__(self) -> str:
        return self.reason


FinalArguments: TypeAlias = ParsedArguments | UnparseableArguments


class ArgumentBuffer:
    """The argument text of one tool call, accumulated from ``TOOL_CALL_ARGS`` deltas.

    Appending is O(1) (parts joined on demand); reading :attr:`text` per delta would copy the
    prefix each time — use :meth:`preview`. A reopened call (TOOL-7) keeps appending.
    """

    __slots__ = ("_final", "_parts", "_policy", "_preview", "_size")

    def __init__(self, initial: str = "", *, policy: PreviewPolicy | None = None) -> None:
        self._policy = policy if policy is not None else PreviewPolicy()
        self._parts: list[str] = [initial] if initial else []
        self._size = len(initial)
        self._preview: Preview | None = None
        self._final: FinalArguments | None = None

    def append(self, delta: str) -> None:
        """Add the next delta (it may be empty, TOOL-4)."""
        if not isinstance(delta, str):
            raise UsageError(
                f"an argument delta is text, not {type(delta).__name__}", rule="TOOL-4"
            )
        if delta:
            self._parts.append(delta)
            self._size += len(delta)
            self._final = None

    @property
    def size(self) -> int:
        """Length of the text so far, in characters (not bytes)."""
        return self._size

    @property
    def text(self) -> str:
        """The concatenated deltas. O(size) when deltas arrived since the last read."""
        parts = self._parts
        if len(parts) == 1:
            return parts[0]
        joined = "".join(parts)
        self._parts = [joined] if joined else []
        return joined

    @property
    def policy(self) -> PreviewPolicy:
        return self._policy

    def preview(self) -> Preview:
        """A lenient parse of the text so far, for display only — see :class:`Preview`.

        Re-parses only when :meth:`PreviewPolicy.due` says so, otherwise
        returns the previous preview unchanged; the total parsing work over
        the life of the buffer is linear in its final size.
        """
        cached = self._preview
        if cached is not None and not self._policy.due(self._size, cached.chars):
            return cached
        fresh = _preview_of(self.text, self._policy.partial)
        self._preview = fresh
        return fresh

    def final(self) -> FinalArguments:
        """The strict verdict on the text as it stands — call at ``TOOL_CALL_END``.

        Cached until the next non-empty delta, so asking twice costs nothing.
        """
        if self._final is None:
            self._final = parse_arguments(self.text)
        return self._final

    def __repr__(self) -> str:
        return f"ArgumentBuffer(size={self._size})"


# JSON's whitespace only (RFC 8259): a no-break space is not "no arguments".
_BLANK: Final = re.compile(r"[ \t\r\n]*\Z")


def _preview_of(text: str, partial: PartialMode) -> Preview:
    if _BLANK.match(text):
        return Preview(None, len(text))
    try:
        value = from_json(text, allow_partial=partial)
    except (ValueError, TypeError) as exc:  # TypeError: lone surrogates in the str
        return Preview(None, len(text), error=str(exc))
    return Preview(value, len(text))


# pydantic_core reports "<what> at line L column C", C counting UTF-8 bytes from 1.
_WHERE: Final = re.compile(r" at line (\d+) column (\d+)$")


def parse_arguments(text: str) -> FinalArguments:
    """Parse a closed call's argument text strictly (RFC 8259; no NaN, no trailing data).

    ``pydantic_core``, not orjson: orjson turns an integer beyond 64 bits into a float.
    """
    if _BLANK.match(text):
        return ParsedArguments({}, from_empty_text=True)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return UnparseableArguments(
            f"the argument text is not valid Unicode: a lone surrogate at character {exc.start}",
            exc.start,
            "encoding",
        )
    try:
        value = from_json(text, allow_inf_nan=False)
    except ValueError as exc:
        message = str(exc)
        position = _char_position(text, message)
        line, column = _line_column(text, position)
        what = _WHERE.sub("", message)
        return UnparseableArguments(
            f"the arguments are not valid JSON: {what} (line {line}, column {column})",
            position,
        )
    if not isinstance(value, dict):
        start = len(text) - len(text.lstrip(" \t\r\n"))
        return UnparseableArguments(
            f"the arguments must be a JSON object (named parameters), got {_a(json_type_name(value))}",
            start,
            "not_an_object",
        )
    return ParsedArguments(value)


def _a(type_name: str) -> str:
    return f"an {type_name}" if type_name[0] in "aeiou" else f"a {type_name}"


def _char_position(text: str, message: str) -> int:
    """Character offset of the error pydantic_core located by line and byte column."""
    if message.startswith("EOF"):
        return len(text)
    match = _WHERE.search(message)
    if match is None:
        return 0
    line, column = int(match.group(1)), int(match.group(2))
    start = 0
    for _ in range(line - 1):
        newline = text.find("\n", start)
        if newline < 0:
            break
        start = newline + 1
    end = text.find("\n", start)
    line_text = text[start:] if end < 0 else text[start:end]
    within = line_text.encode("utf-8")[: max(column - 1, 0)].decode("utf-8", errors="ignore")
    return min(start + len(within), len(text))


def _line_column(text: str, position: int) -> tuple[int, int]:
    """1-based line and character column of ``position``, for people."""
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return line, column

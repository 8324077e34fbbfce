"""The recordings a mock replays, read as untrusted input (``agui-tools mock``).

Each file is opened without following links, read only if regular and under its cap
(:data:`MAX_CAPTURE_BYTES`, :data:`MAX_META_BYTES`), each meta field checked as what it
becomes. A failing exchange is left out in one escaped line; a named file that fails is a
:class:`UsageError`.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Final

import orjson

from .._errors import UsageError
from .._text import cut, escape_controls, guarded_logger, shown
from ..app._recorded import RecordedEvents, RecordedRun, recorded_runs, runs_from_thread_export
from ..app._watch import binding_of
from ._front import DEFAULT_MAX_BODY_BYTES

__all__ = ["MAX_CAPTURE_BYTES", "MAX_INPUT_BYTES", "MAX_META_BYTES", "NO_BODY", "load_captures"]

log = guarded_logger("agui_tools.transport")

_BODY_SUFFIXES: Final = (".sse", ".pb", ".ndjson", ".json", ".body")
_EXCHANGE: Final = re.compile(r"^(?P<stem>(?:run-)?[0-9]+)\.(?P<ext>sse|pb|ndjson|json|body)$")
_INPUT: Final = re.compile(r"^(?P<stem>(?:run-)?[0-9]+)\.input\.json$")
MAX_CAPTURE_BYTES: Final = 256 * 1024 * 1024
"""The most capture bytes (``NNNN.sse``, ``run --save`` files …) one mock loads, in all:
a body past what is left of it is left out and said (docs/cli.md, ``mock``) — a folder
of many files is bounded as one file is."""
MAX_INPUT_BYTES: Final = DEFAULT_MAX_BODY_BYTES
"""The largest ``NNNN.input.json`` the mock loads: the largest request body a face reads
by default — a run input is parsed whole and kept, many times its size in memory."""
READ_CHUNK: Final = 1024 * 1024
"""How much of a capture body the mock reads at a time: its frames are decoded as they
come, and what it keeps is their events, never the body's text as well."""
MAX_META_BYTES: Final = 64 * 1024
"""The largest ``NNNN.meta.json`` (a status, a content type, a location)."""
MAX_HEADER_CHARS: Final = 8 * 1024
"""The longest ``contentType`` or ``location`` a recorded answer replays."""
_NOT_IN_A_HEADER: Final = re.compile(r"[^\t\x20-\x7e\x80-\xff]")
"""What a replayed header value may not hold (RFC 9110 §5.5): CR, LF, NUL, the other
controls, and what is no Latin-1 byte."""
NO_BODY: Final = frozenset({204, 304})
"""Statuses whose answer has no body (and no ``Content-Length``, RFC 9110 §8.6)."""


def load_captures(
    paths: Iterable[str | os.PathLike[str] | RecordedRun], *, skipped: list[str] | None = None
) -> list[RecordedRun]:
    """Every recorded run of ``paths``, in order; :class:`UsageError` naming the file when
    one cannot be read as a capture.

    A path is a ``proxy --record`` directory (``NNNN.input.json``, the body, ``NNNN.meta.json``),
    an inspector export, a ``thread.json``, or a stream file with ``X.input.json`` beside it. A
    meta saying no event stream (a refusal, JSON, 204, redirect) is one answer replayed as
    recorded. A directory's exchange that cannot be replayed is left out, said in ``skipped``.
    """
    runs: list[RecordedRun] = []
    left_out: list[str] = []
    budget = [MAX_CAPTURE_BYTES]  # what is left of the cap, for every file to come
    for item in paths:
        if isinstance(item, RecordedRun):
            runs.append(item)
            continue
        path = Path(item)
        if path.is_dir():
            runs += _load_dir(path, left_out, budget)
        else:
            runs += _load_file(_body_of(path), budget)
    for line in left_out:
        log.info("%s", line)
    if skipped is not None:
        skipped += left_out
    if not runs:
        if left_out:
            raise UsageError(
                f"no recorded exchange can be replayed: {'; '.join(left_out[:3])}"
                + (f" (and {len(left_out) - 3} more)" if len(left_out) > 3 else "")
            )
        raise UsageError("no capture given: a mock replays at least one recorded run")
    return runs


def _body_of(path: Path) -> Path:
    """``X.input.json`` or ``X.meta.json`` named: the exchange's body beside it."""
    for suffix in (".input.json", ".meta.json"):
        if path.name.endswith(suffix):
            stem = path.name[: -len(suffix)]
            for ext in _BODY_SUFFIXES:
                if (body := path.with_name(stem + ext)).exists():
                    return body
            raise UsageError(
                f"{path}: no response body beside it ({stem}.sse, .pb, .ndjson, .json, .body)"
            )
    return path


class _LeftOut(Exception):
    """A file of a recording that the mock does not trust: why (one line)."""


def _open(path: Path, *, follow: bool = False, cap: int | None = None) -> BinaryIO:
    """The file, open, if it is a regular file of at most ``cap`` bytes — opened without
    following a link unless ``follow`` (a path the user named) and without blocking (a
    FIFO is no capture: never waited on). :class:`_LeftOut` when it is none of that,
    :class:`UsageError` when it cannot be opened."""
    cap = MAX_CAPTURE_BYTES if cap is None else cap
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _LeftOut(
                f"{path}: not replayed: a symbolic link (a recording's files are read as "
                "regular files, links never followed)"
            ) from None
        raise UsageError(f"cannot read capture {path}: {exc.strerror or exc}") from None
    file = open(fd, "rb", buffering=0)  # noqa: SIM115 - the caller closes it
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        file.close()
        what = "a FIFO" if stat.S_ISFIFO(kind) else "a directory" if stat.S_ISDIR(kind) else ""
        raise _LeftOut(f"{path}: not replayed: not a regular file{f' ({what})' if what else ''}")
    if os.fstat(fd).st_size > cap:
        file.close()
        raise _too_big(path, cap)  # not read at all
    return file


def _size(path: Path, follow: bool) -> int:
    """What a file of an exchange will cost the cap: its size, 0 when it is not there
    (:func:`_open` judges what it is: a link in a folder is never followed)."""
    try:
        return os.stat(path, follow_symlinks=follow).st_size
    except OSError:
        return 0


def _too_big(path: Path, cap: int) -> _LeftOut:
    if cap < MAX_CAPTURE_BYTES:
        return _LeftOut(
            f"{path}: not replayed: larger than the {cap:,} bytes left of the mock's cap "
            f"({MAX_CAPTURE_BYTES:,} bytes of captures in all)"
        )
    return _LeftOut(f"{path}: not replayed: larger than {cap:,} bytes (the mock's cap)")


def _read(path: Path, *, follow: bool = False, limit: int) -> bytes:
    """The bytes of a file :func:`_open` accepts (a meta, a run input, a recorded answer)."""
    with _open(path, follow=follow, cap=limit) as file:
        return _read_all(file, path, limit)


def _read_all(file: BinaryIO, path: Path, cap: int) -> bytes:
    """Every byte, in one buffer, never read past ``cap`` whatever the size said (a
    growing file)."""
    try:
        data: bytes = file.read(cap + 1)
    except OSError as exc:
        raise UsageError(f"cannot read capture {path}: {exc.strerror or exc}") from None
    if len(data) > cap:
        raise _too_big(path, cap)
    return data


def read_chunks(file: BinaryIO, path: Path, cap: int) -> Iterator[bytes]:
    """The file's bytes, :data:`READ_CHUNK` at a time, never past ``cap`` (a growing file:
    :class:`_LeftOut`) — a capture is decoded as it is read, never held whole."""
    total = 0
    while True:
        try:
            chunk = file.read(READ_CHUNK)
        except OSError as exc:
            raise UsageError(f"cannot read capture {path}: {exc.strerror or exc}") from None
        if not chunk:
            return
        total += len(chunk)
        if total > cap:
            raise _too_big(path, cap)
        yield chunk


def _load_dir(folder: Path, skipped: list[str], budget: list[int]) -> list[RecordedRun]:
    bodies = []
    inputs: dict[str, Path] = {}
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise UsageError(f"cannot read capture directory {folder}: {exc.strerror or exc}") from None
    for name in names:
        found = _EXCHANGE.match(name)
        if found is not None:
            stem = found.group("stem")
            bodies.append((int(stem.removeprefix("run-")), stem.startswith("run-"), folder / name))
        elif (asked := _INPUT.match(name)) is not None:
            inputs[asked.group("stem")] = folder / name
    if not bodies:
        raise UsageError(
            f"{folder}: no recorded exchange (NNNN.sse / .pb / .ndjson / .json / .body beside "
            "NNNN.input.json, or the inspector's run-N.sse): not a proxy --record directory"
        )
    answered = {body.name.rsplit(".", 1)[0] for _, _, body in bodies}
    for stem, asked_path in inputs.items():
        if stem not in answered:
            skipped.append(
                f"{asked_path}: not replayed: no response body beside it "
                f"({stem}.sse, .pb, .ndjson, .json, .body)"
            )
    runs: list[RecordedRun] = []
    for _, _, body in sorted(bodies, key=lambda b: (b[1], b[0])):
        try:
            runs += _load_file(body, budget, exchange=True, skipped=skipped)
        except UsageError as exc:  # one exchange that cannot be read is left out, said
            skipped.append(f"{body}: not replayed: {escape_controls(str(exc), one_line=True)}")
    return runs


def _load_file(
    path: Path, budget: list[int], *, exchange: bool = False, skipped: list[str] | None = None
) -> list[RecordedRun]:
    """The runs of one capture file; in a directory (``exchange``), one that cannot be
    replayed is said in ``skipped`` and left out (a file named alone is refused)."""
    try:
        found = _runs_of(path, exchange, budget)
    except _LeftOut as exc:
        found = str(exc)
    if isinstance(found, str):
        if skipped is None:
            raise UsageError(found)
        skipped.append(found)
        return []
    return found


def _runs_of(path: Path, exchange: bool, budget: list[int]) -> list[RecordedRun] | str:
    """The runs of one capture file, or why it cannot be replayed (a line naming it);
    its bytes and its input's are taken from ``budget`` (what is left of
    :data:`MAX_CAPTURE_BYTES`) before anything is read, and given back when it is left
    out. The body is read no further than the size it was charged for."""
    body = _size(path, not exchange)
    size = body + _size(path.with_name(path.name.rsplit(".", 1)[0] + ".input.json"), not exchange)
    if size > budget[0]:
        return str(_too_big(path, budget[0]))
    budget[0] -= size
    found: list[RecordedRun] | str | None = None
    try:
        found = _runs_within(path, exchange, min(body, MAX_CAPTURE_BYTES))
    finally:
        if not isinstance(found, list):  # left out, or refused: it is not kept
            budget[0] += size
    return found


def _runs_within(path: Path, exchange: bool, cap: int) -> list[RecordedRun] | str:
    """:func:`_runs_of` once charged: the body read up to ``cap`` bytes."""
    stem = path.name.rsplit(".", 1)[0]
    source = str(path)
    # the meta first: it is small, and it may leave the exchange out unread
    meta = _sibling_json(path.with_name(stem + ".meta.json"), "exchange metadata")
    run_input = _sibling_json(path.with_name(stem + ".input.json"), "run input")
    with _open(path, follow=not exchange) as file:
        if meta is not None:
            streamed = path.suffix in (".sse", ".pb", ".ndjson")
            answer = _recorded_answer(
                source,
                lambda: _read_all(file, path, cap),
                run_input,
                meta,
                f"{stem}.meta.json",
                streamed,
            )
            if isinstance(answer, str):
                return f"{source}: {answer}"
            if answer is not None:
                return [answer]
        elif exchange and path.suffix == ".body":
            return (
                f"{source}: not replayed: no {stem}.meta.json beside it records the answer's "
                "status and content type (a proxy recording writes one per exchange)"
            )
        chunks = read_chunks(file, path, cap)
        first = next(chunks, b"")
        if (
            run_input is None
            and not exchange
            and first.lstrip()[:1] == b"{"
            and not _opens_ndjson(first)
        ):
            return _document_or_stream(first, chunks, source)
        reader = RecordedEvents(source)
        reader.feed(first)
        for chunk in chunks:
            reader.feed(chunk)
    return recorded_runs(reader, source=source, run_input=run_input, split=run_input is None)


def _opens_ndjson(first: bytes) -> bool:
    """The capture's first line is a whole event: an NDJSON stream, no thread export
    (one JSON document, whose first line is never an event)."""
    end = first.find(b"\n")
    try:
        line = orjson.loads(first[:end]) if end >= 0 else None
    except orjson.JSONDecodeError:
        return False
    return isinstance(line, dict) and "type" in line


def _document_or_stream(first: bytes, rest: Iterator[bytes], source: str) -> list[RecordedRun]:
    """A file starting with ``{`` that may be one JSON document: read whole, then an
    inspector ``thread.json`` or a stream as :func:`recorded_runs` reads one."""
    whole = bytearray(first)
    for chunk in rest:
        whole += chunk
    data = bytes(whole)
    del whole
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        document = None  # NDJSON, or a broken file: read as a stream, which says which
    if isinstance(document, dict) and "runs" in document and "type" not in document:
        return runs_from_thread_export(document, source=source)
    return recorded_runs(data, source=source, split=True)


def _recorded_answer(
    source: str,
    body: Callable[[], bytes],
    run_input: dict[str, Any] | None,
    meta: Mapping[str, Any],
    meta_name: str,
    streamed: bool,
) -> RecordedRun | str | None:
    """A proxy exchange that is no event stream, as the recorded answer it replays; a
    string: why it cannot be replayed; ``None``: a 200 event stream (its events replay) —
    by its ``contentType``, or, when the meta has none, by the file's (``streamed``)."""
    status = meta.get("status")
    if isinstance(status, bool) or not isinstance(status, int):
        return f"not replayed: {meta_name} records no answer status (status {_quoted(status)})"
    if not 200 <= status <= 599:
        return f"not replayed: {meta_name} records status {status}; the mock replays 200-599"
    for field in ("contentType", "location"):
        wrong = _header_problem(meta.get(field))
        if wrong is not None:
            return f"not replayed: {meta_name}'s {field} {wrong}"
    kind = meta.get("contentType")
    content_type = kind if isinstance(kind, str) else None
    if status == 200 and (
        binding_of(content_type) is not None or (content_type is None and streamed)
    ):
        return None
    location = meta.get("location")
    notes = []
    data = body()
    if status in NO_BODY and data:
        notes.append(f"the recorded body ({len(data)} bytes) is not sent: a {status} has none")
        data = b""
    if 300 <= status < 400 and not isinstance(location, str):
        notes.append(f"{meta_name} records no location: the {status} is replayed without one")
    return RecordedRun(
        source,
        [],
        run_input,
        status=status,
        body=data,
        content_type=content_type,
        notes=notes,
        verbatim=True,
        location=location if isinstance(location, str) else None,
    )


def _quoted(value: Any) -> str:
    """A recorded value in a start-up line: escaped, one line, cut."""
    return shown(value, 80) if isinstance(value, str) else escape_controls(cut(repr(value), 80))


def _header_problem(value: Any) -> str | None:
    """Why a meta field cannot be replayed as a header value (``None``: absent, or it can)."""
    if value is None:
        return None
    if not isinstance(value, str):
        return f"is no string ({_quoted(value)})"
    if len(value) > MAX_HEADER_CHARS:
        return f"is {len(value):,} characters long (at most {MAX_HEADER_CHARS:,} are replayed)"
    bad = _NOT_IN_A_HEADER.search(value)
    if bad is not None:
        return (
            f"{_quoted(value)} holds {_quoted(bad.group(0))}, which no header value may hold "
            "(a CR or LF would end the header: RFC 9110 §5.5)"
        )
    if value != value.strip(" \t"):
        return (
            f"{_quoted(value)} begins or ends with whitespace, which no header value may "
            "(RFC 9110 §5.5; the HTTP layer refuses to send it)"
        )
    return None


def _sibling_json(path: Path, what: str) -> dict[str, Any] | None:
    if not os.path.lexists(path):  # a dangling link is there too: read, and refused
        return None
    limit = MAX_META_BYTES if path.name.endswith(".meta.json") else MAX_INPUT_BYTES
    try:
        document = orjson.loads(_read(path, limit=limit))
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"{path}: the {what} is not valid JSON ({exc})") from None
    if not isinstance(document, dict):
        raise UsageError(f"{path}: the {what} must be a JSON object")
    return document

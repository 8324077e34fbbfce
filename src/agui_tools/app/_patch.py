"""JSON Patch (RFC 6902) applied in place, all or nothing, at a cost bounded by bytes.

Not the ``jsonpatch`` library: it copies the whole document per patch for atomicity, and
its unbounded ``copy`` lets a few kilobytes of patch double a value again and again
(docs/security.md, "The cost of a stream is bounded by its bytes"). Here:

* **In place, with an undo log**: a patch failing part-way is rolled back (RFC 6902 §5);
  an operation costs its path's depth plus what it moves, never the document's size.
* **Size is known at all times**: :class:`Document` tracks its compact JSON length exactly;
  an entering value is measured (orjson, in C) and the operation that would pass
  ``max_bytes`` raises :class:`PatchTooLarge` before the value is built.
* **Work is budgeted**: measuring or copying values already in the document draws on
  ``max_work`` bytes per patch, and on a credit living as long as the document (refilled by
  :data:`CREDIT_PER_OP` per operation and what each patch brings in, capped at
  ``max_work``), so a stream of patches does work linear in its own length.
* **Depth is checked per operation** (``max_depth``, the document level 1), riding on the
  encoding: orjson writes at most 254 levels, so a value wrapped in ``254 - room`` lists
  encodes only when it nests at most ``room``.

Entering values are decoded from their encoding, never aliased from the patch's event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

from ..wire._enforce import ORJSON_WRITE_DEPTH

__all__ = ["Document", "PatchFailed", "PatchTooDeep", "PatchTooLarge", "encoded_size"]


_WRITABLE: Final = ORJSON_WRITE_DEPTH
_MISSING: Final = object()


class PatchFailed(Exception):
    """The patch does not apply (a path that does not resolve, a failed ``test``…)."""


class PatchTooDeep(PatchFailed):
    """The patch would nest a container deeper than the depth limit."""

    def __init__(self, path: str, max_depth: int) -> None:
        self.path = path
        super().__init__(
            f"the value at {path or '/'} would nest deeper than {max_depth} levels (LIMIT)"
        )


class PatchTooLarge(Exception):
    """The patch would take the document past its size, or itself past its work budget."""

    def __init__(self, message: str, path: str) -> None:
        self.path = path
        super().__init__(message)


def _encode(value: Any, room: int) -> tuple[bytes, int] | None:
    """``value``'s compact JSON wrapped in ``wrap`` lists, and ``wrap``; None when
    ``value`` nests more than ``room`` levels of containers."""
    if value.__class__ is not dict and value.__class__ is not list:
        return orjson.dumps(value), 0
    if room <= 0:
        return None
    wrap = _WRITABLE - room if room < _WRITABLE else 0
    wrapped = value
    for _ in range(wrap):
        wrapped = [wrapped]
    try:
        return orjson.dumps(wrapped), wrap
    except orjson.JSONEncodeError:
        return None


def encoded_size(value: Any) -> int:
    """The length of ``value``'s compact JSON encoding (raises ``TypeError`` for non-JSON)."""
    try:
        return len(orjson.dumps(value))
    except orjson.JSONEncodeError as exc:
        raise TypeError(str(exc)) from None


def _decode(blob: bytes, wrap: int) -> Any:
    value = orjson.loads(blob)
    for _ in range(wrap):
        value = value[0]
    return value


def _member(parent: dict[str, Any] | list[Any], key: str, others: int) -> int:
    """Bytes a member costs beyond its value: ``"key":`` in an object, and the comma
    separating it from the ``others`` members beside it."""
    comma = 1 if others else 0
    return len(orjson.dumps(key)) + 1 + comma if parent.__class__ is dict else comma


def _tokens(pointer: Any, what: str) -> list[str]:
    if pointer.__class__ is not str:
        raise PatchFailed(f"{what} must be a JSON Pointer string")
    if pointer == "":
        return []
    if pointer[0] != "/":
        raise PatchFailed(f"{what} {pointer!r} is not a JSON Pointer (it must start with '/')")
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def _index(container: list[Any], token: str, pointer: str, *, end: bool) -> int:
    """A list index token (RFC 6901 §4): digits, no leading zero; ``-`` only to append."""
    if token == "-" and end:
        return len(container)
    if not token.isascii() or not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchFailed(f"{pointer!r}: {token!r} is not an array index")
    i = int(token)
    if i > len(container) or (i == len(container) and not end):
        raise PatchFailed(
            f"{pointer!r}: index {i} is out of range (the array has {len(container)})"
        )
    return i


CREDIT_PER_OP: Final = 4096
"""Bytes of existing values one operation may copy or discard beyond what the value it
brings pays for, once the document's ``max_work`` credit is spent: an operation is at
least ~30 bytes on the wire, so a stream of patches costs a bounded multiple of its
length in C-speed encoding (docs/security.md has the figures; the fuzz oracle bounds it)."""


class Document:
    """A JSON value under patching, with its encoded size.

    Args:
        value: the document, owned from now on (pass a copy).
        size: its encoded size when known.
        max_bytes: the largest it may grow (:class:`PatchTooLarge`).
        max_depth: how many levels of containers it may hold (itself is one).
        max_work: bytes of existing values one patch may measure or copy.
    """

    __slots__ = ("_credit", "_work", "max_bytes", "max_depth", "max_work", "size", "value")

    def __init__(
        self, value: Any, *, max_bytes: int, max_depth: int, max_work: int, size: int | None = None
    ) -> None:
        self.value = value
        self.size = encoded_size(value) if size is None else size
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.max_work = max_work
        self._work = 0
        self._credit = max_work

    def apply(self, ops: Any) -> None:
        """Apply ``ops`` in place, all or nothing: :class:`PatchFailed` or :class:`PatchTooLarge`
        leave the document unchanged.
        """
        if ops.__class__ is not list:
            raise PatchFailed("a patch must be an array of operations")
        undo: list[Callable[[], None]] = []
        root, size = self.value, self.size
        self._work = 0
        self._credit = min(self.max_work, self._credit + len(ops) * CREDIT_PER_OP)
        try:
            for i, op in enumerate(ops):
                self._op(op, i, undo)
        except BaseException:
            for step in reversed(undo):
                step()
            self.value, self.size = root, size
            raise

    # -- one operation ------------------------------------------------------------------

    def _op(self, op: Any, i: int, undo: list[Callable[[], None]]) -> None:
        if op.__class__ is not dict:
            raise PatchFailed(f"operation {i} is not an object")
        kind = op.get("op")
        path = op.get("path", _MISSING)
        if path is _MISSING:
            raise PatchFailed(f"operation {i} ({kind!r}) has no 'path'")
        tokens = _tokens(path, f"operation {i}'s path")
        if kind == "add" or kind == "replace":
            if "value" not in op:
                raise PatchFailed(f"operation {i} ({kind}) has no 'value'")
            value, size = self._bring(op["value"], len(tokens), path, grows=bool(tokens))
            self._put(tokens, path, value, size, undo, must_exist=kind == "replace")
        elif kind == "remove":
            if not tokens:
                raise PatchFailed(f"operation {i} removes the whole document")
            self._take(tokens, path, undo, measure=True)
        elif kind == "move" or kind == "copy":
            source = op.get("from", _MISSING)
            if source is _MISSING:
                raise PatchFailed(f"operation {i} ({kind}) has no 'from'")
            src = _tokens(source, f"operation {i}'s from")
            if kind == "move":
                if src == tokens:
                    self._get(src, source)  # must exist; otherwise nothing to do
                    return
                if len(src) < len(tokens) and tokens[: len(src)] == src:
                    raise PatchFailed(f"operation {i} moves {source!r} into its own child {path!r}")
                if not src:
                    raise PatchFailed(f"operation {i} moves the whole document")
                value = self._get(src, source)
                if not tokens or len(tokens) > len(src):
                    # to the root its size is needed; deeper, its nesting must still fit
                    blob, wrap = self._measure(value, len(tokens), path)
                    size = len(blob) - 2 * wrap
                else:
                    size = 0  # the value's own bytes leave one place and enter another
                self._take(src, source, undo, measure=False, size=size)
                self._put(tokens, path, value, size, undo, must_exist=False)
            else:
                blob, wrap = self._measure(self._get(src, source), len(tokens), path)
                size = len(blob) - 2 * wrap
                if tokens:
                    self._room(size, path)
                self._charge(size, path)  # the decode below
                self._put(tokens, path, _decode(blob, wrap), size, undo, must_exist=False)
        elif kind == "test":
            if "value" not in op:
                raise PatchFailed(f"operation {i} (test) has no 'value'")
            if not _equal(self._get(tokens, path), op["value"]):
                raise PatchFailed(f"operation {i}: the value at {path!r} is not the one tested")
        else:
            raise PatchFailed(f"operation {i}: {kind!r} is not a JSON Patch operation")

    # -- moving values in and out -----------------------------------------------------------

    def _bring(self, value: Any, depth: int, pointer: str, *, grows: bool) -> tuple[Any, int]:
        """A value from the patch, as a fresh object, and its size (checked against the room)."""
        encoded = _encode(value, self.max_depth - depth)
        if encoded is None:
            raise PatchTooDeep(pointer, self.max_depth)
        blob, wrap = encoded
        size = len(blob) - 2 * wrap
        if grows:
            self._room(size, pointer)
        self._credit += size  # paid for by the patch's own bytes
        return _decode(blob, wrap), size

    def _measure(self, value: Any, depth: int, pointer: str) -> tuple[bytes, int]:
        """Encode a value already in the document (charged), fitting at ``depth`` tokens."""
        encoded = _encode(value, self.max_depth - depth)
        if encoded is None:
            raise PatchTooDeep(pointer, self.max_depth)
        self._charge(len(encoded[0]) - 2 * encoded[1], pointer)
        return encoded

    def _charge(self, size: int, pointer: str) -> None:
        self._work += size
        self._credit -= size
        if self._work > self.max_work:
            raise PatchTooLarge(
                f"the patch copies or discards more than max_work={self.max_work} bytes of the "
                f"existing value (at {pointer or '/'})",
                pointer,
            )
        if self._credit < 0:
            raise PatchTooLarge(
                f"the patches on this value have copied or discarded more of it than their own "
                f"length pays for (max_work={self.max_work} bytes, then {CREDIT_PER_OP} per "
                f"operation plus what they bring in; at {pointer or '/'})",
                pointer,
            )

    def _room(self, growth: int, pointer: str) -> None:
        if self.size + growth > self.max_bytes:
            raise PatchTooLarge(
                f"the patch would grow the value past {self.max_bytes} bytes "
                f"(at {pointer or '/'}: {self.size} + {growth})",
                pointer,
            )

    def _get(self, tokens: list[str], pointer: str) -> Any:
        node = self.value
        for token in tokens:
            if node.__class__ is dict:
                if token not in node:
                    raise PatchFailed(f"{pointer!r} does not exist (no member {token!r})")
                node = node[token]
            elif node.__class__ is list:
                node = node[_index(node, token, pointer, end=False)]
            else:
                raise PatchFailed(f"{pointer!r} does not exist ({token!r} is inside a scalar)")
        return node

    def _parent(self, tokens: list[str], pointer: str) -> Any:
        parent = self._get(tokens[:-1], pointer)
        if parent.__class__ is not dict and parent.__class__ is not list:
            raise PatchFailed(f"{pointer!r}: the parent is not an object or an array")
        return parent

    def _put(
        self,
        tokens: list[str],
        pointer: str,
        value: Any,
        size: int,
        undo: list[Callable[[], None]],
        *,
        must_exist: bool,
    ) -> None:
        if not tokens:
            old_root, old_size = self.value, self.size
            self.value, self.size = value, size
            if size > self.max_bytes:
                raise PatchTooLarge(
                    f"the patch would make the value {size} bytes, past {self.max_bytes}", pointer
                )

            def restore_root() -> None:
                self.value, self.size = old_root, old_size

            undo.append(restore_root)
            return
        parent = self._parent(tokens, pointer)
        token = tokens[-1]
        if parent.__class__ is dict:
            old = parent.get(token, _MISSING)
            if old is _MISSING:
                if must_exist:
                    raise PatchFailed(f"{pointer!r} does not exist (no member {token!r})")
                growth = size + _member(parent, token, len(parent))
            else:
                blob, wrap = self._measure(old, 0, pointer)
                growth = size - (len(blob) - 2 * wrap)
            self._room(growth, pointer)
            parent[token] = value
            self.size += growth

            def restore_member() -> None:
                if old is _MISSING:
                    del parent[token]
                else:
                    parent[token] = old
                self.size -= growth

            undo.append(restore_member)
            return
        if must_exist:
            i = _index(parent, token, pointer, end=False)
            blob, wrap = self._measure(parent[i], 0, pointer)
            growth = size - (len(blob) - 2 * wrap)
            self._room(growth, pointer)
            old = parent[i]
            parent[i] = value
            self.size += growth

            def restore_item() -> None:
                parent[i] = old
                self.size -= growth

            undo.append(restore_item)
            return
        i = _index(parent, token, pointer, end=True)
        growth = size + _member(parent, token, len(parent))
        self._room(growth, pointer)
        parent.insert(i, value)
        self.size += growth

        def uninsert() -> None:
            del parent[i]
            self.size -= growth

        undo.append(uninsert)

    def _take(
        self,
        tokens: list[str],
        pointer: str,
        undo: list[Callable[[], None]],
        *,
        measure: bool,
        size: int = 0,
    ) -> int:
        """Remove the value at ``tokens``; return its size (measured unless given)."""
        parent = self._parent(tokens, pointer)
        token = tokens[-1]
        if parent.__class__ is dict:
            if token not in parent:
                raise PatchFailed(f"{pointer!r} does not exist (no member {token!r})")
            key: Any = token
        else:
            key = _index(parent, token, pointer, end=False)
        value = parent[key]
        if measure:
            blob, wrap = self._measure(value, 0, pointer)
            size = len(blob) - 2 * wrap
        shrink = size + _member(parent, token, len(parent) - 1)
        del parent[key]
        self.size -= shrink

        def restore() -> None:
            if parent.__class__ is dict:
                parent[key] = value
            else:
                parent.insert(key, value)
            self.size += shrink

        undo.append(restore)
        return size


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: ``1 == 1.0`` but ``true != 1`` (Python's ``==`` says otherwise)."""
    if a.__class__ is bool or b.__class__ is bool:
        return a is b
    if a.__class__ is dict:
        return (
            b.__class__ is dict
            and a.keys() == b.keys()
            and all(_equal(v, b[k]) for k, v in a.items())
        )
    if a.__class__ is list:
        return b.__class__ is list and len(a) == len(b) and all(map(_equal, a, b))
    if b.__class__ is dict or b.__class__ is list:
        return False
    return bool(a == b)

"""The binary binding's event codec: one event (wire dict) ⇄ one protobuf message (TRANS-7).

Messages are ``_proto_events.proto`` (numbers from ``spec/proto-freeze.txt``), written and
read by upb. This is only the mapping, and it is the official ``@ag-ui/proto`` 1.0.0 one
rule for rule, because the corpus pins the encoded bytes:

* common fields ride in ``base_event`` (metadata only when an object);
* an open object is written in JavaScript property order;
* an outcome travels as its type string with its payload beside it (an unknown one is
  rebuilt on decode for enforcement to strip);
* ``content`` is a string, ``content_parts`` or ``activity_content``;
* a JSON Patch ``op`` is an enum: an operation's extension members do not survive.

Decoding gives the official decoder's dict, unvalidated: the pipeline judges both
transports alike (PROC-6). Converters are compiled once from the descriptors, so the
``.proto`` is the one place a field is named. Beside it: :mod:`~agui_tools.wire._proto_json`,
:mod:`~agui_tools.wire._proto_shapes`, :mod:`~agui_tools.wire._proto_deep`.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable, Mapping
from typing import Any, Final

from google.protobuf import message as _pb_message

from .._errors import LimitExceeded, ProtocolViolation, ProtocolWarning, UsageError
from . import _proto_events_pb2 as pb
from ._enforce import (
    DEFAULT_MAX_DEPTH,
    MAX_DEPTH_CEILING,
    checked_max_depth,
    depth_excess,
    nests_within,
    shared_enforcer,
)
from ._framing import PROTO_MEDIA_TYPE
from ._proto_deep import (
    DEEP_CUT,
    DEEP_DEPTH,
    TooDeep,
    deep_object_field,
    deep_value_field,
    shallow_envelope,
)
from ._proto_json import (
    NO_VALUE,
    fill_object,
    fill_value,
    js_key_order,
    object_or_none,
    read_object,
    read_value,
)
from ._proto_shapes import (
    RULE,
    input_from_wire,
    input_to_wire,
    malformed_frame,
    message_from_wire,
    message_to_wire,
    parts_from_wire,
    parts_to_wire,
    patch_from_wire,
    patch_to_wire,
)

__all__ = [
    "PROTO_MEDIA_TYPE",
    "UnknownEventArm",
    "decode_proto_event",
    "encode_proto_event",
    "js_key_order",
]


Event = dict[str, Any]


class UnknownEventArm(Exception):
    """The frame names only envelope arms this build predates: an event from a
    later protocol version, not broken bytes. There is no type string to hand
    onward, so the binding drops the frame with :attr:`warning` (TRANS-7) —
    the answer enforcement gives an unknown event on SSE.
    """

    def __init__(self, fields: list[int]) -> None:
        self.fields = fields
        self.warning = ProtocolWarning(
            RULE,
            "dropped a binary frame naming an event this build does not know (envelope field "
            f"{', '.join(map(str, fields))}): the protocol has an event this build predates.",
        )
        super().__init__(self.warning.message)


# -- compiled converters -----------------------------------------------------------

_VALUE: Final = pb.JsonValue.DESCRIPTOR
_OBJECT: Final = pb.JsonObject.DESCRIPTOR
_ENVELOPE: Final = pb.Event.DESCRIPTOR


_NULL_IS_A_VALUE: Final = frozenset(
    {
        "JsonPatchOperation.value",
        "StateSnapshotEvent.snapshot",
        "CustomEvent.value",
        "RawEvent.event",
    }
)
"""The JSON-value fields the schema requires, where ``null`` is the value itself.
Everywhere else a ``null`` stands for an absent optional member, which the
official encoder omits (``omitOptionalNulls``) — and so does this one."""
_MISSING: Final = object()


def _fname(prefix: str, md: Any) -> str:
    return prefix + str(md.full_name).replace(".", "_")


def _attr(name: str) -> str:
    return f"getattr(m, {name!r})" if keyword.iskeyword(name) else f"m.{name}"


def _compile() -> tuple[
    dict[str, Callable[[Any, Any], None]],
    dict[str, Callable[[Any], Event]],
    dict[str, Callable[[Any], Event]],
]:
    """Writers (dict → message) and readers (message → dict) for every event message.

    A reader mirrors the official decoder (fields without presence carry their default);
    an envelope arm handles its ``base_event`` inline, so events go in and come back flat,
    and a base whose type is not the arm's is refused.
    """
    sources: list[str] = []
    deep_sources: list[str] = []
    done: set[str] = set()
    envelope: Any = _ENVELOPE
    arms = {fd.message_type.full_name: fd.name.upper() for fd in envelope.fields}

    def base_writer(kind: str) -> list[str]:
        return [
            "    b = m.base_event",
            "    b.SetInParent()",
            f"    b.type = {_TYPE_NUMBER_OF[kind]}",
            "    v = get('timestamp')",
            "    if v is not None: b.timestamp = v",
            "    v = get('rawEvent')",
            "    if v is not None: fill_value(b.raw_event, v)",
            "    v = get('metadata')",
            "    if v is not None and isinstance(v, Mapping):",
            "        o = b.metadata; o.SetInParent(); fill_object(o, v)",
        ]

    def base_reader(kind: str, deep: bool) -> list[str]:
        # deep: the shallow base (raw_event, metadata: their occurrences' bytes)
        raw, meta = (
            ("b.raw_event", "b.metadata")
            if deep
            else ("b.HasField('raw_event')", "b.HasField('metadata')")
        )
        value, obj = ("deep_value", "deep_object") if deep else ("read_value", "read_object")
        return [
            "    if not m.HasField('base_event'): raise NoBase()",
            "    b = m.base_event",
            f"    if b.type != {_TYPE_NUMBER_OF[kind]}: raise WrongBase(b.type)",
            f"    d = {{'type': {kind!r}}}",
            "    if b.HasField('timestamp'): d['timestamp'] = b.timestamp",
            f"    if {raw}:",
            f"        v = {value}(b.raw_event)",
            "        if v is not NO_VALUE: d['rawEvent'] = v",
            f"    if {meta}: d['metadata'] = {obj}(b.metadata)",
        ]

    def gen(md: Any) -> None:
        if md.full_name in done:
            return
        done.add(md.full_name)
        kind = arms.get(md.full_name)
        w = [f"def {_fname('w_', md)}(m, d):", "    m.SetInParent()", "    get = d.get"]
        r = [f"def {_fname('r_', md)}(m):", "    d = {}"]
        # the same reader over the shallow messages (shallow_envelope): an open-JSON
        # field there is the bytes of its occurrences, read by the deep reader
        rd = [f"def {_fname('d_', md)}(m):", "    d = {}"]
        if kind is not None:
            r = r[:1] + base_reader(kind, False)
            rd = rd[:1] + base_reader(kind, True)
        for fd in sorted(md.fields, key=lambda f: f.number):
            name, key = fd.name, fd.json_name
            sub: Any = fd.message_type
            acc = _attr(name)
            if kind is not None and name == "base_event":
                w += base_writer(kind)
                continue
            w.append(f"    v = get({key!r})")
            w.append("    if v is not None:")
            if fd.is_repeated:
                if sub is None:
                    w.append(f"        {acc}.extend(v)")
                    r.append(f"    d[{key!r}] = list({acc})")
                    rd.append(r[-1])
                elif sub is _VALUE:
                    w.append(f"        add = {acc}.add")
                    w.append("        for x in v: fill_value(add(), x)")
                    r.append(f"    d[{key!r}] = [read_value(x) for x in {acc}]")
                    rd.append(f"    d[{key!r}] = [deep_value(x) for x in {acc}]")
                else:
                    gen(sub)
                    w.append(f"        add = {acc}.add")
                    w.append(f"        for x in v: {_fname('w_', sub)}(add(), x)")
                    r.append(f"    d[{key!r}] = [{_fname('r_', sub)}(x) for x in {acc}]")
                    rd.append(f"    d[{key!r}] = [{_fname('d_', sub)}(x) for x in {acc}]")
                continue
            if sub is _VALUE:
                if f"{md.name}.{name}" in _NULL_IS_A_VALUE:
                    w[-2] = f"    v = get({key!r}, MISSING)"
                    w[-1] = "    if v is not MISSING:"
                w.append(f"        fill_value({acc}, v)")
                r.append(f"    if m.HasField({name!r}):")
                r.append(f"        v = read_value({acc})")
                r.append(f"        if v is not NO_VALUE: d[{key!r}] = v")
                rd.append(f"    if {acc}:")
                rd.append(f"        v = deep_value({acc})")
                rd.append(f"        if v is not NO_VALUE: d[{key!r}] = v")
            elif sub is _OBJECT:
                w.append(f"        o = {acc}; o.SetInParent(); fill_object(o, v)")
                r.append(f"    if m.HasField({name!r}): d[{key!r}] = read_object({acc})")
                rd.append(f"    if {acc}: d[{key!r}] = deep_object({acc})")
            elif sub is not None:
                gen(sub)
                w.append(f"        {_fname('w_', sub)}({acc}, v)")
                r.append(f"    if m.HasField({name!r}): d[{key!r}] = {_fname('r_', sub)}({acc})")
                rd.append(f"    if m.HasField({name!r}): d[{key!r}] = {_fname('d_', sub)}({acc})")
            else:
                w.append(
                    f"        m.{name} = v"
                    if not keyword.iskeyword(name)
                    else f"        setattr(m, {name!r}, v)"
                )
                if fd.has_presence:
                    r.append(f"    if m.HasField({name!r}): d[{key!r}] = {acc}")
                else:
                    r.append(f"    d[{key!r}] = {acc}")
                rd.append(r[-1])
        r.append("    return d")
        rd.append("    return d")
        sources.append("\n".join(w))
        sources.append("\n".join(r))
        deep_sources.append("\n".join(rd))

    for fd in _ENVELOPE.fields:
        gen(fd.message_type)
    namespace: dict[str, Any] = {
        "fill_value": fill_value,
        "fill_object": fill_object,
        "read_value": read_value,
        "read_object": read_object,
        "NO_VALUE": NO_VALUE,
        "MISSING": _MISSING,
        "Mapping": Mapping,
        "NoBase": _NoBase,
        "WrongBase": _WrongBase,
        "deep_value": deep_value_field,
        "deep_object": deep_object_field,
    }
    exec(compile("\n\n".join(sources), "<agui_tools proto converters>", "exec"), namespace)
    exec(compile("\n\n".join(deep_sources), "<agui_tools deep proto readers>", "exec"), namespace)
    writers = {}
    readers = {}
    deep_readers = {}
    for fd in _ENVELOPE.fields:
        writers[fd.name] = namespace[_fname("w_", fd.message_type)]
        readers[fd.name] = namespace[_fname("r_", fd.message_type)]
        deep_readers[fd.name] = namespace[_fname("d_", fd.message_type)]
    return writers, readers, deep_readers


def _all_messages(file: Any) -> list[Any]:
    """Every message type of a file descriptor, nested ones included."""
    out = []
    todo = list(file.message_types_by_name.values())
    while todo:
        md = todo.pop()
        out.append(md)
        todo.extend(md.nested_types)
    return out


class _NoBase(Exception):
    """An event message without its ``base_event``."""


class _WrongBase(Exception):
    """An event message whose base declares another type than its envelope arm."""

    def __init__(self, declared: int) -> None:
        self.declared = declared


_TYPE_NUMBER_OF: Final = {v.name: v.number for v in pb.EventType.DESCRIPTOR.values}
_WRITERS, _READERS, _DEEP_READERS = _compile()

_ARM_OF_TYPE: Final = {fd.name.upper(): fd.name for fd in _ENVELOPE.fields}
_TYPE_OF_ARM: Final = {fd.name: fd.name.upper() for fd in _ENVELOPE.fields}
_ARM_NUMBERS: Final = frozenset(fd.number for fd in _ENVELOPE.fields)
_TYPE_NAME: Final = {v.number: v.name for v in pb.EventType.DESCRIPTOR.values}

# -- encode ---------------------------------------------------------------------------


def _reshape(
    kind: str, event: Mapping[str, Any], notes: list[ProtocolWarning] | None
) -> Mapping[str, Any]:
    """The event with the members the wire spells differently respelled (the
    official mapping); most events need none and pass through untouched."""
    if kind not in _RESHAPED:
        return event
    rest = dict(event)
    if kind == "MESSAGES_SNAPSHOT" and isinstance(rest.get("messages"), list):
        rest["messages"] = [
            message_to_wire(m, f"/messages/{i}", notes) for i, m in enumerate(rest["messages"])
        ]
    elif kind == "RUN_FINISHED":
        outcome = rest.pop("outcome", None)
        rest["outcome"], rest["pendingToolCallIds"], rest["interrupts"] = "", None, None
        if isinstance(outcome, Mapping):
            otype = outcome.get("type")
            rest["outcome"] = otype if isinstance(otype, str) else ""
            if otype == "success":
                rest["pendingToolCallIds"] = outcome.get("pendingToolCallIds")
            elif otype == "interrupt":
                rest["interrupts"] = outcome.get("interrupts")
    elif kind == "SUBAGENT_FINISHED":
        outcome = rest.pop("outcome", None)
        rest["outcome"], rest["interruptIds"] = "", None
        if isinstance(outcome, Mapping):
            otype = outcome.get("type")
            rest["outcome"] = otype if isinstance(otype, str) else ""
            if otype == "suspended":
                rest["interruptIds"] = outcome.get("interruptIds")
    elif kind == "STATE_DELTA":
        rest["delta"] = patch_to_wire(rest.get("delta"), "/delta")
    elif kind == "ACTIVITY_DELTA":
        rest["patch"] = patch_to_wire(rest.get("patch"), "/patch")
    elif kind == "TOOL_CALL_RESULT":
        content = rest.get("content")
        if isinstance(content, list):
            rest["contentParts"] = parts_to_wire(content, "/content", notes)
            rest["content"] = None
    elif kind == "RUN_STARTED" and rest.get("input") is not None:
        rest["input"] = input_to_wire(rest["input"], notes)
    elif kind == "ACTIVITY_SNAPSHOT":
        rest["content"] = object_or_none(rest.get("content"))
    return rest


_RESHAPED: Final = frozenset(
    {
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
        "SUBAGENT_FINISHED",
        "STATE_DELTA",
        "ACTIVITY_DELTA",
        "TOOL_CALL_RESULT",
        "RUN_STARTED",
        "ACTIVITY_SNAPSHOT",
    }
)


def _shape(
    event: Mapping[str, Any], notes: list[ProtocolWarning] | None
) -> tuple[str, Mapping[str, Any]]:
    """The envelope arm for ``event`` and the event as its writer takes it."""
    kind = event.get("type")
    if not isinstance(kind, str) or kind not in _ARM_OF_TYPE:
        raise ValueError(f"no binary wire form for an event of type {kind!r}")
    return _ARM_OF_TYPE[kind], _reshape(kind, event, notes)


def encode_proto_event(
    event: Mapping[str, Any],
    *,
    warnings: list[ProtocolWarning] | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> bytes:
    """One event (a wire dict) as the bytes of one binary frame's message.

    Byte for byte what ``@ag-ui/proto`` 1.0.0 writes (1.1 members on their frozen numbers);
    unmodelled members are not written; a part with no wire form is dropped into ``warnings``.
    Raises ``ValueError`` for an event no frame can carry and :class:`~agui_tools.UsageError`
    (``LIMIT``) past ``max_depth``, so no frame is written that the same limit refuses.
    """
    if _nests(event) and not nests_within(event, max_depth):
        where = depth_excess(event, max_depth)
        if where is not None:
            raise UsageError(
                f"{event.get('type')}: the value at {where} nests deeper than "
                f"max_depth={max_depth} levels (counting the event itself as one; the path "
                "names the first value past the limit): a consumer refuses it on either "
                "binding, so no binary frame is written for it.",
                rule="LIMIT",
            )
    arm, shaped = _shape(event, warnings)
    envelope = _Envelope()
    try:
        _WRITERS[arm](getattr(envelope, arm), shaped)
    except (TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise ValueError(f"{event.get('type')}: {exc}") from None
    data: bytes = envelope.SerializeToString()
    return data


_Envelope: Final = pb.Event


def _nests(event: Mapping[str, Any]) -> bool:
    """Whether any member of ``event`` may be a container (most events have none)."""
    for v in event.values():
        cls = v.__class__
        if cls is str or cls is int or cls is float or cls is bool or v is None:
            continue
        return True
    return False


# -- decode ---------------------------------------------------------------------------


def _outcome_from_wire(event: dict[str, Any], payload: tuple[str, ...]) -> None:
    outcome = event.pop("outcome", "")
    carried = {k: v for k in payload if (v := event.pop(k, None))}
    if not outcome:
        event.update(carried)  # no outcome: whatever rode beside it stays where it was
        return
    if outcome == "interrupt":
        carried = {"interrupts": carried.get("interrupts", []), **carried}
    event["outcome"] = {"type": outcome, **carried}


def _unknown_arms(data: bytes) -> list[int]:
    """The envelope fields of a frame that names no known arm, when every one is a
    well-formed length-delimited message — an event from a later protocol; else []."""
    from google.protobuf import empty_pb2  # any message type: all of its fields are unknown

    probe = empty_pb2.Empty()
    try:
        probe.ParseFromString(data)
    except _pb_message.DecodeError:
        return []
    found = []
    for f in _unknown(probe):
        if f.field_number in _ARM_NUMBERS or f.wire_type != 2:
            return []
        try:
            empty_pb2.Empty().ParseFromString(f.data)
        except _pb_message.DecodeError:
            return []
        found.append(f.field_number)
    return found


def _unknown(message: Any) -> list[Any]:
    """A message's unknown fields (the typing stubs do not know the set iterates)."""
    from google.protobuf import unknown_fields

    fields: Any = unknown_fields.UnknownFieldSet(message)
    return list(fields)


def _one_field(data: bytes) -> bool:
    """Whether the frame is exactly one length-delimited field, as every frame an
    encoder writes is (the envelope's one arm). Reads only the tag and length."""
    size = len(data)
    if size > 3 and data[0] < 0x80 and data[1] < 0x80:  # arms 1-15, under 128 bytes
        return data[0] & 7 == 2 and data[1] + 2 == size
    if size > 4 and data[1] < 0x80 and data[2] < 0x80:  # arms 16-31, under 128 bytes
        return data[0] & 7 == 2 and data[2] + 3 == size
    pos = 0
    for _ in range(2):  # the tag, then the length
        value = shift = 0
        while True:
            if pos >= len(data) or shift > 28:
                return False
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        if _ == 0 and value & 7 != 2:
            return False
    return pos + value == len(data)


def _arms_in(data: bytes) -> set[int]:
    """The distinct known arms a frame's top level names. Protobuf itself keeps
    the last of several; the official decoder rejects such a frame — and so do
    we, or two readers would hand on different events."""
    from google.protobuf import empty_pb2

    probe = empty_pb2.Empty()
    probe.ParseFromString(data)
    return {f.field_number for f in _unknown(probe)} & _ARM_NUMBERS


def decode_proto_event(
    data: bytes,
    *,
    warnings: list[ProtocolWarning] | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Event:
    """One binary frame's message back to the event it carries (a wire dict), unvalidated.

    Raises :class:`UnknownEventArm` for a frame naming only arms this build predates,
    :class:`ProtocolViolation` (TRANS-7) for bytes that are not one known event, and the same
    :class:`LimitExceeded` (``LIMIT``) enforcement gives on SSE for a value past ``max_depth``
    (above :data:`~agui_tools.wire._enforce.MAX_DEPTH_CEILING`: :class:`UsageError`).
    """
    if max_depth > MAX_DEPTH_CEILING or max_depth < 2:
        checked_max_depth(max_depth)
    try:
        envelope = _parse(data)
    except _pb_message.DecodeError as exc:
        # upb's own nesting limit, or bytes that are not a message: the deep
        # reader tells the two apart, value by value
        return _decode_deep(data, warnings, max_depth, f"not a protobuf message ({exc})")
    return _read(data, envelope, _READERS, warnings, "")


def _decode_deep(
    data: bytes,
    warnings: list[ProtocolWarning] | None,
    max_depth: int,
    broken: str = "not a protobuf message (Error parsing message)",
) -> Event:
    """:func:`decode_proto_event` for a frame upb refuses whole: its structure
    through the shallow messages, its open values by the deep reader (see
    "open JSON nested past upb's limit"). ``broken`` is what bytes that do not
    decode are called."""
    try:
        envelope = shallow_envelope().FromString(data)
    except _pb_message.DecodeError:
        raise malformed_frame(broken) from None
    token = DEEP_DEPTH.set(max_depth)
    try:
        return _read(data, envelope, _DEEP_READERS, warnings, broken)
    except TooDeep as exc:
        verdict = _verdict(data, envelope, max_depth, exc.path, broken, warnings)
        if isinstance(verdict, ProtocolViolation):
            raise verdict from None
        return verdict
    finally:
        DEEP_DEPTH.reset(token)


def _verdict(
    data: bytes,
    envelope: Any,
    max_depth: int,
    inner: str,
    broken: str,
    warnings: list[ProtocolWarning] | None,
) -> ProtocolViolation | Event:
    """The refusal of a frame nested past the deep reader's bound, worded as on SSE.

    The frame is re-read with values cut at ``max_depth`` and enforcement names the first value
    past it. If enforcement accepts the cut event, the deep value was one protobuf discards (a
    repeated map key) and the cut event is the frame's event.
    """
    kind = _TYPE_OF_ARM[envelope.WhichOneof("event")]
    own = LimitExceeded(
        "LIMIT",
        f"a binary frame's {kind} event carries a value nested deeper than "
        f"max_depth={max_depth} levels (the first level past it: {inner} inside the "
        "value); refused while decoding. Raise the limit if such values are expected.",
        event_type=kind,
        where="binary framing",
    )
    cut = DEEP_CUT.set(True)
    notes: list[ProtocolWarning] = []
    try:
        event = _read(data, envelope, _DEEP_READERS, notes, broken)
    except (ProtocolViolation, UnknownEventArm):
        return own
    finally:
        DEEP_CUT.reset(cut)
    try:
        shared_enforcer(max_depth).event(event)
    except ProtocolViolation as exc:
        return exc
    if warnings is not None:
        warnings.extend(notes)
    return event  # the deep value was overridden: nothing cut is left in the event


def _read(
    data: bytes,
    envelope: Any,
    readers: dict[str, Callable[[Any], Event]],
    warnings: list[ProtocolWarning] | None,
    broken: str,
) -> Event:
    """The event a parsed envelope carries, read by ``readers``."""
    arm = envelope.WhichOneof("event")
    if arm is None:
        future = _unknown_arms(data)
        if future:
            raise UnknownEventArm(future)
        raise malformed_frame("the envelope names no event")
    if not _one_field(data) and len(_arms_in(data)) > 1:
        raise malformed_frame("the envelope names more than one event", _TYPE_OF_ARM[arm])
    try:
        event = readers[arm](getattr(envelope, arm))
    except _pb_message.DecodeError:  # an open value's bytes, read by the deep reader
        raise malformed_frame(broken, _TYPE_OF_ARM[arm]) from None
    except _NoBase:
        raise malformed_frame("the event carries no base_event", _TYPE_OF_ARM[arm]) from None
    except _WrongBase as exc:
        kind = _TYPE_OF_ARM[arm]
        declared = _TYPE_NAME.get(exc.declared, str(exc.declared))
        raise malformed_frame(
            f"the envelope carries {kind} but the base event declares {declared}", kind
        ) from None
    kind = event["type"]
    if kind in _REBUILT:
        notes: list[ProtocolWarning] = []
        _rebuild(kind, event, notes)
        if notes and warnings is not None:
            warnings.extend(ProtocolWarning(w.rule, w.message, event_type=kind) for w in notes)
    return event


_parse: Final = pb.Event.FromString
_REBUILT: Final = frozenset(
    {
        "MESSAGES_SNAPSHOT",
        "RUN_FINISHED",
        "SUBAGENT_FINISHED",
        "STATE_DELTA",
        "ACTIVITY_DELTA",
        "RUN_ERROR",
        "TOOL_CALL_RESULT",
        "RUN_STARTED",
    }
)


def _rebuild(kind: str, event: Event, notes: list[ProtocolWarning]) -> None:
    """The members the wire spells differently, back in their JSON spelling."""
    if kind == "MESSAGES_SNAPSHOT":
        event["messages"] = [message_from_wire(m, notes, kind) for m in event["messages"]]
    elif kind == "RUN_FINISHED":
        _outcome_from_wire(event, ("pendingToolCallIds", "interrupts"))
        if not event.get("usage"):
            event.pop("usage", None)
    elif kind == "SUBAGENT_FINISHED":
        _outcome_from_wire(event, ("interruptIds",))
    elif kind == "STATE_DELTA":
        patch_from_wire(event["delta"])
    elif kind == "ACTIVITY_DELTA":
        patch_from_wire(event["patch"])
    elif kind == "RUN_ERROR":
        if not event.get("usage"):
            event.pop("usage", None)
    elif kind == "TOOL_CALL_RESULT":
        parts = event.pop("contentParts")
        if "content" in event and parts:
            raise malformed_frame("a result carries both string content and content parts", kind)
        if "content" not in event:
            event["content"] = parts_from_wire(parts, notes)
    elif kind == "RUN_STARTED" and "input" in event:
        event["input"] = input_from_wire(event["input"], notes, kind)

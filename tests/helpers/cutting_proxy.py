"""A TCP proxy on loopback that cuts the connection at a chosen SSE event boundary.

The fault injector of the resumable campaign: bytes pass through unchanged
(client → agent, agent → client) until the agent's side has sent the ``cut_at``-th
end of an SSE event (a blank line, ``\\n\\n``), counted over every connection;
right after it, that connection is closed both ways, as a dropped network would.
Only one cut happens per proxy unless ``every`` is set, which cuts each
connection after ``every`` events of its own (a flaky link). ``connections``
counts what the client opened (the run request, then each rejoin);
``refuse_after_cut`` makes the agent unreachable after the cut; ``stall`` makes the
cut a silence (the connection stays open, nothing more arrives).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field


@dataclass
class Cutter:
    cut_at: int | None = None  # the global event boundary after which to cut once
    every: int | None = None  # or: cut each connection after this many of its events
    refuse_after_cut: bool = False  # once cut, every new connection is closed at once
    stall: bool = False  # at the cut, the connection goes silent instead of closing
    mid_event: int = 0  # at the cut, this many bytes of what follows pass first (a torn event)
    seen: int = 0
    cuts: int = 0
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, data: bytes, carry: bytes, own: int) -> tuple[bytes, bool, int, bytes]:
        """How much of ``data`` to forward, whether to cut after it, this connection's
        events so far, and the byte to carry into the next chunk's search."""
        joined = carry + data
        start = len(carry)
        pos = 0
        while (found := joined.find(b"\n\n", pos)) >= 0:
            pos = found + 2
            own += 1
            with self.lock:
                self.seen += 1
                once = self.cut_at is not None and self.seen == self.cut_at
                flaky = self.every is not None and own >= self.every
                if once or flaky:
                    self.cuts += 1
                    return data[: pos - start], True, own, b""
        return data, False, own, joined[pos:][-1:]


def _pump_up(src: socket.socket, dst: socket.socket) -> None:
    with suppress(OSError):
        while chunk := src.recv(65536):
            dst.sendall(chunk)
    with suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def _torn(src: socket.socket, size: int, following: bytes) -> bytes:
    """Up to ``size`` bytes of what follows the cut (``following``: what of it came with
    the cut's chunk), stopping short of the next event's end."""
    while len(following) < size and b"\n\n" not in following:
        chunk = src.recv(65536)
        if not chunk:
            break
        following += chunk
    end = following.find(b"\n\n")
    return following[: min(size, end if end >= 0 else len(following))]


def _pump_down(src: socket.socket, dst: socket.socket, cutter: Cutter) -> None:
    carry = b""
    own = 0
    try:
        while chunk := src.recv(65536):
            forward, cut, own, carry = cutter.take(chunk, carry, own)
            dst.sendall(forward)
            if cut and cutter.mid_event:
                dst.sendall(_torn(src, cutter.mid_event, chunk[len(forward) :]))
            if cut and cutter.stall:
                while src.recv(65536):  # swallowed: the client hears nothing more
                    pass
            if cut:
                break
    except OSError:
        pass
    for s in (dst, src):
        with suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)
        s.close()


@contextmanager
def cutting_proxy(target_port: int, cutter: Cutter, later_port: int | None = None) -> Iterator[str]:
    """Listen on a free loopback port, forward to ``target_port``; yield the base URL.
    ``later_port``: where every connection after the first goes (a second replica
    serving the rejoins)."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    listener.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            port = target_port if cutter.connections == 0 else (later_port or target_port)
            cutter.connections += 1
            if cutter.refuse_after_cut and cutter.cuts:
                client.close()  # the agent is gone for good
                continue
            upstream = socket.create_connection(("127.0.0.1", port))
            threading.Thread(target=_pump_up, args=(client, upstream), daemon=True).start()
            threading.Thread(
                target=_pump_down, args=(upstream, client, cutter), daemon=True
            ).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()

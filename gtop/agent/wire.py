"""The framing spoken over the agent's Unix socket, shared by the agent and gtop.

Every message is a 12-byte header (type, flags, payload length) and a payload. Raw CUPTI
activity buffers travel as :data:`BUFFER` frames whose payload is a small
:data:`BUFFER_HEAD` (records CUPTI dropped since the previous buffer) followed by the
buffer's valid bytes, untouched. Everything else is a JSON object.

Standard library only: this module is imported inside the profiled process.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

HEADER = struct.Struct("<III")
"""type, reserved, payload length."""

BUFFER_HEAD = struct.Struct("<QQ")
"""records CUPTI dropped since the previous buffer; buffer requests declined so far."""

MAX_PAYLOAD = 64 << 20

# agent -> gtop
HELLO = 1  # {"pid", "python", "argv", "cupti_version", "record_sizes", "mode", ...}
BUFFER = 2  # BUFFER_HEAD + raw activity records
NAMES = 3  # {"names": {pointer (decimal str): name}}
CLOCK = 4  # {"samples": [[mono_before, cupti, mono_after], ...]}
STATE = 5  # {"state": str, "message": str, ...}
DRAIN = 6  # {}: the last buffer has been sent; gtop answers with its pending resolves,
#            then {"op": "drained"}, while the names are still readable (before CUPTI
#            is finalised)
PROBE = 7  # PROBE_HEAD + JSON {"kernel", "probe", "launch", "header", "overflow",
#            "every", "sample", "gt_samples"} + the launch's raw probe records
PROBE_STATE = 8  # {"kernel", "probe", "on", "ok", "message"}: answer to a "probe" op
COST = 9  # the agent's own cost so far (gtop.agent.cost): {"agent_cpu_ns", "gil_ns",
#           "callback_ns", "callbacks", "ship_ns", "ships", "wakes", "t_ns", ...}
COVERAGE = 10  # {"on": bool, "t_ns": int, "rate": float, "duty": float}: kernel sampling
#               switched tracing off or on (gtop.agent.sampling); t_ns (CLOCK_MONOTONIC)
#               is read just before disabling, just after enabling; duty 1.0: not sampling;
#               "switch_ns": ns the disable or enable calls took
# gtop -> agent
CONTROL = 16  # {"op": "kinds" | "resolve" | "detach" | "drained" | "probe", ...}
#               probe: {"kernel": regex, "probe": name, "every": k, "on": bool}

PROBE_HEAD = struct.Struct("<I")
"""Length of the JSON part of a :data:`PROBE` frame."""


class ProtocolError(Exception):
    """The peer sent something that is not a frame of this protocol."""


def frame(kind: int, payload: bytes) -> bytes:
    return HEADER.pack(kind, 0, len(payload)) + payload


def json_frame(kind: int, obj: dict[str, Any]) -> bytes:
    return frame(kind, json.dumps(obj, separators=(",", ":")).encode())


def decode_json(payload: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(payload)
    except ValueError as exc:
        raise ProtocolError(f"bad JSON payload: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("JSON payload is not an object")
    return obj


def probe_frame(info: dict[str, Any], records: bytes) -> bytes:
    """A :data:`PROBE` frame: ``info`` (JSON) and the records' raw bytes."""
    text = json.dumps(info, separators=(",", ":")).encode()
    return frame(PROBE, PROBE_HEAD.pack(len(text)) + text + records)


def decode_probe(payload: bytes) -> tuple[dict[str, Any], memoryview]:
    """``(info, raw records)`` of a :data:`PROBE` frame's payload.

    Raises:
        ProtocolError: the payload is shorter than its JSON part says.
    """
    if len(payload) < PROBE_HEAD.size:
        raise ProtocolError("short probe frame")
    (n,) = PROBE_HEAD.unpack_from(payload)
    if len(payload) < PROBE_HEAD.size + n:
        raise ProtocolError("probe frame shorter than its JSON part")
    info = decode_json(payload[PROBE_HEAD.size : PROBE_HEAD.size + n])
    return info, memoryview(payload)[PROBE_HEAD.size + n :]


class FrameReader:
    """Reassembles frames from a stream of received bytes."""

    def __init__(self) -> None:
        self._buf = bytearray()

    @property
    def pending(self) -> int:
        """Bytes held for a frame not yet complete."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        """Add received bytes; return every complete ``(type, payload)`` frame.

        Raises:
            ProtocolError: a header announces a payload larger than :data:`MAX_PAYLOAD`.
        """
        self._buf += data
        out = []
        while len(self._buf) >= HEADER.size:
            kind, _, length = HEADER.unpack_from(self._buf)
            if length > MAX_PAYLOAD:
                raise ProtocolError(f"frame of {length} bytes exceeds the limit")
            end = HEADER.size + length
            if len(self._buf) < end:
                break
            out.append((kind, bytes(self._buf[HEADER.size : end])))
            del self._buf[:end]
        return out


def peer_uid(sock: socket.socket) -> tuple[int, int]:
    """``(pid, uid)`` of the process at the other end of a connected Unix socket."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    return pid, uid


def peer_allowed(uid: int, own_uid: int) -> bool:
    """Only the same user or root may talk to the agent, or be talked to by gtop."""
    return uid in (own_uid, 0)

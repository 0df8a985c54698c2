"""The agent's framing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gtop.agent import wire


@given(st.lists(st.binary(max_size=300), max_size=20), st.integers(1, 50))
def test_frames_survive_any_split(payloads, chunk):
    data = b"".join(wire.frame(wire.BUFFER, p) for p in payloads)
    reader = wire.FrameReader()
    got = []
    for i in range(0, len(data), chunk):
        got += reader.feed(data[i : i + chunk])
    assert got == [(wire.BUFFER, p) for p in payloads]


def test_oversized_frame_is_a_protocol_error():
    with pytest.raises(wire.ProtocolError):
        wire.FrameReader().feed(wire.HEADER.pack(wire.BUFFER, 0, wire.MAX_PAYLOAD + 1))


def test_json_payload_must_be_an_object():
    assert wire.decode_json(b'{"a": 1}') == {"a": 1}
    with pytest.raises(wire.ProtocolError):
        wire.decode_json(b"[1]")
    with pytest.raises(wire.ProtocolError):
        wire.decode_json(b"{")


def test_peer_check_allows_same_user_and_root_only():
    assert wire.peer_allowed(1000, 1000) and wire.peer_allowed(0, 1000)
    assert not wire.peer_allowed(1001, 1000)


def test_modes_and_kinds():
    from gtop.agent.modes import graph_level, kinds_for, toggle_graph_nodes

    assert kinds_for("default") == ("graph", "kernel", "memcpy", "memset", "sync", "marker")
    assert kinds_for("graph-nodes") == ("kernel", "memcpy", "memset", "sync", "marker")
    assert graph_level(kinds_for("default")) and not graph_level(kinds_for("full"))
    assert toggle_graph_nodes(kinds_for("default")) == kinds_for("graph-nodes")
    assert toggle_graph_nodes(kinds_for("graph-nodes")) == kinds_for("default")
    assert "runtime" in kinds_for("full") and "driver" in kinds_for("full")
    assert kinds_for("kernel, runtime") == ("kernel", "runtime")
    for bad in ("fast", "kernel,bogus", ""):
        with pytest.raises(ValueError, match="unknown agent mode"):
            kinds_for(bad)

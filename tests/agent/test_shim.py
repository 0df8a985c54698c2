"""The C buffer callbacks (cupti_shim.c), as committed in shim_blob, driven directly."""

from __future__ import annotations

import ctypes
import platform
import re
import time

import pytest

from gtop.agent import shim_blob

pytestmark = pytest.mark.skipif(platform.machine() != shim_blob.ARCH, reason="x86-64 blob")


@pytest.fixture
def shim(tmp_path):
    path = tmp_path / "shim.so"
    path.write_bytes(shim_blob.shim_bytes())
    lib = ctypes.CDLL(str(path))
    lib.gtop_shim_setup.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
    lib.gtop_shim_take.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int]
    lib.gtop_shim_give.argtypes = [ctypes.c_void_p]
    lib.gtop_shim_completed.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_size_t,
    ]
    lib.gtop_shim_declined.restype = ctypes.c_uint64
    lib.gtop_shim_last_request.restype = ctypes.c_uint64
    return lib


def request(lib) -> tuple[int | None, int]:
    buf, size, most = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t(7)
    lib.gtop_shim_requested(ctypes.byref(buf), ctypes.byref(size), ctypes.byref(most))
    assert most.value == 0
    return buf.value, size.value


def take(lib) -> list[tuple[int, int, int]]:
    bufs, valid, dropped = (ctypes.c_void_p * 8)(), (ctypes.c_size_t * 8)(), (ctypes.c_size_t * 8)()
    n = lib.gtop_shim_take(bufs, valid, dropped, 8)
    return [(bufs[i], valid[i], dropped[i]) for i in range(n)]


def test_lends_small_buffers_after_a_quiet_spell_and_more_while_they_fill_fast(shim):
    """Lent sizes follow the request rate: 16 KiB at first and after a quiet spell (so
    the first buffer of resumed work fills and comes back complete), doubling per request
    while requests come within 250 ms, never above the buffers' size."""
    mib = 1 << 20
    assert shim.gtop_shim_setup(mib, 16, None) == 0
    assert shim.gtop_shim_last_request() == 0
    sizes = []
    for _ in range(8):
        buf, size = request(shim)
        sizes.append(size)
        shim.gtop_shim_completed(None, 0, buf, size, size)
        shim.gtop_shim_give(take(shim)[0][0])
    assert sizes == [16384, 32768, 65536, 131072, 262144, 524288, mib, mib]
    before = time.monotonic_ns()
    time.sleep(1.2)  # a quiet spell: the rate of the last requests would fill 1 MiB in ~0.5 s
    _, size = request(shim)
    assert 16384 <= size <= mib * 0.5 / 1.2 and shim.gtop_shim_last_request() > before
    assert shim.gtop_shim_setup(mib, 16, None) == 0  # a new session starts small again
    assert request(shim)[1] == 16384


def test_lends_bounded_zeroed_buffers_and_declines_beyond(shim):
    assert shim.gtop_shim_setup(4096, 2, None) == 0
    a, size = request(shim)
    b, _ = request(shim)
    assert a and b and a != b and size == 4096
    assert ctypes.string_at(a, 4096) == bytes(4096)
    assert request(shim) == (None, 0) and shim.gtop_shim_declined() == 1
    shim.gtop_shim_completed(None, 0, a, 4096, 100)
    shim.gtop_shim_completed(None, 0, b, 4096, 200)
    assert take(shim) == [(a, 100, 0), (b, 200, 0)]
    assert take(shim) == []
    shim.gtop_shim_give(a)
    assert request(shim) == (a, 4096)
    shim.gtop_shim_give(a)
    shim.gtop_shim_give(b)
    assert shim.gtop_shim_trim() == 0


def test_reads_cuptis_drop_count_on_each_buffer(shim):
    calls = []
    proto = ctypes.CFUNCTYPE(
        ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_size_t)
    )

    def dropped(ctx, stream, out):
        calls.append(stream)
        out[0] = 5
        return 0

    fn = proto(dropped)
    assert shim.gtop_shim_setup(4096, 1, ctypes.cast(fn, ctypes.c_void_p)) == 0
    a, _ = request(shim)
    shim.gtop_shim_completed(None, 3, a, 4096, 8)
    assert take(shim) == [(a, 8, 5)] and calls == [3]
    shim.gtop_shim_give(a)
    shim.gtop_shim_trim()


def test_rejects_bad_settings(shim):
    assert shim.gtop_shim_setup(4096, 0, None) != 0
    assert shim.gtop_shim_setup(16, 2, None) != 0


def test_blob_is_what_the_source_builds_to():
    """The committed blob is byte for byte cupti_shim.c built by tools/gen_shim_blob.py
    (a changed source with a stale blob fails here)."""
    from gen_shim_blob import build

    assert build() == shim_blob.shim_bytes(), "stale blob: run python tools/gen_shim_blob.py"


def dir_symbols(blob: bytes) -> set[str]:
    return {s.decode() for s in re.findall(rb"gtop_shim_\w+", blob)}


def ship_lib(shim):
    shim.gtop_shim_ship.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    return shim


def read_frames(sock, count: int) -> list[tuple[int, int, int, int, bytes]]:
    """``count`` BUFFER frames: (type, length, dropped, declined, records)."""
    import struct

    data = b""
    out = []
    while len(out) < count:
        data += sock.recv(1 << 20)
        while len(data) >= 28:
            kind, _, length = struct.unpack_from("<III", data)
            if len(data) < 12 + length:
                break
            dropped, declined = struct.unpack_from("<QQ", data, 12)
            out.append((kind, length, dropped, declined, data[28 : 12 + length]))
            data = data[12 + length :]
    return out


def test_ship_sends_frames_rezeroes_and_lends_again(shim):
    import socket

    lib = ship_lib(shim)
    assert lib.gtop_shim_setup(4096, 2, None) == 0
    a, _ = request(lib)
    b, _ = request(lib)
    assert request(lib) == (None, 0)  # one declined request
    ctypes.memset(a, 0xAB, 100)
    ctypes.memset(b, 0xCD, 4096)
    lib.gtop_shim_completed(None, 0, a, 4096, 100)
    lib.gtop_shim_completed(None, 0, b, 4096, 4096)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        ours.settimeout(5)  # non-blocking underneath, as the agent's socket is
        sent = ctypes.c_uint64()
        assert lib.gtop_shim_ship(ours.fileno(), 1000, ctypes.byref(sent)) == 2
        assert sent.value == 100 + 4096
        frames = read_frames(theirs, 2)
    assert frames == [(2, 116, 0, 1, b"\xab" * 100), (2, 4112, 0, 1, b"\xcd" * 4096)]
    # both are zeroed and lent again
    got = {request(lib)[0], request(lib)[0]}
    assert got == {a, b}
    assert ctypes.string_at(a, 4096) == bytes(4096) == ctypes.string_at(b, 4096)
    lib.gtop_shim_give(a)
    lib.gtop_shim_give(b)
    lib.gtop_shim_trim()


def test_ship_to_a_full_or_closed_socket_fails_and_still_recycles(shim):
    import socket

    lib = ship_lib(shim)
    assert lib.gtop_shim_setup(1 << 20, 4, None) == 0
    bufs = [request(lib)[0] for _ in range(4)]
    for buf in bufs:
        ctypes.memset(buf, 1, 1 << 20)
        lib.gtop_shim_completed(None, 0, buf, 1 << 20, 1 << 20)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        ours.setblocking(False)
        assert lib.gtop_shim_ship(ours.fileno(), 50, None) == -1  # nobody reads: times out
    assert sorted(request(lib)[0] for _ in range(4)) == sorted(bufs)
    assert all(ctypes.string_at(b, 1 << 20) == bytes(1 << 20) for b in bufs)
    for buf in bufs:
        lib.gtop_shim_completed(None, 0, buf, 1 << 20, 10)
    assert lib.gtop_shim_ship(-1, 0, None) == -1  # recycle only
    assert sorted(request(lib)[0] for _ in range(4)) == sorted(bufs)
    lib.gtop_shim_completed(None, 0, bufs[0], 1 << 20, 10)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    theirs.close()
    with ours:
        assert lib.gtop_shim_ship(ours.fileno(), 1000, None) == -1  # EPIPE, no SIGPIPE
    assert request(lib)[0] == bufs[0]
    for buf in bufs:
        lib.gtop_shim_give(buf)
    lib.gtop_shim_trim()


def test_ship_counts_every_byte_of_buffers_sent_in_pieces(shim):
    # a 1 MiB buffer does not fit a Unix socket's buffer: sendmsg sends it in pieces, and
    # the byte count (kernel sampling's record rate comes from it) must still be whole
    import socket
    import threading

    lib = ship_lib(shim)
    assert lib.gtop_shim_setup(1 << 20, 2, None) == 0
    bufs = [request(lib)[0] for _ in range(2)]
    for buf, valid in zip(bufs, (1 << 20, 300_001), strict=True):
        ctypes.memset(buf, 7, valid)
        lib.gtop_shim_completed(None, 0, buf, 1 << 20, valid)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    received = bytearray()
    with ours, theirs:
        ours.setblocking(False)
        reader = threading.Thread(
            target=lambda: [received.extend(b) for b in iter(lambda: theirs.recv(1 << 16), b"")]
        )
        reader.start()
        sent = ctypes.c_uint64()
        assert lib.gtop_shim_ship(ours.fileno(), 5000, ctypes.byref(sent)) == 2
        ours.shutdown(socket.SHUT_WR)
        reader.join(10)
    assert sent.value == (1 << 20) + 300_001
    assert len(received) == sent.value + 2 * 28  # each frame: 12-byte header + 16-byte head
    lib.gtop_shim_trim()  # both were lent again by the ship

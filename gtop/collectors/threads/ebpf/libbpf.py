"""A small ctypes binding to ``libbpf.so.1``: open → configure → load → attach → read → destroy.

:class:`BpfObject` owns one object and everything attached from it; :meth:`close` (or the
context manager) is the one cleanup path. Each failure raises :class:`BpfError` with one
message naming the step, the errno, and the last lines libbpf logged (the verifier's
complaint, for a load). Global variables are found by name through the object's ELF
symbol table, so no generated skeleton is needed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os
import struct
import threading
from collections import deque

from gtop.collectors.threads.detach import detached_elsewhere

_PRINT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_log: deque[str] = deque(maxlen=40)
_lib: ctypes.CDLL | None = None
_lib_lock = threading.Lock()


class BpfError(RuntimeError):
    """A step of the BPF lifecycle failed."""


def _libc_vsnprintf() -> ctypes._CFuncPtr:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    fn = libc.vsnprintf
    fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p]
    return fn


def _collect_log(level: int, fmt: bytes, args: int) -> int:
    buf = ctypes.create_string_buffer(1024)
    _vsnprintf(buf, len(buf), fmt, args)
    for line in buf.value.decode(errors="replace").splitlines():
        if line.strip():
            _log.append(line)
    return 0


_vsnprintf = _libc_vsnprintf()
_print_cb = _PRINT_FN(_collect_log)  # kept alive for the process's lifetime


def lib() -> ctypes.CDLL:
    """``libbpf.so.1`` (or the file named by ``$GTOP_LIBBPF``), loaded once, log captured.

    Raises:
        BpfError: libbpf cannot be loaded.
    """
    global _lib
    with _lib_lock:
        if _lib is None:
            name = os.environ.get("GTOP_LIBBPF", "libbpf.so.1")
            try:
                so = ctypes.CDLL(name, use_errno=True)
            except OSError as exc:
                hint = "install libbpf1, or set GTOP_LIBBPF to a libbpf.so.1 (1.1+)"
                raise BpfError(f"cannot load {name} ({exc}); {hint}") from exc
            p, i, u, s = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_size_t
            for name, res, args in [
                ("libbpf_set_print", p, [_PRINT_FN]),
                ("bpf_object__open_file", p, [ctypes.c_char_p, p]),
                ("bpf_object__load", i, [p]),
                ("bpf_object__close", None, [p]),
                ("bpf_object__find_map_by_name", p, [p, ctypes.c_char_p]),
                ("bpf_object__find_program_by_name", p, [p, ctypes.c_char_p]),
                ("bpf_program__set_autoload", i, [p, ctypes.c_bool]),
                ("bpf_program__fd", i, [p]),
                ("bpf_program__attach", p, [p]),
                ("bpf_program__attach_perf_event", p, [p, i]),
                ("bpf_link__destroy", i, [p]),
                ("bpf_link__fd", i, [p]),
                ("bpf_map__set_max_entries", i, [p, u]),
                ("bpf_map__max_entries", u, [p]),
                ("bpf_map__value_size", u, [p]),
                ("bpf_map__fd", i, [p]),
                ("bpf_map__initial_value", p, [p, ctypes.POINTER(s)]),
                ("bpf_map_lookup_elem", i, [i, p, p]),
                ("bpf_map_update_elem", i, [i, p, p, ctypes.c_uint64]),
                ("bpf_map_delete_elem", i, [i, p]),
            ]:
                fn = getattr(so, name)
                fn.restype, fn.argtypes = res, args
            so.libbpf_set_print(_print_cb)
            _lib = so
    return _lib


def _fail(step: str, err: int | None = None) -> BpfError:
    err = err if err is not None else ctypes.get_errno()
    err = abs(err)
    tail = "\n".join(list(_log)[-8:])
    msg = f"{step}: {os.strerror(err) if err else 'failed'} (errno {err})"
    return BpfError(msg + (f"\nlibbpf: {tail}" if tail else ""))


_STT_OBJECT = 1
_SHN_LORESERVE = 0xFF00
"""Section indices from here up are special (absolute, common, ...), not sections."""


def object_globals(path: str) -> dict[str, tuple[str, int, int]]:
    """``{name: (section, offset, size)}`` of a BPF object's global variables, from its
    ELF symbol table (read with struct: pyelftools, its import and its parse, took ~30 ms
    of the tracer's start, which a launched target waits for).

    Raises:
        BpfError: not a 64-bit ELF file with a symbol table.
    """
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4:5] != b"\x02":
        raise BpfError(f"{path}: not a 64-bit ELF object")
    end = "<" if data[5:6] == b"\x01" else ">"
    (shoff,) = struct.unpack_from(end + "Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from(end + "HHH", data, 0x3A)
    # (name, type, flags, addr, offset, size, link, info, addralign, entsize)
    headers = [
        struct.unpack_from(end + "IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)
    ]

    def text(strtab: int, at: int) -> str:
        start = headers[strtab][4] + at
        return data[start : data.index(b"\0", start)].decode()

    sections = [text(shstrndx, h[0]) for h in headers]
    if ".symtab" not in sections:
        raise BpfError(f"{path}: no symbol table")
    _, _, _, _, offset, size, strtab, _, _, entsize = headers[sections.index(".symtab")]
    found = {}
    for at in range(offset, offset + size, entsize):
        name, info, _, shndx, value, length = struct.unpack_from(end + "IBBHQQ", data, at)
        if info & 0xF == _STT_OBJECT and 0 < shndx < _SHN_LORESERVE:
            found[text(strtab, name)] = (sections[shndx], value, length)
    return found


class BpfObject:
    """One BPF object file through its lifecycle."""

    def __init__(self, path: str) -> None:
        self._lib = lib()
        self.path = path
        self._links: list[int] = []
        self._maps: list[mmap.mmap] = []
        self._globals = object_globals(path)
        _log.clear()
        self._obj = self._lib.bpf_object__open_file(path.encode(), None)
        if not self._obj:
            raise _fail(f"open {path}")

    # --- configure (before load) ------------------------------------------------------
    def map(self, name: str) -> int:
        m = self._lib.bpf_object__find_map_by_name(self._obj, name.encode())
        if not m:
            raise BpfError(f"{self.path}: no map {name!r}")
        return m

    def set_max_entries(self, name: str, n: int) -> None:
        if self._lib.bpf_map__set_max_entries(self.map(name), n):
            raise _fail(f"set max_entries of {name}")

    def set_rodata(self, name: str, value: ctypes._SimpleCData) -> None:
        """Set a ``const volatile`` global; only before :meth:`load`."""
        section, offset, size = self._globals[name]
        base = self._lib.bpf_map__initial_value(self.map(section), ctypes.byref(ctypes.c_size_t()))
        if not base or ctypes.sizeof(value) != size:
            raise BpfError(f"cannot set {name} in {section}")
        ctypes.memmove(base + offset, ctypes.addressof(value), size)

    def _prog(self, program: str) -> int:
        prog = self._lib.bpf_object__find_program_by_name(self._obj, program.encode())
        if not prog:
            raise BpfError(f"{self.path}: no program {program!r}")
        return prog

    def autoload(self, program: str, on: bool) -> None:
        if self._lib.bpf_program__set_autoload(self._prog(program), on):
            raise BpfError(f"{self.path}: cannot set autoload of {program!r}")

    # --- load and attach ---------------------------------------------------------------
    def load(self) -> None:
        _log.clear()
        err = self._lib.bpf_object__load(self._obj)
        if err:
            raise _fail(f"load {os.path.basename(self.path)}", err)

    def attach(self, program: str, perf_fd: int | None = None) -> None:
        prog = self._prog(program)
        _log.clear()
        if perf_fd is None:
            link = self._lib.bpf_program__attach(prog)
        else:
            link = self._lib.bpf_program__attach_perf_event(prog, perf_fd)
        if not link:
            raise _fail(f"attach {program}")
        self._links.append(link)

    def program_fd(self, program: str) -> int:
        """A loaded program's descriptor (owned by the object: valid until :meth:`close`)."""
        fd = self._lib.bpf_program__fd(self._prog(program))
        if fd < 0:
            raise BpfError(f"{self.path}: program {program!r} is not loaded")
        return fd

    # --- read ---------------------------------------------------------------------------
    def map_fd(self, name: str) -> int:
        return self._lib.bpf_map__fd(self.map(name))

    def lookup(self, name: str, key: ctypes._CData, value: ctypes._CData) -> bool:
        """Fill ``value`` for ``key``; False when absent."""
        fd = self.map_fd(name)
        return self._lib.bpf_map_lookup_elem(fd, ctypes.byref(key), ctypes.byref(value)) == 0

    def update(self, name: str, key: ctypes._CData, value: ctypes._CData, flags: int = 0) -> bool:
        fd = self.map_fd(name)
        return self._lib.bpf_map_update_elem(fd, ctypes.byref(key), ctypes.byref(value), flags) == 0

    def mmap(self, name: str) -> mmap.mmap:
        """A read-only view of a ``BPF_F_MMAPABLE`` array map."""
        m = self.map(name)
        size = self._lib.bpf_map__max_entries(m) * self._lib.bpf_map__value_size(m)
        size = -(-size // mmap.PAGESIZE) * mmap.PAGESIZE
        view = mmap.mmap(self._lib.bpf_map__fd(m), size, mmap.MAP_SHARED, mmap.PROT_READ)
        self._maps.append(view)
        return view

    def global_bytes(self, section: str) -> bytes:
        """The current contents of a global-data section (``.bss``, ``.data``)."""
        m = self.map(section)
        buf = ctypes.create_string_buffer(self._lib.bpf_map__value_size(m))
        key = ctypes.c_uint32(0)
        if self._lib.bpf_map_lookup_elem(self._lib.bpf_map__fd(m), ctypes.byref(key), buf):
            raise _fail(f"read {section}")
        return buf.raw

    def global_offset(self, name: str) -> int:
        return self._globals[name][1]

    # --- destroy -------------------------------------------------------------------------
    def close(self) -> None:
        """Detach everything and free the object; safe to call twice."""
        for view in self._maps:
            view.close()
        with detached_elsewhere([self._lib.bpf_link__fd(link) for link in self._links]):
            for link in self._links:
                self._lib.bpf_link__destroy(link)
        self._maps, self._links = [], []
        if self._obj:
            self._lib.bpf_object__close(self._obj)
            self._obj = None

    def __enter__(self) -> BpfObject:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

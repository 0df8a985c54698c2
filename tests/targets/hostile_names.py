"""A process that names itself to attack whoever shows its names: escape sequences that
clear the screen and set the terminal's title, C1 controls, bidi overrides, newlines and
a 64 KiB argument (argv comes from the test). Its comm and its threads' names (set with
prctl, as ``pthread_setname_np`` does) and the file name of its Python code carry them
too. Prints READY once all are set; runs until killed."""

from __future__ import annotations

import ctypes
import threading
import time

PR_SET_NAME = 15
THREAD_NAMES = [
    b"\x1b[31mEVIL\x1b[0m",
    b"\x1b]2;PWN\x07",
    b"a\nb\xe2\x80\xaec",  # a newline, U+202E (right-to-left override)
    b"\xc2\x9b2J\x1b[2J",  # U+009B (CSI as one C1 character)
]
"""At most 15 bytes each (the kernel's TASK_COMM_LEN)."""
CODE_FILE = "\x1b]0;PWN-FILE\x07\n\u202e.py"

libc = ctypes.CDLL(None, use_errno=True)


def named(name: bytes) -> None:
    libc.prctl(PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)
    spin()  # noqa: F821 - defined by the exec below


SOURCE = """
def spin():
    while True:
        sum(range(20000))
        __import__("time").sleep(0.01)
"""
exec(compile(SOURCE, CODE_FILE, "exec"))  # its frames are named after CODE_FILE

libc.prctl(PR_SET_NAME, ctypes.c_char_p(b"\x1b[2J\x1b]0;PWN\x07"), 0, 0, 0)
for name in THREAD_NAMES:
    threading.Thread(target=named, args=(name,), daemon=True).start()
time.sleep(0.2)
print("READY", flush=True)
spin()  # noqa: F821 - defined by the exec above

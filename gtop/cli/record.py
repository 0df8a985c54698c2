"""``gtop record``: a live source written to a ``.gtop`` recording, headless."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

from gtop.cli.common import UserError
from gtop.cli.live import live_source, start_attach
from gtop.cli.parser import Config

FOREIGN_SUFFIXES = (
    *(".perfetto-trace", ".pftrace", ".json", ".json.gz", ".pb.gz", ".folded", ".csv"),
    *(".svg", ".html", ".txt", ".nsys-rep", ".qdrep"),
)
"""Names ``gtop record -o`` refuses: formats of other tools (``gtop export`` writes some)."""


def _check_forced_tier_started(source, config: Config) -> None:
    """A forced host-thread tier that passed :func:`_check_host_tier` but failed to
    start (the BPF object refused by the kernel, say) ends the recording with one line."""
    if config.host_tier in ("auto", "off"):
        return
    source.wait_started()
    for status in source.statuses():
        if status.name == "threads" and not status.ok:
            source.stop()
            raise UserError(f"--host-tier {config.host_tier}: {status.detail}")


def _check_output(path: Path, overwrite: bool) -> None:
    """Before attaching to anything: ``path`` can be created (or, with ``--force``,
    replaced: only a regular file is)."""
    folder = path.parent
    if not folder.is_dir():
        raise UserError(f"cannot create {path}: no folder {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"cannot create {path}: {folder} is not writable")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{path} exists and is not a regular file; choose another path")
    if not overwrite:
        raise UserError(f"{path} exists (use --force to overwrite)")


STATUS_S = 1.0
"""How often ``record`` updates its status line and looks at its target (a launched
one's exit wakes it at once: :func:`_wake_on_exit`)."""


def _wake_on_exit(process: subprocess.Popen, wake: threading.Event) -> None:
    """Set ``wake`` the moment ``process`` ends (its Popen still reaps it): a recorded
    job's wall time gets no polling period added (it had up to 50 ms, once 1 s)."""

    def watch() -> None:
        with contextlib.suppress(OSError):  # ChildProcessError: reaped already
            os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)
        wake.set()

    threading.Thread(target=watch, name="gtop-target-exit", daemon=True).start()


def _check_recording_name(path: Path) -> None:
    """Refuse a name that promises another format: ``record`` writes only ``.gtop``
    (SQLite); other formats come from ``gtop export``."""
    name = path.name.lower()
    if any(name.endswith(suffix) for suffix in FOREIGN_SUFFIXES):
        gtop_name = path.with_name(path.name.split(".")[0] + ".gtop")
        raise UserError(
            f"{path}: gtop record writes a .gtop recording (SQLite), not that format; record "
            f"to {gtop_name}, then convert it: gtop export {gtop_name} ... -o {path}"
        )


def cmd_record(config: Config) -> int:
    assert config.output is not None
    _check_recording_name(config.output)
    _check_output(config.output, config.overwrite)
    pending = start_attach(config)  # first: the agent is queued beside gtop's imports
    try:
        source = live_source(config, attach_now=False)
    except BaseException:
        if pending is not None:
            pending.cancel()
        raise
    stop = threading.Event()
    received: list[int] = []

    def on_signal(sig: int, _frame: object) -> None:
        received.append(sig)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    # first, before the recording's file: the agent waits for the target's safe point
    attaching = _attach_while_recording(source, config, pending)
    try:
        recorder = source.start_recording(config.output, overwrite=config.overwrite)
    except OSError as exc:
        source.stop()  # the agent detaches, its folder goes
        if isinstance(exc, FileExistsError):
            raise UserError(f"{config.output} exists (use --force to overwrite)") from None
        raise UserError(f"cannot create {config.output}: {exc.strerror or exc}") from None
    started = time.monotonic()  # --duration counts from the recording's start
    source.start_in_background()  # the clock runs meanwhile
    _check_forced_tier_started(source, config)
    interactive = sys.stderr.isatty()
    shown = -1
    if source.process is not None:
        _wake_on_exit(source.process, stop)
    from gtop.session.probe_requests import PendingProbes

    probes = PendingProbes(config.probes)
    try:
        while True:
            attaching = _say_attach_error(source, attaching)
            for problem in probes.send(source, source.pid):
                print(f"gtop: {problem}", file=sys.stderr)
            wait_s = STATUS_S
            if config.duration_s is not None:
                wait_s = min(wait_s, max(0.0, started + config.duration_s - time.monotonic()))
            woken = stop.wait(wait_s)
            elapsed = time.monotonic() - started
            if interactive and int(elapsed) != shown:
                shown = int(elapsed)
                drops = sum(source.drops().values())
                print(
                    f"\rgtop: recording {config.output}: {elapsed:5.0f} s, "
                    f"{recorder.rows()} rows, {drops} dropped",
                    end="",
                    file=sys.stderr,
                )
            if recorder.error:
                break
            if config.duration_s is not None and elapsed >= config.duration_s:
                break
            if not source.target_alive():
                print("\ngtop: the target exited; recording finalised", file=sys.stderr)
                break
            if woken:  # SIGINT or SIGTERM
                break
    finally:
        source.stop(RECORD_STOP_S if config.duration_s is not None else None)
    if interactive:
        print(file=sys.stderr)
    for problem in source.stop_problems:
        print(f"gtop: {problem}", file=sys.stderr)
    _say_attach_error(source, attaching, final=True)  # stop() said why, if still under way
    if config.cmd and source.target_alive():
        # the agent has detached: the launched command runs on at full speed
        print(f"gtop: {config.cmd[0]} (pid {source.pid}) runs on untraced", file=sys.stderr)
    if recorder.error:
        raise UserError(recorder.error)
    print(f"gtop: wrote {config.output} ({recorder.rows()} rows)", file=sys.stderr)
    return _record_status(received, source.exit_status())


def _record_status(signals: list[int], target_status: int | None) -> int:
    """``gtop record``'s exit status, as ``perf record`` gives it: 128+N when signal N
    (Ctrl-C: 130) ended the recording, else a launched command's own status (128+N when
    a signal killed it), else 0."""
    if signals:
        return 128 + signals[0]
    return target_status or 0


def _say_attach_error(
    source, attaching: threading.Thread | None, final: bool = False
) -> threading.Thread | None:
    """Once a background attach has ended (or ``final``), say why it failed, if it did;
    None once said."""
    if attaching is None or (attaching.is_alive() and not final):
        return attaching
    if source.agent_error:
        print(f"\ngtop: {source.agent_error}; recorded NVML and host data only", file=sys.stderr)
    return None


def _attach_while_recording(source, config: Config, pending) -> threading.Thread | None:
    """Finish ``record --pid``'s attach (``pending``, :func:`~gtop.cli.live.start_attach`;
    None: nothing to attach) on a thread, so that ``--duration`` counts from the start of
    the recording, attach included."""
    if pending is None:
        return None
    wait_s = config.duration_s if config.duration_s is not None else ATTACH_WAIT_S
    return source.attach_agent_in_background(config.agent_mode, max(wait_s, 0.1), pending)


RECORD_STOP_S = 1.0
"""With ``--duration``, how long ``record`` waits at its end for the agent to detach and
for the host-thread tier's last poll (one that reads symbol tables or attaches uprobes
can take seconds): ``--duration 1`` returns within 3 s of its start."""


ATTACH_WAIT_S = 10.0
"""Without ``--duration``, how long ``record --pid`` waits for the agent to report before it
says the agent has not started (it keeps recording, and the agent may still come)."""

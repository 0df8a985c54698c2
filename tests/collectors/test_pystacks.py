"""Where gtop finds py-spy: beside the running interpreter, before PATH (sudo drops a
venv's bin from PATH)."""

from __future__ import annotations

from pathlib import Path

from gtop.collectors.threads import pystacks


def test_py_spy_is_found_beside_the_interpreter_without_path(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "")
    found = pystacks.available()
    assert found is not None and Path(found).is_file()


class _Tree:
    """What the sampler reads of a thread collector: thread id -> process id."""

    def __init__(self, pid: int) -> None:
        self.threads = {pid: pid}


def test_dumps_a_real_process_and_stops_without_leaving_py_spy_behind() -> None:
    import subprocess
    import sys
    import time

    import psutil

    code = "import time\ndef napping():\n    time.sleep(60)\nnapping()"
    sleeper = subprocess.Popen([sys.executable, "-c", code])
    try:
        sampler = pystacks.PyStackSampler(sleeper.pid, rate_hz=20.0)
        sampler.start(_Tree(sleeper.pid))
        deadline = time.monotonic() + 20
        napping = lambda: any("napping" in " ".join(s) for s in sampler.stacks)  # noqa: E731
        while not napping() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert napping(), sampler.stacks
        errors = sampler.errors  # (dumps before the interpreter is up fail)
        sampler.stop()  # most likely while a dump runs (20 Hz): it is killed, not awaited
        spies = [p for p in psutil.Process().children(recursive=True) if p.pid != sleeper.pid]
        assert not spies, spies
        assert sampler.errors == errors, "a dump killed by stop() is no error"
    finally:
        sleeper.kill()
        sleeper.wait()

"""The agent changes nothing the target can see: its own ``gtop`` module stays its own,
and the agent's code imports nothing outside its private copy."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from agent_helpers import start_target


def test_target_importing_its_own_gtop_gets_its_own(processes, link_factory, tmp_path):
    (tmp_path / "gtop").mkdir()
    (tmp_path / "gtop" / "__init__.py").write_text("MINE = True\n")
    code = textwrap.dedent(
        """
        import sys
        print("ready", flush=True)
        sys.stdin.readline()
        sys.path[:] = [p for p in sys.path if p]  # not the repository we run from
        import gtop
        print(getattr(gtop, "MINE", False), gtop.__file__, flush=True)
        """
    )
    link, _ = link_factory()
    target = start_target(
        processes, [sys.executable, "-c", code], {"PYTHONPATH": str(tmp_path)}, link
    )
    assert link.wait(target.pid, ("waiting_cuda",), 10) is not None  # the agent runs
    assert target.ask("go") == f"True {tmp_path / 'gtop' / '__init__.py'}"


def test_the_agents_copy_imports_only_itself(link_factory):
    """Import every module of the boot folder's copy: nothing named ``gtop`` loads."""
    link, _ = link_factory()
    package = link.boot.package
    code = textwrap.dedent(
        f"""
        import importlib, pkgutil, sys
        sys.path.insert(0, {link.boot_dir!r})
        pkg = importlib.import_module({package!r})
        names = [m.name for m in pkgutil.walk_packages(pkg.__path__, {package + "."!r})]
        for name in names:
            try:
                importlib.import_module(name)
            except ModuleNotFoundError as e:  # a third-party package missing here
                if e.name.split(".")[0] in ("gtop", {package!r}):
                    raise
        leaked = sorted(m for m in sys.modules if m == "gtop" or m.startswith("gtop."))
        print(len(names), leaked)
        """
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    count, leaked = out.stdout.split(" ", 1)
    assert int(count) > 20
    assert leaked.strip() == "[]"

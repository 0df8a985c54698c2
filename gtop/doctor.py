"""`gtop doctor`: what works on this machine, and why not where it does not."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def check_nvml() -> Check:
    from gtop.collectors import nvml

    try:
        count = nvml.device_count()
        system = nvml.system_info()
    except nvml.NvmlUnavailable as exc:
        return Check("NVML", False, f"{exc}; `gtop demo` replays a bundled recording")
    if count == 0:
        return Check("NVML", False, "NVML works but sees no GPU")
    import pynvml

    names = []
    for i in range(count):
        handle = pynvml.nvmlDeviceGetHandleByIndex(i)
        info = nvml.describe_device(i, handle)
        names.append(f"{i}: {info['name']}{' (GPM)' if info['gpm'] else ''}")
    return Check(
        "NVML",
        True,
        f"driver {system['driver_version']}, CUDA {system['cuda_version']}; " + "; ".join(names),
    )


def check_agent() -> list[Check]:
    """Can the in-process agent get in (attach, ptrace, libcupti)?"""
    from gtop.collectors.agent.attach import doctor

    return [Check(name, ok, detail) for name, ok, detail in doctor()]


def check_host_tiers() -> list[Check]:
    """Which tier traces host threads here (bpf, perf events, /proc), and what each needs."""
    from gtop.collectors.threads.tiers import tier_report

    return [Check(f"threads: {t.tier}", t.available, t.needs or "works") for t in tier_report()]


def check_ptxas() -> Check:
    path = shutil.which("ptxas")
    if path is None:
        return Check(
            "ptxas",
            False,
            "ptxas not found (CUDA toolkit or pip nvidia-cuda-nvcc); "
            "`gtop probe` output cannot be verified",
        )
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
        version = out.stdout.strip().splitlines()[-1]
    except (OSError, subprocess.TimeoutExpired, IndexError):
        version = "version unknown"
    return Check("ptxas", True, f"{path} ({version})")


CHECKS: list[Callable[[], Check | list[Check]]] = [
    check_nvml,
    check_agent,
    check_host_tiers,
    check_ptxas,
]


def run_checks() -> list[Check]:
    out: list[Check] = []
    for check in CHECKS:
        try:
            found = check()
        except Exception as exc:  # a broken check must not hide the others
            found = Check(check.__name__.removeprefix("check_"), False, f"check failed: {exc}")
        out.extend(found if isinstance(found, list) else [found])
    return out


def format_checks(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    return "\n".join(f"{'ok ' if c.ok else 'NO '} {c.name:<{width}}  {c.detail}" for c in checks)


def _c_version(names: list[str], symbol: str) -> tuple[int, str] | str:
    """``(version, library)`` from the first of ``names`` that loads and answers
    ``symbol(int *)`` with 0 (success), else why not (one phrase)."""
    why = "not found"
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        value = ctypes.c_int(0)
        status = getattr(lib, symbol)(ctypes.byref(value))
        if status == 0:
            return value.value, name
        why = f"{symbol} failed ({status}) in {name}"
    return why


def versions() -> list[str]:
    """What ``gtop --version`` prints below gtop's own version: the NVIDIA driver (NVML),
    the CUDA driver API and CUPTI found here, or "not found" and why."""
    from gtop.agent.cupti import candidate_paths
    from gtop.collectors import nvml

    try:
        system = nvml.system_info()
        driver = f"{system['driver_version']} (NVML; CUDA {system['cuda_version']})"
    except nvml.NvmlUnavailable as exc:
        driver = f"not found ({exc})"
    cuda = _c_version(["libcuda.so.1", "libcuda.so"], "cuDriverGetVersion")
    if not isinstance(cuda, str):
        cuda = f"{cuda[0] // 1000}.{cuda[0] % 1000 // 10} ({cuda[1]})"
    cupti = _c_version(candidate_paths(), "cuptiGetVersion")
    if not isinstance(cupti, str):
        cupti = f"API version {cupti[0]} ({cupti[1]})"
    return [f"NVIDIA driver: {driver}", f"CUDA driver API: {cuda}", f"CUPTI: {cupti}"]

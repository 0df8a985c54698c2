"""Every export tells the report's story, on every committed recording, over the report's
window: the GPU flamegraph's seconds per cause in folded (read as flamegraph.pl reads
it), pprof (decoded against Debian's profile.proto) and speedscope are ``gtop report
--json``'s on/off seconds of that cause (estimated ones under kernel sampling, which the
exports give under ``NOT_TRACED``), and HolisticTraceAnalysis's temporal breakdown of
the kineto export is the report's GAR within 1 point.

HTA rounds nanosecond-precision events inward to whole microseconds unless
``HTA_DISABLE_NS_ROUNDING=1`` (its own switch: a 3 µs kernel would lose up to 2 µs, a
third of a launch-bound decode's busy time), so the test sets it, as the kineto export's
docs tell HTA users to. HTA is given the export's events on GPU streams (those with
``args.stream``), the only ones its temporal breakdown reads: its JSON parser takes
~0.2 ms an event on this VM, and API calls are most of a trace's millions. Above
:data:`HTA_PARSE_MAX` such events the events go straight into the function HTA's
temporal breakdown uses (``BreakdownAnalysis._get_idle_time_for_kernels``), past its
parser: every recording's GAR is still HTA's own arithmetic on the export's events, and
HTA's parser still reads the export of every recording below that size (kernels,
memcpy, memset, several streams and GPUs, the default mode and the fixes), in seconds
where the big decodes took ~30 s each.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from gtop.cli import main
from tests.conftest import RECORDINGS
from tests.exporters.conftest import compile_profile_proto
from tests.reports import report_of

ALL = sorted(str(p.relative_to(RECORDINGS)) for p in RECORDINGS.rglob("*.gtop"))
US = 1e-6
NOT_TRACED = "NOT_TRACED"
HTA_PARSE_MAX = 40_000


@pytest.fixture(scope="module")
def profile_pb2(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return compile_profile_proto(tmp_path_factory.mktemp("proto"))


def _export(recording: Path, fmt: str, out: Path) -> Path:
    assert main(["export", str(recording), "--format", fmt, "-o", str(out)]) == 0
    return out


def _cause(frames: list[str]) -> str:
    """The cause a GPU-view stack (root first: ON_GPU/OFF_GPU/NOT_TRACED, cause, …) weighs:
    ``NOT_TRACED;H:CTRL (estimated)`` is H:CTRL's estimated untraced time."""
    if len(frames) < 2:
        return frames[0]
    return frames[1].removesuffix(" (estimated)")


def _report_seconds(entry: dict) -> dict[str, float]:
    """The report's seconds per cause, and what it could not give out (NOT_TRACED)."""
    out = {**entry["on_s"], **entry["off_s"]}
    out[NOT_TRACED] = entry["duration_s"] - sum(out.values())
    return out


def _folded(path: Path) -> dict[str, Counter[str]]:
    per: dict[str, Counter[str]] = {}
    for line in path.read_text().splitlines():
        stack, weight = line.rsplit(" ", 1)
        view, owner, *frames = stack.split(";")
        if view == "gpu":
            per.setdefault(owner, Counter())[_cause(frames)] += int(weight) * US
    return per


def _pprof(path: Path, pb2: ModuleType) -> dict[str, Counter[str]]:
    prof = pb2.Profile()
    prof.ParseFromString(gzip.decompress(path.read_bytes()))
    strings = prof.string_table
    gpu = [strings[t.type] for t in prof.sample_type].index("gpu")
    names = {f.id: strings[f.name] for f in prof.function}
    where = {loc.id: names[loc.line[0].function_id] for loc in prof.location}
    per: dict[str, Counter[str]] = {}
    for sample in prof.sample:
        if sample.value[gpu]:
            owner, *frames = [where[i] for i in reversed(sample.location_id)]
            per.setdefault(owner, Counter())[_cause(frames)] += sample.value[gpu] * 1e-9
    return per


def _speedscope(path: Path) -> dict[str, Counter[str]]:
    doc = json.loads(path.read_text())
    frames = [f["name"] for f in doc["shared"]["frames"]]
    per: dict[str, Counter[str]] = {}
    for profile in doc["profiles"]:
        owner, _, what = profile["name"].partition(": ")
        if what == "on-/off-GPU time":
            mine = per.setdefault(owner, Counter())
            for stack, ns in zip(profile["samples"], profile["weights"], strict=True):
                mine[_cause([frames[i] for i in stack])] += ns * 1e-9
    return per


_GPU_EVENT = re.compile(r'"ts":(-?[0-9.]+),"dur":([0-9.]+),"args":\{"device": ?-?\d+, ?"stream":')
"""The start of an event on a GPU stream as the export writes it (``args`` opening with
its device and stream): its ``ts`` and ``dur``."""


@dataclass
class GpuStreams:
    """A kineto export's header and its events on GPU streams (those with
    ``args.stream``, the only ones HTA's temporal breakdown reads): each one's line and
    its ``(ts, dur)``."""

    header: dict
    lines: list[str]
    spans: list[tuple[float, float]]

    def trace(self) -> dict:
        """The trace with only these events."""
        return {**self.header, "traceEvents": [json.loads(line) for line in self.lines]}


def _on_gpu_streams(kineto: Path) -> GpuStreams:
    """The export's events on GPU streams. The export writes its header on the first line
    and one event a line after it, so only the lines that name a ``"stream"`` key are
    read, and an event on a stream gives its ``ts`` and ``dur`` to :data:`_GPU_EVENT`
    (JSON-decoding decode-graphs' 434k such lines took 6 s CPU, the regex 0.4 s); every
    other line naming ``"stream"`` is decoded, to be sure it has no ``args.stream``. The
    whole trace's JSON and shape are tests/exporters/test_trace_json.py's."""
    with kineto.open() as f:
        found = GpuStreams(json.loads(f.readline() + "]}"), [], [])  # up to '"traceEvents":['
        for line in f:
            if '"stream"' not in line:
                continue
            event = _GPU_EVENT.search(line)
            if event is None:
                assert "stream" not in (json.loads(line.lstrip(",")).get("args") or {}), line
                continue
            found.lines.append(line.lstrip(","))
            found.spans.append((float(event[1]), float(event[2])))
    return found


def _hta_busy(events: GpuStreams, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> float:
    """HTA's temporal breakdown of the events on GPU streams: busy % of their span."""
    if len(events.spans) > HTA_PARSE_MAX:
        import pandas as pd
        from hta.analyzers.breakdown_analysis import BreakdownAnalysis

        frame = pd.DataFrame(events.spans, columns=["ts", "dur"])
        idle, span = BreakdownAnalysis._get_idle_time_for_kernels(frame)
        return 100.0 * (1 - idle / span)
    from hta.trace_analysis import TraceAnalysis

    trace = events.trace()
    assert [(e["ts"], e["dur"]) for e in trace["traceEvents"]] == events.spans
    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")
    folder = tmp / "hta"
    folder.mkdir()
    (folder / "rank-0.pt.trace.json").write_text(json.dumps(trace))
    breakdown = TraceAnalysis(trace_dir=str(folder)).get_temporal_breakdown(visualize=False)
    return 100.0 - float(breakdown["idle_time_pctg"][0])


@pytest.fixture(scope="module")
def reports() -> Callable[[str], dict[str, dict]]:
    """``reports(name)``: the report's exact GPU entries by owner (``GPU 0``), cached."""
    made: dict[str, dict[str, dict]] = {}

    def get(name: str) -> dict[str, dict]:
        if name not in made:
            gpu = report_of(RECORDINGS / name)["gpu"]
            made[name] = {f"GPU {d}": e for d, e in gpu.items() if e["exact"]}
        return made[name]

    return get


@pytest.mark.parametrize("name", ALL)
def test_flamegraphs_weigh_the_reports_seconds_per_cause(
    name: str, tmp_path: Path, profile_pb2: ModuleType, reports: Callable[[str], dict]
) -> None:
    path = RECORDINGS / name
    exact = reports(name)
    folded = _export(path, "folded", tmp_path / "t.folded")
    lines = len(folded.read_text().splitlines())
    flames = {
        "folded": (_folded(folded), lines * US),  # µs per stack, rounded
        "pprof": (_pprof(_export(path, "pprof", tmp_path / "t.pb.gz"), profile_pb2), 1e-6),
        "speedscope": (_speedscope(_export(path, "speedscope", tmp_path / "t.ss.json")), 1e-6),
    }
    for fmt, (per_owner, tolerance) in flames.items():
        # a GPU with CUPTI records has its flamegraph; an NVML-only estimate has none
        assert set(per_owner) == set(exact), fmt
        for owner, entry in exact.items():
            want = _report_seconds(entry)
            got = per_owner[owner]
            assert set(got) <= set(want), (fmt, got)
            for cause, seconds in want.items():
                assert got[cause] == pytest.approx(seconds, abs=tolerance), (fmt, owner, cause)


@pytest.mark.filterwarnings("ignore:The inplace keyword")  # HTA 0.5 under pandas 3
@pytest.mark.timeout(600)  # constructed-tiny: 3 min on the loaded 2-core VM
@pytest.mark.parametrize("name", ALL)
def test_hta_reads_the_kineto_export_as_the_reports_gar(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reports: Callable[[str], dict]
) -> None:
    path = RECORDINGS / name
    exact = reports(name)
    kineto = _export(path, "kineto", tmp_path / "t.pt.trace.json")
    events = _on_gpu_streams(kineto)
    if not exact:  # no CUDA activity traced: nothing on a GPU stream for HTA to read
        assert events.spans == []
        return
    busy = _hta_busy(events, tmp_path, monkeypatch)
    gars = [100 * e["gar"] for e in exact.values()]
    if len(gars) == 1:
        assert busy == pytest.approx(gars[0], abs=1.0)
    else:  # one trace is one HTA rank: its busy time is the union of the GPUs'
        assert max(gars) - 1.0 <= busy <= sum(gars) + 1.0

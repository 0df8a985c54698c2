"""Chrome trace JSON and the Kineto-shaped trace; the latter loaded by HolisticTraceAnalysis
(HTA), the tool PyTorch users analyse profiler traces with."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from gtop.analysis.kernels.cuda_activity import api_name
from gtop.analysis.kernels.demangle import demangle
from gtop.recordings.exporters.window import report_window
from gtop.recordings.reader import Recording
from tests.exporters.conftest import SLOW_LOADER


@pytest.fixture(scope="module")
def chrome(export: Callable[..., Path]) -> list[dict]:
    return json.loads(export("chrome", name="t.json").read_text())["traceEvents"]


@pytest.fixture(scope="module")
def kineto(export: Callable[..., Path]) -> Path:
    return export("kineto", name="t.pt.trace.json")


def _flows_pair(events: list[dict]) -> int:
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts.keys() == ends.keys()
    for flow, s in starts.items():
        f = ends[flow]
        assert s["cat"] == f["cat"] == "ac2g" and f["bp"] == "e"
        assert float(s["ts"]) <= float(f["ts"])
    return len(starts)


def test_chrome_slices_have_categories_args_names_and_flows(chrome: list[dict]) -> None:
    with Recording(SLOW_LOADER) as rec:
        api, kernels = rec.read("api"), rec.read("kernel")
        names = {int(e.key): e.value["name"] for e in rec.entities("kernel_name")}
    slices = [e for e in chrome if e["ph"] == "X"]
    cats = Counter(e["cat"] for e in slices)
    assert cats["kernel"] == len(kernels)
    assert cats["cuda_runtime"] + cats["cuda_driver"] == len(api)
    assert cats["thread_state"] > 50_000
    calls = Counter(e["name"] for e in slices if e["cat"].startswith("cuda_"))
    want = Counter(api_name(d, c) for d, c in zip(api["domain"].tolist(), api["cbid"].tolist()))
    assert calls == want and "cudaLaunchKernel" in calls
    on_gpu = Counter(e["name"] for e in slices if e["cat"] == "kernel")
    assert on_gpu == Counter(demangle(names[i]) for i in kernels["name_id"].tolist())
    kernel = next(e for e in slices if e["cat"] == "kernel")
    assert {"device", "stream", "correlation", "grid", "block", "registers per thread"} <= set(
        kernel["args"]
    )
    threads = {e["args"]["name"] for e in chrome if e.get("name") == "thread_name"}
    assert "python3 (1587)" in threads and not any(n.startswith("thread ") for n in threads)
    assert _flows_pair(chrome) > 5000


def test_kineto_trace_has_pytorch_profilers_shape(kineto: Path) -> None:
    trace = json.loads(kineto.read_text())
    assert trace["deviceProperties"][0]["name"] == "NVIDIA H100 80GB HBM3"
    events = trace["traceEvents"]
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert {e["pid"] for e in gpu} == {0}  # pid = device index, as Kineto writes it
    assert all(e["tid"] == e["args"]["stream"] for e in gpu)
    calls = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    assert all("cbid" in e["args"] for e in calls)
    runtime = {e["args"].get("correlation") for e in calls}
    assert sum(e["args"]["correlation"] in runtime for e in gpu) > 0.9 * len(gpu)
    assert _flows_pair(events) > 5000


@pytest.mark.filterwarnings("ignore:The inplace keyword")  # HTA 0.5 under pandas 3
def test_hta_loads_the_kineto_trace_and_sums_kernel_time(kineto: Path, tmp_path: Path) -> None:
    from hta.trace_analysis import TraceAnalysis

    shutil.copy(kineto, tmp_path / "rank-0.pt.trace.json")
    analysis = TraceAnalysis(trace_dir=str(tmp_path))
    with Recording(SLOW_LOADER) as rec:
        clipped, _ = report_window(rec)  # what the kineto export covers
        kernels = clipped.read("kernel")
        copies = [clipped.read("memcpy"), clipped.read("memset")]
    kernel_us = float((kernels["end_ns"] - kernels["t_ns"]).sum()) / 1e3
    memory_us = sum(float((c["end_ns"] - c["t_ns"]).sum()) for c in copies) / 1e3
    by_type, by_name = analysis.get_gpu_kernel_breakdown(visualize=False)
    by_type = by_type.set_index("kernel_type")
    assert by_type.loc["COMPUTATION", "sum"] == pytest.approx(kernel_us, rel=0.01)
    # HTA cuts each event to whole microseconds, so a sub-µs memset can count as -1 µs
    memory = set(by_name[by_name["kernel_type"] == "MEMORY"]["name"])
    assert memory == {"Memcpy HTOD", "Memcpy DTOH", "Memset"}
    count = sum(len(c) for c in copies)
    assert by_type.loc["MEMORY", "sum"] == pytest.approx(memory_us, abs=count)
    temporal = analysis.get_temporal_breakdown(visualize=False)
    assert temporal["compute_time(us)"][0] == pytest.approx(kernel_us, rel=0.01)

"""One-line reasons why a process-screen tab has no data (never an empty box).

Pure functions of the model (and the source's ``agent_error``, when the app has one):
each returns None when the data is there, else one line naming the cause and the fix.
With ``live=False`` (a replay) the fix is how to record the data, not how to start it.
"""

from __future__ import annotations

from typing import Any

from gtop.core.model import Model
from gtop.views.tabs.session_data import session_of

NOT_ATTACHED = (
    "the in-process agent is not attached (start with `gtop run` or `gtop --pid` with "
    "ptrace allowed)"
)
NOT_RECORDED = (
    "the recording was made without the in-process agent (record with `gtop record -- CMD`,"
    " or `--pid` with ptrace allowed)"
)
AGENT_STATES = {
    "connected": "the agent just attached and has not started CUPTI yet",
    "waiting_cuda": "the agent is attached and waits for the process to initialise CUDA",
    "no_cupti": "the agent found no usable CUPTI library in the process",
    "other_subscriber": "another CUPTI subscriber (torch.profiler, Nsight) holds the process",
    "detached": "the agent detached (gtop left or the link closed)",
    "exited": "the process exited",
}
API_KINDS = ("runtime", "driver")


def agent_of(model: Model, pid: int) -> dict[str, Any] | None:
    """The latest ``agent`` entity of ``pid``, or None when no agent ever reported."""
    entity = model.entities.get("agent", {}).get(str(pid))
    return entity.value if entity is not None else None


def _has_rows(model: Model, stream: str, pid: int) -> bool:
    """``pid`` has rows in ``stream`` since the session (or the last seek) began."""
    return pid in session_of(model).pids_seen.get(stream, ())


def agent_reason(model: Model, pid: int, agent_error: str | None = None, live: bool = True) -> str:
    """Why the agent sends nothing for ``pid`` (whatever the data looks like)."""
    agent = agent_of(model, pid)
    if agent is None:
        probed = any(_has_rows(model, s, pid) for s in model.streams if s.startswith("probe_"))
        if probed:
            return "the agent sent in-kernel probes (Probes tab) but no CUDA activity records"
        others = sorted(int(k) for k in model.entities.get("agent", {}))
        if others:  # the agent was there, in the processes that use a GPU
            return (
                f"this process used no CUDA (the agent traces the processes that do: pid "
                f"{', '.join(map(str, others[:3]))}); a DataLoader worker or a launcher uses none"
            )
        missing = NOT_ATTACHED if live else NOT_RECORDED
        return f"{missing}: {agent_error}" if agent_error else missing
    state = str(agent.get("state", ""))
    message = str(agent.get("message") or "")
    if state == "tracing":
        return "the agent is tracing, but the process ran no kernels or copies recently"
    if state == "error":
        return f"the agent failed: {message or 'unknown error'}"
    why = AGENT_STATES.get(state, f"the agent is {state or 'in an unknown state'}")
    return f"{why} ({message})" if message and message not in why else why


def cuda_reason(
    model: Model, pid: int, agent_error: str | None = None, live: bool = True
) -> str | None:
    """None when the model holds kernels, copies or memsets of ``pid``."""
    if any(_has_rows(model, s, pid) for s in ("kernel", "memcpy", "memset")):
        return None
    return f"no CUDA activity: {agent_reason(model, pid, agent_error, live)}"


def api_reason(
    model: Model, pid: int, agent_error: str | None = None, live: bool = True
) -> str | None:
    """None when the model holds CUDA API calls of ``pid``."""
    if _has_rows(model, "api", pid):
        return None
    agent = agent_of(model, pid)
    if agent is not None and agent.get("state") == "tracing":
        kinds = agent.get("kinds") or []
        if not any(k in kinds for k in API_KINDS):
            return "no CUDA API calls: API tracing is off (the agent's default; use full mode)"
        return "no CUDA API calls recently: the process made none"
    return f"no CUDA API calls: {agent_reason(model, pid, agent_error, live)}"


def threads_reason(model: Model, pid: int, live: bool = True) -> str | None:
    """None when the model holds thread states of ``pid``."""
    if _has_rows(model, "thread_state", pid):
        return None
    if "thread_state" not in model.streams:
        what = "is not running" if live else "did not run while recording"
        return (
            f"no thread states: host thread tracing {what} (it needs root, or "
            "CAP_BPF/CAP_PERFMON, or ptrace for /proc sampling; see `gtop doctor`)"
        )
    return "no thread states for this process: host tracing follows the target process only"

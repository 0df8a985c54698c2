"""How numpy's large arrays get their memory in a process that builds big tables once."""

from __future__ import annotations


def small_pages() -> None:
    """Fault numpy's large arrays in from now on in 4 KiB pages, not transparent huge
    pages. numpy asks for huge pages (``madvise``) on every large array; under the
    kernel's usual THP defrag setting (``madvise``) a huge page fault on a machine whose
    memory is fragmented compacts memory first, in the faulting process: a report,
    which fills each of its big tables once, spent 1.4-1.7 s of system time on the
    10-minute synthetic recording this way, 0.7 s with small pages (benchmarks/RESULTS.md,
    "Eighth round"). numpy reads its own switch, ``NUMPY_MADVISE_HUGEPAGE=0``, only when
    imported, and an environment variable would reach the processes gtop starts."""
    try:
        from numpy._core import multiarray  # numpy 2
    except ImportError:  # numpy 1
        from numpy.core import multiarray  # type: ignore[no-redef]
    switch = getattr(multiarray, "_set_madvise_hugepage", None)  # numpy's own, private
    if switch is not None:  # else numpy's default stays: slower, not wrong
        switch(False)

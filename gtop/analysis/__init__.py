"""Pure analysis over record arrays, grouped by the question each subpackage answers.

- :mod:`~gtop.analysis.intervals`: sets of half-open intervals, used by every group.
- :mod:`~gtop.analysis.attribution`: where a GPU's time went, on or off, and why (the
  partition, its causes and inputs, and its drawings: slices, lanes, the flamegraph).
- :mod:`~gtop.analysis.kernels`: what ran on the GPU (kernels, copies, API calls, names,
  probed launches).
- :mod:`~gtop.analysis.host`: what the host threads did (time by state, folded stacks).
- :mod:`~gtop.analysis.window`: which time a diagnosis covers (the active window, the
  one-time phases kept out of it).
- :mod:`~gtop.analysis.distributed`: the processes of a job and its ranks (roles,
  collectives, straggler wait, clocks).
- :mod:`~gtop.analysis.diagnosis`: why the GPU idles and what a fix buys (the verdict,
  the what-if replay, the ranked gains, the step).
- :mod:`~gtop.analysis.report`: the report document, its text, and two side by side.

Lower groups never import higher ones (the layers contract in ``pyproject.toml``).
"""

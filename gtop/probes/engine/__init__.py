"""gtop.probes: the PTX probe engine.

- :mod:`.ptx` parses PTX, keeping every source line (refusals name line and reason);
- :mod:`.probe` is the probe format, :mod:`.maps` the shared record-slot code and the
  buffer reader, :mod:`.verify` the rules a snippet must follow;
- :mod:`.rewrite` inserts a probe into the kernels of a module;
- :mod:`.probes` holds one file per probe (record layout, snippets, analysis);
- :mod:`.runtime` binds record buffers on the GPU (cuda-bindings; imported on demand);
- :mod:`.cli` is ``gtop probe list | instrument``.
"""

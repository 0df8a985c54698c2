"""gtop's terminal UI (Textual). Views read the model; they never collect.

* :mod:`gtop.views.app` — :class:`GtopApp` and :func:`run_app`: polls the source on a
  timer, applies to the :class:`~gtop.pipeline.model.Model`, redraws on a new generation.
* Screens (:mod:`~gtop.views.screen` is their base: body, replay time bar, status line,
  footer): :mod:`~gtop.views.overview` (GPU panels + process table) and
  :mod:`~gtop.views.process_screen` (one process, with tabs).
* Adding a tab to the process screen: see :mod:`gtop.views.panels`. The analysis tabs
  (:mod:`~gtop.views.kernels_tab`, :mod:`~gtop.views.streams_tab`,
  :mod:`~gtop.views.threads_tab`, :mod:`~gtop.views.gpu_time_tab`,
  :mod:`~gtop.views.swimlanes_tab`) read aggregates that
  :mod:`~gtop.views.session_data` keeps up to date from ``model.listeners`` (reset on a
  replay seek), run slow analysis in workers (:mod:`~gtop.views.worker_panel`), and say
  in one line why they are empty (:mod:`~gtop.views.absence`).
* One widget per module; pure helpers in :mod:`~gtop.views.fmt`,
  :mod:`~gtop.views.sparkline` and :mod:`~gtop.views.processes`.
"""

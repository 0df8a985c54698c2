"""gtop's terminal UI (Textual). Views read the model; they never collect.

* :mod:`gtop.views.app` — :class:`GtopApp` and :func:`run_app`: polls the source on a
  timer, applies to the :class:`~gtop.core.model.Model`, redraws on a new generation.
* Screens (:mod:`~gtop.views.screens.base` is their base: body, replay time bar, status line,
  footer): :mod:`~gtop.views.screens.overview` (GPU panels + process table) and
  :mod:`~gtop.views.screens.process` (one process, with tabs).
* Adding a tab to the process screen: see :mod:`gtop.views.tabs.panels`. The analysis tabs
  (:mod:`~gtop.views.tabs.kernels_tab`, :mod:`~gtop.views.tabs.streams_tab`,
  :mod:`~gtop.views.tabs.threads_tab`, :mod:`~gtop.views.tabs.gpu_time_tab`,
  :mod:`~gtop.views.tabs.swimlanes_tab`) read aggregates that
  :mod:`~gtop.views.tabs.session_data` keeps up to date from ``model.listeners`` (reset on a
  replay seek), run slow analysis in workers (:mod:`~gtop.views.tabs.worker_panel`), and say
  in one line why they are empty (:mod:`~gtop.views.tabs.absence`).
* One widget per module; pure helpers in :mod:`~gtop.views.fmt.values`,
  :mod:`~gtop.views.fmt.sparkline` and :mod:`~gtop.views.processes`.
"""

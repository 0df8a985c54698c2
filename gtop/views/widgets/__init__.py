"""gtop.views.widgets."""

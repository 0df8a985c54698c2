"""gtop.views.tabs."""

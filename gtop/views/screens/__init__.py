"""gtop.views.screens."""

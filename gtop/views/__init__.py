"""gtop.views."""

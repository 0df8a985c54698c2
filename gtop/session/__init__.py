"""gtop.session."""

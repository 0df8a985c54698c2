"""gtop.views.fmt.values."""

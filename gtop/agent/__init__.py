"""gtop.agent."""

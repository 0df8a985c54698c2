"""Which time a diagnosis covers: the target's active window and the one-time phases kept out of
it."""

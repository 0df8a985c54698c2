"""Where a GPU's time went: the on-/off-GPU partition (:mod:`.partition`), its causes, its inputs,
and its drawings."""

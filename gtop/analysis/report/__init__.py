"""The report: its JSON document (:mod:`.document`), its GPU section, its text, two side by side,
gtop's cost."""

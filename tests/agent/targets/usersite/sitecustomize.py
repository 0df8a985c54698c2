"""A user's own sitecustomize, which gtop's must not hide."""

import sys

sys.user_sitecustomize_ran = True

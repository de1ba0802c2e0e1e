"""Local development (`make run`): debug on, data under var/."""

from .base import *  # noqa: F403
from .base import VAR_DIR

DEBUG = True
VAR_DIR.mkdir(parents=True, exist_ok=True)

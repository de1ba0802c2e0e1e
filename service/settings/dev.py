"""Local development (`make run`): data under var/, and DEBUG off like production.

DEBUG stays off so that `make run` serves what users get: the console's own error pages, never
Django's debug pages (a 404 there lists every URL pattern, a 500 the settings and source).
Static files need no DEBUG: WhiteNoise (base settings) serves them straight from the apps
(``WHITENOISE_USE_FINDERS``) in every environment, whereas Django's static view would need
``runserver --insecure``, and `make run` serves with daphne, not runserver.

Invitation e-mails are printed by the web process (Django's console e-mail backend), and the
console also shows each one-time link to the person who sent the invitation, as no mail leaves
a development machine.
"""

from .base import *  # noqa: F403
from .base import VAR_DIR

DEBUG = False
EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
SHOW_INVITATION_LINKS = True
VAR_DIR.mkdir(parents=True, exist_ok=True)

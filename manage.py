#!/usr/bin/env python
"""Django's command-line entry point for the control plane."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "service.settings.dev")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)

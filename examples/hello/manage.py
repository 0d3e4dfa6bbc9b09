#!/usr/bin/env python
"""The example project's manage.py: Django's own, pointed at hello.settings."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hello.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)

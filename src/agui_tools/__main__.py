"""``python -m agui_tools`` — same as the ``agui-tools`` command."""

import sys

from .cli import main

sys.exit(main())

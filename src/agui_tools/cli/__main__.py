"""``python -m agui_tools.cli`` — same as the ``agui-tools`` command."""

import sys

from . import main

sys.exit(main())

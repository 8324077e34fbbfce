"""``python -m agui_tools`` — same as the ``agui-tools`` command."""

import sys

from ._sigint import hold

hold()  # a Ctrl-C while the CLI is imported is answered by the command (cli.main releases it)
from .cli import main  # noqa: E402

sys.exit(main())

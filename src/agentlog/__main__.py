"""``python -m agentlog``: the ``agentlog`` command, for where the script is not on PATH."""

from .cli import main

main()

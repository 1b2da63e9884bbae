"""``python -m bot`` runs the Slack bot, as ``verbatim serve`` does; with arguments it is the ``verbatim`` command."""

import sys

from bot.cli import main

if __name__ == "__main__":
    main(args=sys.argv[1:] or ["serve"], prog_name="python -m bot")

"""``python -m safeshare`` and the ``safeshare`` console script."""

import sys

from safeshare.cli import main


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()

"""``python -m metaindex``: the ``metaindex`` command."""

from metaindex.cli import main

if __name__ == "__main__":
    main()

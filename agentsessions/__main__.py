"""``python -m agentsessions``: the same command line as the ``agentsessions`` script."""

from agentsessions.cli.app import main

if __name__ == "__main__":
    main()

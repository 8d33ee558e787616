"""How the command line speaks: a bad input is one line on stderr, `minitf: error: …`, and exit
status 2; a warning is one line and the command goes on."""
import sys


def fail(message: str) -> int:
    print(f"minitf: error: {message}", file=sys.stderr)
    return 2


def warn(message: str) -> None:
    print(f"minitf: warning: {message}", file=sys.stderr)

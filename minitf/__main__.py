import sys

try:
    from .cli import main
except KeyboardInterrupt:  # Ctrl-C before main runs: one line, as everywhere else (minitf/__init__)
    sys.stderr.write("minitf: interrupted (Ctrl-C) while starting; nothing was done\n")
    sys.exit(130)

sys.exit(main())

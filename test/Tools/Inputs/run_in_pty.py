"""Runs a command with stdout and stderr on a pseudo-terminal, then prints
what it wrote with the terminal control characters made visible (\\r as
<CR>, ESC as <ESC>) and exits with the command's status.

usage: run_in_pty.py COMMAND [ARGS...]
"""

import os
import pty
import subprocess
import sys


def main():
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL,
                            stdout=secondary, stderr=secondary)
    os.close(secondary)
    output = bytearray()
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the command closed the terminal
            break
        if not chunk:
            break
        output += chunk
    os.close(primary)
    status = proc.wait()
    text = output.decode("utf-8", "replace")
    # The terminal turns each \n into \r\n (onlcr); only the \r the command
    # wrote itself matter.
    text = text.replace("\r\n", "\n")
    sys.stdout.write(text.replace("\r", "<CR>").replace("\x1b", "<ESC>"))
    sys.exit(status)


if __name__ == "__main__":
    main()

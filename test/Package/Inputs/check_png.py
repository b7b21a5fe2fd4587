"""Prints a PNG file's size in pixels after checking its signature and
header chunk; exits 1 with the reason when it is not a PNG."""

import struct
import sys

with open(sys.argv[1], "rb") as f:
    data = f.read()
if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
    sys.exit(f"{sys.argv[1]}: not a PNG file")
width, height = struct.unpack(">II", data[16:24])
print(f"PNG {width}x{height}, {'over' if len(data) > 10000 else 'under'} "
      "10 kB")

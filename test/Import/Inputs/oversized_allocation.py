"""Writes a copy of the hf_llava fixture with 8 bytes changed, as a fuzzer
left it: LibTorch's unpickler then sizes a vector from a corrupt number and
asks for about 26 GB while loading the archive.

usage: oversized_allocation.py hf_llava.pt OUT.pt

The offsets belong to the committed examples/fixtures/hf_llava.pt; the
script refuses any other file (regenerating the fixture means finding a new
reproducer).
"""

import hashlib
import sys

PATCH = {75965: 50, 81131: 252, 154057: 50, 200448: 46, 200826: 63,
         237251: 53, 242875: 54, 283624: 252}

data = bytearray(open(sys.argv[1], "rb").read())
if len(data) != 300260:
    sys.exit(f"{sys.argv[1]} is not the committed hf_llava fixture")
for offset, byte in PATCH.items():
    data[offset] = byte
open(sys.argv[2], "wb").write(bytes(data))
print(hashlib.sha256(data).hexdigest()[:16])

"""Compiles and trains a model with the installed `glimmer` (run from a
copy outside the checkout) and prints, as JSON: the module's file, the
losses, every file mapped into the process and every file Python opened."""

import json
import sys

opened = []


def audit(event, args):
    if event == "open" and isinstance(args[0], str):
        opened.append(args[0])


sys.addaudithook(audit)

import glimmer  # noqa: E402

model, data, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
with glimmer.SpmdContext():
    program = glimmer.compile(model, data, optimizer="adamw", lr=2e-3,
                              max_norm=1.0)
losses = [r["loss"] for r in program.train(data, steps=steps)]
with open("/proc/self/maps") as f:
    mapped = sorted({fields[5] for fields in
                     (line.split(None, 5) for line in f.read().splitlines())
                     if len(fields) == 6 and fields[5].startswith("/")})
print(json.dumps({"file": glimmer.__file__, "losses": losses,
                  "mapped": mapped, "opened": opened}))

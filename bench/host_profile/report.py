"""Names the functions of a sampler.cpp profile (addr2line) and prints the
ones with the most samples, self (the leaf) and inclusive (anywhere on the
stack), as shares of all samples.

usage: report.py HOSTPROF_OUT.<pid>
"""
import collections, subprocess, sys
lines = open(sys.argv[1]).read().split("\n")
total = int(lines[0].split()[1])
rows = [l.split() for l in lines[1:] if l]
bymod = collections.defaultdict(set)
for t, k, mod, off in rows:
    if mod != "?": bymod[mod].add(off)
name = {}
for mod, offs in bymod.items():
    offs = sorted(offs)
    for i in range(0, len(offs), 2000):
        chunk = offs[i:i+2000]
        out = subprocess.run(["addr2line", "-f", "-C", "-e", mod] + ["0x"+o for o in chunk],
                             capture_output=True, text=True).stdout.split("\n")
        for j, o in enumerate(chunk):
            fn = out[2*j] if 2*j < len(out) else "?"
            if fn == "??": fn = mod.split("/")[-1] + "+?"
            name[(mod, o)] = fn[:150]
agg = {"S": collections.Counter(), "I": collections.Counter()}
for t, k, mod, off in rows:
    fn = name.get((mod, off), mod.split("/")[-1])
    agg[t][fn] += int(k)
for t in "SI":
    print(f"== {'self' if t=='S' else 'inclusive'} (of {total} samples)")
    for fn, k in agg[t].most_common(45 if t == "S" else 60):
        print(f"{100*k/total:6.1f}% {fn}")

"""Host-clock timing of GPU calls for the kernel benchmarks: each trial
queues `iters` calls back to back between two device synchronizations
(which wait for every stream, the runtime's too), and the median trial's
time per call is reported in ms."""

import statistics
import time

import torch


def sync():
    torch.cuda.synchronize()


def timed(fn, iters, repeats, warmup):
    for _ in range(warmup):
        fn()
    sync()
    trials = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        sync()
        trials.append((time.perf_counter() - t0) / iters * 1e3)
    return statistics.median(trials)

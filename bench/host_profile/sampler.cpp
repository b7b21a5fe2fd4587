//===- sampler.cpp - A host CPU sampling profiler to LD_PRELOAD -----------===//
//
// Where a process's host time goes, on machines without perf: SIGPROF every
// HOSTPROF_US microseconds of the process's CPU time (the kernel's tick
// bounds it from below) records up to 24 return addresses of the thread
// that was running. Sampling starts at once, or on SIGUSR2 when
// HOSTPROF_WAIT is set (after a program's warmup steps). At exit it writes
// HOSTPROF_OUT.<pid>: "S|I count module offset" per leaf address (self)
// and per address on the stack (inclusive); report.py names the functions.
//
//   g++ -O2 -shared -fPIC -o /tmp/sampler.so bench/host_profile/sampler.cpp -ldl
//   HOSTPROF_WAIT=1 HOSTPROF_OUT=/tmp/hp LD_PRELOAD=/tmp/sampler.so glimmer-run ... &
//   kill -USR2 <pid>   # once the warmup steps are done
//   python3 bench/host_profile/report.py /tmp/hp.<pid>
//
//===----------------------------------------------------------------------===//
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>
namespace {
constexpr int kDepth = 24;
constexpr size_t kMax = 400000;
void *(*samples)[kDepth];
int *depths;
std::atomic<size_t> n{0};
long interval = 200;
void handler(int, siginfo_t *, void *) {
  size_t i = n.fetch_add(1);
  if (i >= kMax) return;
  depths[i] = backtrace(samples[i], kDepth);
}
struct Init {
  Init() {
    samples = (void *(*)[kDepth])calloc(kMax, sizeof(void *) * kDepth);
    depths = (int *)calloc(kMax, sizeof(int));
    void *tmp[4];
    backtrace(tmp, 4);
    struct sigaction sa {};
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, nullptr);
    // Armed by SIGUSR2 (after the warmup steps), or at once without HOSTPROF_WAIT.
    struct sigaction arm {};
    arm.sa_handler = [](int) {
      long u = interval;
      itimerval t{{0, u}, {0, u}};
      setitimer(ITIMER_PROF, &t, nullptr);
    };
    arm.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &arm, nullptr);
    const char *us = getenv("HOSTPROF_US");
    interval = us ? atol(us) : 200;
    if (!getenv("HOSTPROF_WAIT"))
      raise(SIGUSR2);
  }
  ~Init() {
    itimerval t{};
    setitimer(ITIMER_PROF, &t, nullptr);
    size_t m = std::min(n.load(), kMax);
    std::map<void *, long> self, incl;
    for (size_t i = 0; i < m; ++i) {
      std::set<void *> seen;
      // frames 0,1: handler and the signal trampoline
      for (int d = 2; d < depths[i]; ++d) {
        void *pc = (char *)samples[i][d] - (d > 2 ? 1 : 0);
        if (d == 2) self[pc]++;
        if (seen.insert(pc).second) incl[pc]++;
      }
    }
    const char *path = getenv("HOSTPROF_OUT");
    std::string p = std::string(path ? path : "/tmp/hostprof") + "." + std::to_string(getpid());
    FILE *f = fopen(p.c_str(), "w");
    if (!f) return;
    fprintf(f, "samples %zu\n", m);
    auto dump = [&](const char *tag, std::map<void *, long> &c) {
      for (auto &[pc, k] : c) {
        Dl_info info{};
        if (dladdr(pc, &info) && info.dli_fname)
          fprintf(f, "%s %ld %s %lx\n", tag, k, info.dli_fname,
                  (unsigned long)((char *)pc - (char *)info.dli_fbase));
        else
          fprintf(f, "%s %ld ? %p\n", tag, k, pc);
      }
    };
    dump("S", self);
    dump("I", incl);
    fclose(f);
  }
} init;
}  // namespace

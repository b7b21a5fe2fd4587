//===- ThreadCurrent.h - A value current on the calling thread --*- C++ -*-===//
//
// The calling thread's current value of a context type (the SPMD layout, the
// runtime's rank) and the scope that makes one current. Each context type's
// slot is defined once, in the shared library that owns the type, so that
// every library a process loads sees the same current value.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_CONTRACT_THREADCURRENT_H
#define GLIMMER_CONTRACT_THREADCURRENT_H

namespace glimmer {

/// The thread-local slot holding the innermost live CurrentScope<T>'s value
/// (null when none is live). Specialized once per T, in T's library.
template <typename T>
struct ThreadCurrent {
  static const T *&slot();

  /// The current value, or `fallback` when no scope is live.
  static const T &get(const T &fallback) {
    const T *current = slot();
    return current ? *current : fallback;
  }
};

/// Makes `value` the calling thread's current T for the scope's lifetime; the
/// previous one is restored on destruction. Scopes nest and must be destroyed
/// in reverse order of construction (as RAII guarantees).
template <typename T>
class CurrentScope {
public:
  explicit CurrentScope(const T &value)
      : value(value), previous(ThreadCurrent<T>::slot()) {
    ThreadCurrent<T>::slot() = &this->value;
  }
  ~CurrentScope() { ThreadCurrent<T>::slot() = previous; }
  CurrentScope(const CurrentScope &) = delete;
  CurrentScope &operator=(const CurrentScope &) = delete;

private:
  T value;
  const T *previous;
};

} // namespace glimmer

#endif // GLIMMER_CONTRACT_THREADCURRENT_H

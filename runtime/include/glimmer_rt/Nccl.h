//===- Nccl.h - Communicators over NCCL, between GPU ranks ------*- C++ -*-===//
//
// The CUDA backend's communicators: the collectives of Comm.h, with the
// in-process world's semantics, run by NCCL on tensors that live on the
// rank's GPU. Results are created on the same GPU and the collective is
// only enqueued on the device's stream: the host does not wait for it (the
// next kernel is ordered after it; Tensor::item and Tensor::to wait).
//
// Two ways to run ranks:
//  - NcclWorld: N ranks as N threads of one process, one GPU each (the GPU
//    counterpart of InProcessWorld);
//  - processCommunicator: one rank per process, started by torchrun or
//    mpirun (launchFromEnvironment reads the launcher's variables).
//
// Every group a collective names gets one NCCL communicator, split from the
// world's the first time the group is used. That split is collective over
// the whole world, so every rank must reach the first use of its group at
// the same program point, and the groups used there must partition the
// world (true of the groups of a mesh axis in an SPMD program). The world
// group in rank order uses the world communicator itself; a one-rank group
// needs no communication at all.
//
// Point-to-point messages follow NCCL's rules: a send is enqueued on the
// stream and completes when the peer receives it, so two ranks that send to
// each other must not both send first (ppermute exchanges without that
// constraint). recv waits on the host for a small header carrying the
// tensor's dtype and shape, then enqueues the payload.
//
// A rank that dies must not hang the others. Waits poll instead of blocking:
// the host waits for the device through cuda::synchronize, which calls the
// communicators' wait hooks. A hook gives up the wait (and aborts the
// rank's NCCL communicators, which releases the stream) when the world was
// aborted, NCCL reports an error, or a collective has been pending longer
// than the timeout; the error names the collective and its ranks. A
// watchdog thread does the same for a rank whose host thread is not in such
// a wait, and, between processes, notices a peer process that exited
// without closing its communicator.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_NCCL_H
#define GLIMMER_RT_NCCL_H

#include "glimmer_rt/Comm.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace glimmer_rt {

/// N ranks as N threads of one process, rank r on GPU r % cudaDeviceCount().
/// NCCL runs one rank per GPU, so the world may not have more ranks than
/// there are GPUs. Collectives that wait longer than `timeout` for the other
/// ranks fail with RuntimeError.
class NcclWorld {
public:
  explicit NcclWorld(int64_t size, std::chrono::milliseconds timeout =
                                       std::chrono::seconds(60));
  ~NcclWorld();
  NcclWorld(const NcclWorld &) = delete;
  NcclWorld &operator=(const NcclWorld &) = delete;

  int64_t size() const;
  /// The communicator of `rank`, once per rank. Makes the rank's GPU the
  /// calling thread's current CUDA device and starts initializing the rank's
  /// NCCL communicator; the first collective waits (up to the timeout) for
  /// every rank to have joined. Call it from the rank's thread and hold a
  /// DeviceScope(deviceOf(rank)) there too, so that ops without tensor
  /// operands create their results on the rank's GPU. The communicator must
  /// be used from one thread at a time.
  std::unique_ptr<Communicator> communicator(int64_t rank);
  /// Makes every pending and future collective of every rank fail (a rank
  /// failed): waits on collectives throw RuntimeError("... aborted: why")
  /// and the NCCL communicators are aborted.
  void abort(const std::string &why);
  Device deviceOf(int64_t rank) const;

  struct State;

private:
  std::shared_ptr<State> state;
};

/// How this process was started.
struct LaunchInfo {
  int64_t rank = 0, worldSize = 1, localRank = 0;
  /// "torchrun" (RANK, WORLD_SIZE, LOCAL_RANK), "mpirun"
  /// (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK) or "pmi" (PMI_RANK,
  /// PMI_SIZE; MPI_LOCALRANKID, PMI_LOCAL_RANK or SLURM_LOCALID).
  std::string launcher;
};

/// The launcher's view of this process: nullopt when no launcher variables
/// are set; nullopt with `error` set when they are incomplete, malformed or
/// inconsistent (rank outside the world, launchers that disagree).
std::optional<LaunchInfo> launchFromEnvironment(std::string &error);

/// The communicator of this process's rank, on GPU localRank % (visible GPU
/// count); makes that GPU the calling thread's current CUDA device.
///
/// Rank 0 creates the NCCL unique id and shares it:
///  - with MASTER_ADDR set (torchrun), over TCP: rank 0 listens on the id
///    port and the others connect to MASTER_ADDR. The id port is
///    GLIMMER_NCCL_ID_PORT when set, else MASTER_PORT + 1 under torchrun
///    (TORCHELASTIC_RUN_ID set: torchrun's own store listens on
///    MASTER_PORT), else MASTER_PORT;
///  - otherwise (mpirun), through the file glimmer-nccl-<job key> in
///    GLIMMER_NCCL_ID_DIR (default /tmp; shared between nodes for a
///    multi-node job), written atomically and polled by the others. The job
///    key is OMPI_MCA_ess_base_jobid, else MASTER_PORT, else "default".
///    Files older than a minute before the reader started are ignored, so a
///    file left by a crashed job is not taken for this job's.
/// Either way every rank then keeps a TCP connection to rank 0, which is
/// how a process that exits without closing its communicator is noticed at
/// once (the others' collectives fail with "rank k exited ...").
///
/// Throws RuntimeError naming the launcher, the address or file and the
/// problem when the exchange fails or takes longer than `timeout`.
std::unique_ptr<Communicator> processCommunicator(
    const LaunchInfo &info,
    std::chrono::milliseconds timeout = std::chrono::seconds(60));

} // namespace glimmer_rt

#endif // GLIMMER_RT_NCCL_H

//===- NcclCommunicator.h - A rank's NCCL communicator ---------*- C++ -*-===//
//
// Internal to the runtime's NCCL communicators: the Communicator a rank's
// thread calls, running the collectives of Comm.h with NCCL.
//
//===----------------------------------------------------------------------===//

#ifndef GLIMMER_RT_COMM_NCCLCOMMUNICATOR_H
#define GLIMMER_RT_COMM_NCCLCOMMUNICATOR_H

#include "NcclHub.h"

#include <memory>

namespace glimmer_rt::nccl_detail {

/// Rank `rank` of `hub`'s world on GPU `device`: initializes its NCCL
/// communicator (nonblocking) and registers its wait hook.
std::unique_ptr<Communicator> makeCommunicator(std::shared_ptr<Hub> hub,
                                               int64_t rank, int device);

} // namespace glimmer_rt::nccl_detail

#endif // GLIMMER_RT_COMM_NCCLCOMMUNICATOR_H

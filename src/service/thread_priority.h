#pragma once
// CPU priority of the analysis thread of `llmprism serve`.
//
// Ingest is real time and analysis is not: a datagram the receive thread does not take in time
// is lost in the kernel's socket buffer, while a window whose analysis waits a little is only
// answered later (the window buffer and the memory budget absorb the delay). On a machine with
// fewer cores than busy threads the scheduler shares the CPU by weight, so the analysis thread
// lowers its own weight (a higher nice value); threads it starts inherit that value. Raising a
// nice value needs no privilege.
#include <string>

namespace prism::service {

// Adds `increment` (0-19) to the calling thread's nice value. Returns an empty string on success,
// otherwise why it could not (the caller logs it and goes on at the old priority).
std::string LowerCallingThreadPriority(int increment);

}  // namespace prism::service

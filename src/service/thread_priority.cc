#include "service/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace prism::service {

std::string LowerCallingThreadPriority(int increment) {
  if (increment <= 0) return {};
  // On Linux the nice value belongs to the thread: PRIO_PROCESS with a thread id sets that
  // thread's alone (setpriority(2), NOTES).
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (now == -1 && errno != 0) return fmt::format("getpriority: {}", std::strerror(errno));
  const int wanted = std::min(19, now + increment);
  if (setpriority(PRIO_PROCESS, tid, wanted) != 0) {
    return fmt::format("setpriority {}: {}", wanted, std::strerror(errno));
  }
  return {};
}

}  // namespace prism::service

#include "heap_huge_pages.h"

#include <sys/auxv.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace prism::app {
namespace {

constexpr char kTunables[] = "GLIBC_TUNABLES";
constexpr char kHugeHeap[] = "glibc.malloc.hugetlb";

// True when the system gives huge pages to the memory that asks for them, and only to that.
bool HugePagesOnRequest() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  return std::getline(mode, line) && line.find("[madvise]") != std::string::npos;
}

// True when glibc's malloc is not the one serving this process's heap.
bool AnotherAllocator() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#else
  const char* preload = std::getenv("LD_PRELOAD");  // valgrind preloads its own malloc
  return preload != nullptr && std::string(preload).find("vgpreload") != std::string::npos;
#endif
}

// True when a mapping of the heap has asked for huge pages (glibc does when its setting is on).
bool HeapAskedForHugePages() {
  std::ifstream smaps("/proc/self/smaps");
  bool in_heap = false;
  for (std::string line; std::getline(smaps, line);) {
    // A mapping's first line starts with its range ("lo-hi perms ..."), its name last; the
    // lines of its fields start with a name and a colon.
    const size_t space = line.find(' ');
    if (space != std::string::npos && line.find('-') < space) {
      in_heap = line.ends_with("[heap]");
    } else if (in_heap && line.starts_with("VmFlags:") && line.find(" hg") != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace

std::string HeapPagesNote() {
  const char* tunables = std::getenv(kTunables);
  return std::string(HeapAskedForHugePages() ? "huge pages" : "small pages") + " (" + kTunables +
         "=" + (tunables == nullptr ? "" : tunables) + ")";
}

void ReexecWithHugePageHeap(char** argv) {
  const char* tunables = std::getenv(kTunables);
  const std::string current = tunables == nullptr ? "" : tunables;
  if (current.find(kHugeHeap) != std::string::npos) return;
  if (!HugePagesOnRequest() || AnotherAllocator()) return;
  // Started by naming the loader (ld-linux ... llmprism ARGS): /proc/self/exe is the loader, and
  // these arguments are not its own. The loader then has no base of its own (AT_BASE 0).
  if (getauxval(AT_BASE) == 0) return;
  const std::string wanted = (current.empty() ? "" : current + ":") + kHugeHeap + "=1";
  if (setenv(kTunables, wanted.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Only on failure (no /proc): the setting stays in the environment, which the program's own
  // children inherit harmlessly, and this run goes on with the heap in small pages.
}

}  // namespace prism::app

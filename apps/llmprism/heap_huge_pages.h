// File: apps/llmprism/heap_huge_pages.h
// The heap in transparent huge pages, as the big blocks already are (core/big_blocks.h). Page
// faults, not zeroing, are what fresh memory costs on a virtual machine; after the big blocks
// the heap's growth took most of the rest (scale-10k, one thread: 37,000 of 39,000 faults; in
// huge pages 11% less wall time there, 18% at paper: docs/performance.md). glibc asks for huge
// pages in its heap only when told at start-up (GLIBC_TUNABLES=glibc.malloc.hugetlb=1, read by
// the loader before main, with no call to set it later), so main calls this first: when the
// environment does not already say, it adds the setting and executes the program again, in the
// same process with the same arguments. Nothing is done, and the program goes on as it is, when:
//   - GLIBC_TUNABLES already names glibc.malloc.hugetlb (the run after the re-execution, or the
//     operator's choice: glibc.malloc.hugetlb=0 keeps the heap in small pages),
//   - the system's huge pages are not in "madvise" mode (under "always" the heap has them anyway,
//     under "never" nothing can),
//   - another allocator or a tool stands in for glibc's (a sanitizer build, valgrind),
//   - the program was started by naming the dynamic loader,
//   - the re-execution fails.
// main calls it for `analyze` only. In a process that lives for days (`serve`), the kernel's
// khugepaged would in time fill every 2 MiB range of the heap that holds one live page into a
// whole huge page (its default max_ptes_none of 511): a fragmented heap would grow in RSS with no
// more memory in use. serve's big blocks are its windows' and go back to the system after each.
#pragma once

#include <string>

namespace prism::app {

void ReexecWithHugePageHeap(char** argv);

// What the kernel says of the heap: "huge pages" when a mapping of the heap asked for them
// (VmFlags hg in /proc/self/smaps), else "small pages"; and why, from GLIBC_TUNABLES. For
// --timings, which prints it above its table.
std::string HeapPagesNote();

}  // namespace prism::app

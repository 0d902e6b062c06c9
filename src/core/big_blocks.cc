#include "core/big_blocks.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <new>

namespace prism {
namespace {

struct Block {
  char* begin;
  size_t bytes;
  char* end() const { return begin + bytes; }
};

// The kept blocks in address order, neighbours merged: a block given back beside a kept one (the
// rest of a block cut for a smaller request) makes one larger block again.
struct Kept {
  std::mutex mu;
  std::vector<Block> blocks;
};

Kept& TheKept() {
  static Kept* kept = new Kept;  // never destroyed: blocks may be given back during exit
  return *kept;
}

size_t PageBytes() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// Transparent huge pages on x86-64 (and the alignment asked of fresh blocks elsewhere too).
constexpr uintptr_t kHugePageBytes = uintptr_t{2} << 20;

size_t WholePages(size_t bytes) {
  const size_t page = PageBytes();
  return (bytes + page - 1) / page * page;
}

void Unmap(char* begin, size_t bytes) {
  if (bytes > 0) munmap(begin, bytes);
}

// Cuts `bytes` (whole pages) from the front of the smallest kept block that holds them; the rest
// stays kept when another big request could use it, a smaller rest is unmapped rather than kept
// resident for nothing. Null when no kept block holds them. Called under kept.mu.
char* CutFromKept(Kept& kept, size_t bytes) {
  auto best = kept.blocks.end();
  for (auto it = kept.blocks.begin(); it != kept.blocks.end(); ++it)
    if (it->bytes >= bytes && (best == kept.blocks.end() || it->bytes < best->bytes)) best = it;
  if (best == kept.blocks.end()) return nullptr;
  char* begin = best->begin;
  const size_t rest = best->bytes - bytes;
  if (rest >= kBigBlockMinBytes) {
    *best = {begin + bytes, rest};
  } else {
    kept.blocks.erase(best);
    Unmap(begin + bytes, rest);
  }
  return begin;
}

// Keeps `b`, merged with a kept neighbour on either side. Called under kept.mu.
void Keep(Kept& kept, Block b) {
  auto& blocks = kept.blocks;
  auto at = std::lower_bound(blocks.begin(), blocks.end(), b,
                             [](const Block& x, const Block& y) { return x.begin < y.begin; });
  if (at != blocks.end() && b.end() == at->begin) {  // merge with the next
    b.bytes += at->bytes;
    at = blocks.erase(at);
  }
  if (at != blocks.begin() && std::prev(at)->end() == b.begin) {  // and with the previous
    std::prev(at)->bytes += b.bytes;
    return;
  }
  blocks.insert(at, b);
}

}  // namespace

void* TakeBigBlock(size_t bytes) {
  const size_t want = WholePages(bytes);
  Kept& kept = TheKept();
  std::lock_guard lock(kept.mu);
  if (char* p = CutFromKept(kept, want)) return p;
  // No kept block is large enough: the largest one grows to the size (mremap moves page tables,
  // not the pages), so only the pages it lacks are fresh. Blocks cut in whole pages often fall a
  // page short of a request of the same size: 8 bytes per row less 4 bytes per row, both rounded
  // up, can be one page short of 4 bytes per row.
  auto largest = std::max_element(kept.blocks.begin(), kept.blocks.end(),
                                  [](const Block& x, const Block& y) { return x.bytes < y.bytes; });
  if (largest != kept.blocks.end()) {
    void* p = mremap(largest->begin, largest->bytes, want, MREMAP_MAYMOVE);
    if (p != MAP_FAILED) {  // it fails when the block spans two mappings: then a fresh one
      kept.blocks.erase(largest);
      return p;
    }
  }
  // Mapped at a huge page boundary: the system places a mapping there only when its length is a
  // whole number of huge pages, and a block's length seldom is. Unaligned, the huge pages the
  // block only partly covers at its start were 4 KiB pages, up to 512 faults each.
  char* const mapped = static_cast<char*>(mmap(nullptr, want + kHugePageBytes,
                                               PROT_READ | PROT_WRITE,
                                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  char* const p = reinterpret_cast<char*>(
      (reinterpret_cast<uintptr_t>(mapped) + kHugePageBytes - 1) & ~(kHugePageBytes - 1));
  Unmap(mapped, size_t(p - mapped));
  Unmap(p + want, size_t(mapped + kHugePageBytes - p));
  // Asks for transparent huge pages (where the system allows them only when asked, its default):
  // a column filled row by row then takes one fault per 2 MiB instead of one per 4 KiB. Faults,
  // not zeroing, were the cost: on a virtual machine each one is dear (scale-10k, one thread:
  // 105,000 faults and 0.8 s of the 3 s; with huge pages 39,000, docs/performance.md). A system
  // set to "never" ignores the advice. The pages a block's user leaves untouched at its end are
  // resident all the same within a huge page: FlowTable::ReleaseUnusedCapacity gives them back.
  madvise(p, want, MADV_HUGEPAGE);
  return p;
}

void GiveBackBigBlock(void* block, size_t bytes) {
  Kept& kept = TheKept();
  std::lock_guard lock(kept.mu);
  Keep(kept, {static_cast<char*>(block), WholePages(bytes)});
}

void ReleaseBigBlocks() {
  std::vector<Block> blocks;
  {
    Kept& kept = TheKept();
    std::lock_guard lock(kept.mu);
    blocks.swap(kept.blocks);
  }
  for (const Block& b : blocks) Unmap(b.begin, b.bytes);
}

void KeepBigBlocksFor(std::initializer_list<size_t> requests) {
  std::vector<Block> spare;
  {
    Kept& kept = TheKept();
    std::lock_guard lock(kept.mu);
    // The pieces the requests would be cut, as TakeBigBlock would cut them; all else goes.
    std::vector<Block> wanted;
    for (size_t request : requests) {
      if (request < kBigBlockMinBytes) continue;  // served by the heap, never by a kept block
      const size_t want = WholePages(request);
      if (char* p = CutFromKept(kept, want)) wanted.push_back({p, want});
    }
    spare.swap(kept.blocks);
    for (const Block& b : wanted) Keep(kept, b);
  }
  for (const Block& b : spare) Unmap(b.begin, b.bytes);
}

size_t KeptBigBlockBytes() {
  Kept& kept = TheKept();
  std::lock_guard lock(kept.mu);
  size_t n = 0;
  for (const Block& b : kept.blocks) n += b.bytes;
  return n;
}

size_t KeptBigBlocks() {
  Kept& kept = TheKept();
  std::lock_guard lock(kept.mu);
  return kept.blocks.size();
}

}  // namespace prism

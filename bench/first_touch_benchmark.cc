// What the machine charges for memory a program touches for the first time, in bytes per second:
// the cost under every stage that fills a buffer it has just been given (the read stage's
// columns, the sort's scratch, the heap the transfers grow into). Not llmprism's code: the
// yardstick its memory figures are read against (docs/performance.md, "First touch").
//
//   BM_FirstTouch/0: a fresh anonymous mapping written once, 4 KiB pages (what the heap gets
//                    while transparent huge pages are "madvise", Debian's default).
//   BM_FirstTouch/1: the same with MADV_HUGEPAGE (what core/big_blocks.h asks for).
//   BM_TouchAgain:   a buffer written before, written again (no fault: the memory's own speed).
//   BM_FirstTouchOnThreads/N: one fresh mapping, huge pages, cut over N threads.
//   BM_FirstTouchAfterRest/MS: a fresh mapping, huge pages, MS milliseconds after one as large
//                    was written and unmapped: memory taken again at once (one stage after
//                    another) against memory taken after a rest (a run after a run, a window
//                    after a window).
// On a virtual machine the first touch also pays for the host backing the guest's page, which
// the guest sees as time in the instruction that touched it; pages the guest freed a while ago
// may have been handed back to the host, so a first touch after a rest costs more than one
// right after another run.
#include <benchmark/benchmark.h>

#include <sys/mman.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace prism::bench {
namespace {

constexpr size_t kBytes = size_t{128} << 20;

void* Map(size_t bytes, bool huge) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (huge) madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

// Times one write of a fresh mapping, not its mapping or unmapping. False when mmap failed.
bool TimeFirstTouch(benchmark::State& state, bool huge) {
  state.PauseTiming();
  void* p = Map(kBytes, huge);
  state.ResumeTiming();
  if (p == nullptr) return false;
  std::memset(p, 1, kBytes);
  benchmark::DoNotOptimize(p);
  state.PauseTiming();
  munmap(p, kBytes);
  state.ResumeTiming();
  return true;
}

void BM_FirstTouch(benchmark::State& state) {
  const bool huge = state.range(0) != 0;
  for (auto _ : state)
    if (!TimeFirstTouch(state, huge)) return state.SkipWithError("mmap failed");
  state.SetBytesProcessed(int64_t(state.iterations() * kBytes));
  state.SetLabel(huge ? "huge pages" : "4 KiB pages");
}
BENCHMARK(BM_FirstTouch)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TouchAgain(benchmark::State& state) {
  void* p = Map(kBytes, true);
  if (p == nullptr) return state.SkipWithError("mmap failed");
  std::memset(p, 1, kBytes);
  for (auto _ : state) {
    std::memset(p, 2, kBytes);
    benchmark::DoNotOptimize(p);
  }
  munmap(p, kBytes);
  state.SetBytesProcessed(int64_t(state.iterations() * kBytes));
}
BENCHMARK(BM_TouchAgain)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FirstTouchOnThreads(benchmark::State& state) {
  const size_t threads = size_t(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    char* p = static_cast<char*>(Map(kBytes, true));
    state.ResumeTiming();
    if (p == nullptr) return state.SkipWithError("mmap failed");
    const size_t share = kBytes / threads;
    std::vector<std::jthread> others;
    for (size_t t = 1; t < threads; ++t)
      others.emplace_back([p, t, share] { std::memset(p + t * share, 1, share); });
    std::memset(p, 1, share);
    others.clear();  // joins
    benchmark::DoNotOptimize(p);
    state.PauseTiming();
    munmap(p, kBytes);
    state.ResumeTiming();
  }
  state.SetBytesProcessed(int64_t(state.iterations() * kBytes));
}
BENCHMARK(BM_FirstTouchOnThreads)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FirstTouchAfterRest(benchmark::State& state) {
  const auto rest = std::chrono::milliseconds(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    void* before = Map(kBytes, true);
    if (before == nullptr) return state.SkipWithError("mmap failed");
    std::memset(before, 1, kBytes);
    munmap(before, kBytes);
    std::this_thread::sleep_for(rest);
    state.ResumeTiming();
    if (!TimeFirstTouch(state, true)) return state.SkipWithError("mmap failed");
  }
  state.SetBytesProcessed(int64_t(state.iterations() * kBytes));
}
// A few rounds: each rests for its argument (a host hands free memory back after seconds).
BENCHMARK(BM_FirstTouchAfterRest)->Arg(0)->Arg(500)->Arg(3000)->Iterations(5)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace prism::bench

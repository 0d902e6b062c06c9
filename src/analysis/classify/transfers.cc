#include "analysis/classify/transfers.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>

#include "analysis/jobs/job_recognition.h"
#include "analysis/pair_key_map.h"
#include "analysis/parallel_for.h"
#include "core/big_blocks.h"
#include "core/prefetch.h"

namespace prism::analysis {

void TransferBuilder::Add(const flow::FlowTable& flows, flow::RowId r, bool from_a,
                          const TransferOptions& options) {
  const uint64_t bytes = flows.Bytes(r);
  if (bytes <= options.control_max_bytes) {
    ++out_.control_records;
    return;
  }
  ++out_.data_records;
  const int64_t start = flows.start_ns()[r], end = flows.EndNs(r);
  long& open = open_[from_a ? 0 : 1];
  // Sampled records stand for sampling_rate times their bytes.
  const uint64_t b = flows.EstimatedBytes(r);
  if (open >= 0 && start <= out_.transfers[open].end_ns + options.group_ns) {
    Transfer& t = out_.transfers[open];
    t.end_ns = std::max(t.end_ns, end);
    t.bytes += b;
    ++t.records;
    return;
  }
  open = static_cast<long>(out_.transfers.size());
  out_.transfers.push_back({start, end, b, 1, from_a});
}

void TransferBuilder::Append(TransferBuilder&& later, const TransferOptions& options) {
  std::vector<Transfer>& mine = out_.transfers;
  std::vector<Transfer>& theirs = later.out_.transfers;
  out_.data_records += later.out_.data_records;
  out_.control_records += later.out_.control_records;
  // Later's first transfers of a direction join this builder's open transfer of that direction
  // while they start within group_ns of its end (marked joined by records = 0: a transfer has
  // at least one record). Each of their rows would have joined it in Add: a row joined its own
  // transfer, whose end is at most the open one's once joined. From the first that starts
  // later, Add would have opened a transfer there too, and the two agree from then on.
  size_t joined = 0;
  bool joining[2] = {open_[0] >= 0, open_[1] >= 0};
  for (size_t i = 0; i < theirs.size() && (joining[0] || joining[1]); ++i) {
    Transfer& t = theirs[i];
    const int d = t.from_a ? 0 : 1;
    if (!joining[d]) continue;
    Transfer& open = mine[size_t(open_[d])];
    if (t.start_ns > open.end_ns + options.group_ns) {
      joining[d] = false;
      continue;
    }
    open.end_ns = std::max(open.end_ns, t.end_ns);
    open.bytes += t.bytes;
    open.records += t.records;
    t.records = 0;
    ++joined;
  }
  std::vector<Transfer> all;
  all.reserve(mine.size() + theirs.size() - joined);
  all.insert(all.end(), mine.begin(), mine.end());
  for (size_t i = 0; i < theirs.size(); ++i) {
    if (theirs[i].records == 0) continue;
    for (int d : {0, 1})
      if (later.open_[d] == long(i)) open_[d] = long(all.size());
    all.push_back(theirs[i]);
  }
  mine.swap(all);
  later = TransferBuilder();
}

namespace {

// Every pair of GPUs of one job that has rows, and each row's pair (PairKeyMap::kNone for a row
// not between two GPUs of one job). Pairs are numbered in the order of their first row, so the
// pairs of one collective are built one after the other and their records, which share cache
// lines, are read together (numbered in key order, one thread built scale-10k's transfers in
// 0.12 s instead of 0.09 s). The transfers do not depend on it: the pairs are put in address
// order at the end (InAddressOrder).
struct PairNumbering {
  std::vector<GpuPair> pairs;
  std::vector<uint32_t> pair_of_key;  // per distinct key (RowPairs::keys), its pair or kNone
  BigVector<uint32_t> pair_of_row;    // filled by PairOfEachRow
};

// The pairs, from the distinct keys (a GPU pair of one job is one whose every row is).
PairNumbering NumberPairs(const flow::FlowTable& flows, const std::vector<int>& job_of,
                          const RowPairs& row_pairs) {
  const auto& eps = flows.endpoints();
  const std::vector<uint64_t>& keys = row_pairs.keys;
  PairNumbering out;
  out.pair_of_key.assign(keys.size(), PairKeyMap::kNone);
  for (const uint32_t i : row_pairs.keys_by_first_row) {
    EndpointId a = EndpointId(keys[i] >> 32), b = EndpointId(keys[i]);
    const int j = job_of[a];
    if (j < 0 || j != job_of[b] || a == b) continue;
    if (eps.Addr(b) < eps.Addr(a)) std::swap(a, b);  // a is the pair's lower address
    out.pair_of_key[i] = uint32_t(out.pairs.size());
    out.pairs.push_back({a, b, j});
  }
  return out;
}

// Each row's pair from its key's (the jobs stage hashed every row's pair already): key_of_row,
// taken, is turned into pair_of_row in place, on the threads (`cut`: runs + 1 bounds), one
// lookup in a table of the keys per row. Earlier each run of rows numbered its pairs by first
// row, the runs' numbers were merged on one thread and a second per-row array was filled: at
// two threads that took ~80% of one thread's 17 ms (scale-10k), now ~3 ms on either.
void PairOfEachRow(BigVector<uint32_t>&& key_of_row, const std::vector<size_t>& cut, int threads,
                   PairNumbering* numbering) {
  numbering->pair_of_row = std::move(key_of_row);
  uint32_t* const rows = numbering->pair_of_row.data();
  const uint32_t* const pair_of_key = numbering->pair_of_key.data();
  ParallelFor(cut.size() - 1, threads, [&](size_t k) {
    for (size_t r = cut[k]; r < cut[k + 1]; ++r) rows[r] = pair_of_key[rows[r]];
  });
}

// A thread's built pairs and their copies into the pairs' own lists at their exact size. A pair's
// transfers are built in a buffer kept from pair to pair, then copied at their exact size: one
// allocation per pair, where growing each pair's own list by doubling took several (and a copy
// each), and its slack had to be trimmed at the end (millions of lists kept up to twice their
// size at this stage's peak otherwise).
// With threads the heap is one malloc arena (the app shares one: memory peak), and a copy's
// malloc often faults in a fresh page of the heap while it holds the arena's lock: two threads
// copying took turns sleeping on that lock, and two threads took more wall than one here. So one
// thread at a time copies (`copying`, tried without waiting): a thread that finds another
// copying goes on to its next pair, its built pairs waiting in its buffer, and copies them all
// the next time it finds no one copying. The buffer is bounded (kMaxWaitingBytes): past it the
// thread waits its turn. The copies are most of the fresh pages the transfers take, so copying
// is as slow as building: at 1 MiB the builders waited for each other often enough that two
// threads fed the pairs of scale-10k in 60 ms of wall (90 ms CPU) to one thread's 62; at 8 MiB,
// 42 ms (65 ms CPU). Each thread may hold that much more at this stage, below the run's peak.
class ExactCopies {
 public:
  explicit ExactCopies(std::vector<TransferBuilder>* builders) : builders_(builders) {}

  // `b` (empty) builds its pair after the waiting pairs' transfers in the buffer: its open
  // transfers are indices into the whole list, so they stay its own.
  void BuildInto(TransferBuilder* b) { b->result().transfers.swap(buffer_); }

  // `b` has built pair `p`: its transfers wait in the buffer, and are copied with the others
  // waiting when no other thread copies.
  void Built(uint32_t p, TransferBuilder* b, std::mutex* copying) {
    PairTransfers& built = b->result();
    built.transfers.swap(buffer_);
    waiting_.push_back({p, buffer_.size(), built.data_records, built.control_records});
    std::unique_lock<std::mutex> turn(*copying, std::try_to_lock);
    if (!turn.owns_lock() && buffer_.size() * sizeof(Transfer) <= kMaxWaitingBytes) return;
    if (!turn.owns_lock()) turn.lock();
    CopyWaiting();
  }

  // Copies what still waits (a thread's last pairs).
  void CopyAll(std::mutex* copying) {
    std::lock_guard<std::mutex> turn(*copying);
    CopyWaiting();
  }

 private:
  static constexpr size_t kMaxWaitingBytes = size_t{8} << 20;
  struct Waiting {
    uint32_t pair;
    size_t end;  // of its transfers in the buffer (they begin where the previous pair's end)
    uint32_t data_records, control_records;
  };

  void CopyWaiting() {
    size_t begin = 0;
    for (const Waiting& w : waiting_) {
      PairTransfers& out = (*builders_)[w.pair].result();
      out.transfers.assign(buffer_.begin() + long(begin), buffer_.begin() + long(w.end));
      out.data_records = w.data_records;
      out.control_records = w.control_records;
      begin = w.end;
    }
    waiting_.clear();
    buffer_.clear();
  }

  std::vector<TransferBuilder>* builders_;
  std::vector<Transfer> buffer_;  // the waiting pairs' transfers, one after another
  std::vector<Waiting> waiting_;
};

// Rows rows[begin, end) of one pair, in row order, to its builder. Flattened: this is the
// stage's record loop, and Add left as a call in it cost 10% of the stage on one thread.
[[gnu::flatten]] void FeedRows(const flow::FlowTable& flows, const flow::RowId* rows,
                               size_t begin, size_t end, size_t last_row, EndpointId a,
                               const TransferOptions& options, TransferBuilder* b) {
  const auto src = flows.src();
  for (size_t k = begin; k < end; ++k) {
    // A pair's rows are spread over the window: each misses the cache (core/prefetch.h).
    flows.PrefetchRow(rows[std::min(k + kPrefetchAhead, last_row)]);
    b->Add(flows, rows[k], src[rows[k]] == a, options);
  }
}

// Rows listed per pair (a counting sort, 4 bytes per row), each pair's list fed to its builder
// on its own, the pairs spread over the threads. Each run counts and places its own rows: a
// run's rows of a pair go after the earlier runs' rows of that pair, so each list is in row
// order. Frees `numbering->pair_of_row` once the lists are made.
void FeedPerPair(const flow::FlowTable& flows, const std::vector<size_t>& cut,
                 const TransferOptions& options, int threads, PairNumbering* numbering,
                 std::vector<TransferBuilder>* builders) {
  const auto src = flows.src();
  const size_t runs = cut.size() - 1, num_pairs = numbering->pairs.size();
  BigVector<uint32_t>& pair_of_row = numbering->pair_of_row;
  std::vector<std::vector<size_t>> fill(runs, std::vector<size_t>(num_pairs, 0));
  ParallelFor(runs, threads, [&](size_t k) {
    for (size_t r = cut[k]; r < cut[k + 1]; ++r)
      if (pair_of_row[r] != PairKeyMap::kNone) ++fill[k][pair_of_row[r]];
  });
  std::vector<size_t> first(num_pairs + 1, 0);
  for (size_t p = 0; p < num_pairs; ++p) {
    size_t at = first[p];
    for (size_t k = 0; k < runs; ++k) at += std::exchange(fill[k][p], at);
    first[p + 1] = at;
  }
  // Not zeroed first: every slot is written below (a pass over 4 bytes per row saved). A kept
  // block: the pages pair_of_row's or the sort's buffers left.
  const BigArray<flow::RowId> rows(first.back());
  ParallelFor(runs, threads, [&](size_t k) {
    for (flow::RowId r = flow::RowId(cut[k]); r < cut[k + 1]; ++r)
      if (pair_of_row[r] != PairKeyMap::kNone) rows[fill[k][pair_of_row[r]]++] = r;
  });
  std::vector<std::vector<size_t>>().swap(fill);
  BigVector<uint32_t>().swap(pair_of_row);
  // The transfers now grow on the heap, in blocks of their own: what is kept of the earlier
  // stages' buffers would sit beside them at this stage's peak.
  ReleaseBigBlocks();
  const size_t last_row = first.back() == 0 ? 0 : first.back() - 1;
  // Each thread takes the next pair (pairs differ widely in rows) and builds it on its stack.
  // Builders are handed out one at a time, so two threads build neighbouring pairs, whose
  // builders share cache lines in the array; every record writes to its builder, and the line
  // then bounced between the cores on each record (two threads took twice one thread's CPU
  // here, for the same wall). Only the finished lists are stored into the array.
  std::atomic<size_t> next_pair{0};
  std::mutex copying;
  ParallelFor(size_t(threads), threads, [&](size_t) {
    ExactCopies copies(builders);
    for (size_t p = next_pair++; p < num_pairs; p = next_pair++) {
      TransferBuilder b;
      copies.BuildInto(&b);
      FeedRows(flows, rows.data(), first[p], first[p + 1], last_row, numbering->pairs[p].a,
               options, &b);
      copies.Built(uint32_t(p), &b, &copying);
    }
    copies.CopyAll(&copying);
  });
}

// The one pass over the rows in time order, cut into runs (`cut`: runs + 1 bounds, one run per
// thread): each thread feeds the rows of its run to builders of its own, one per pair, and the
// runs' builders are then joined pair by pair (TransferBuilder::Append), which gives the one
// pass's transfers. Each thread reads its run's rows only: when each fed a share of the pairs
// from every row instead, both read every cache line of the columns, and two threads took 0.16 s
// of wall to one thread's 0.19 s at paper. A row's pair is read from the pair of its key
// (`key_of_row`, taken) instead of being looked up again: in 2 bytes per row when the pairs are
// that few (this route takes at most single_pass_max_pairs), as it stays live while the
// transfers grow: paper, columns 44 + 2 + transfers ~9 bytes per record, under the sort's 62.
// Each thread's builders are its own: side by side in one array, two threads' builders would
// share cache lines, and every record writes to its builder.
void FeedInOnePassOnThreads(const flow::FlowTable& flows, const TransferOptions& options,
                            const std::vector<size_t>& cut, BigVector<uint32_t>&& key_of_row,
                            PairNumbering* numbering, std::vector<TransferBuilder>* builders) {
  const auto src = flows.src();
  const std::vector<GpuPair>& pairs = numbering->pairs;
  const size_t runs = cut.size() - 1;
  const int threads = int(runs);
  std::vector<std::vector<TransferBuilder>> run_builders(runs);
  auto feed = [&](const auto* pair_of_row, uint32_t none) {
    ParallelFor(runs, threads, [&](size_t k) {
      std::vector<TransferBuilder>& mine = run_builders[k];
      mine.resize(pairs.size());
      for (flow::RowId r = flow::RowId(cut[k]); r < cut[k + 1]; ++r) {
        const uint32_t p = pair_of_row[r];
        if (p != none) mine[p].Add(flows, r, src[r] == pairs[p].a, options);
      }
    });
  };
  if (pairs.size() < UINT16_MAX) {
    BigArray<uint16_t> narrow(flows.size());
    const std::vector<uint32_t>& pair_of_key = numbering->pair_of_key;
    ParallelFor(runs, threads, [&](size_t k) {
      for (size_t r = cut[k]; r < cut[k + 1]; ++r) {
        const uint32_t p = pair_of_key[key_of_row[r]];
        narrow[r] = p == PairKeyMap::kNone ? UINT16_MAX : uint16_t(p);
      }
    });
    BigVector<uint32_t>().swap(key_of_row);
    ReleaseBigBlocks();  // as FeedPerPair does before the transfers grow
    feed(narrow.data(), UINT16_MAX);
  } else {
    PairOfEachRow(std::move(key_of_row), cut, threads, numbering);
    ReleaseBigBlocks();
    feed(numbering->pair_of_row.data(), PairKeyMap::kNone);
    BigVector<uint32_t>().swap(numbering->pair_of_row);
  }
  ParallelForInChunks(pairs.size(), threads, kPairsPerChunk, [&](size_t p) {
    TransferBuilder& b = run_builders[0][p];
    for (size_t k = 1; k < runs; ++k) b.Append(std::move(run_builders[k][p]), options);
    (*builders)[p] = std::move(b);
  });
}

// The pairs and their transfers in address order (a's, then b's), the builders emptied.
PairsTransfers InAddressOrder(const flow::FlowTable& flows, const std::vector<GpuPair>& pairs,
                              std::vector<TransferBuilder>* builders) {
  const auto& eps = flows.endpoints();
  std::vector<uint32_t> order(pairs.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const GpuPair &px = pairs[x], &py = pairs[y];
    if (eps.Addr(px.a) != eps.Addr(py.a)) return eps.Addr(px.a) < eps.Addr(py.a);
    return eps.Addr(px.b) < eps.Addr(py.b);
  });
  PairsTransfers out;
  out.pairs.reserve(pairs.size());
  out.transfers.reserve(pairs.size());
  for (uint32_t i : order) {
    out.pairs.push_back(pairs[i]);
    out.transfers.push_back(std::move((*builders)[i].result()));
    out.transfers.back().transfers.shrink_to_fit();
    (*builders)[i] = TransferBuilder();  // free the QP lists as we go
  }
  return out;
}

}  // namespace

PairsTransfers BuildAllTransfers(const flow::FlowTable& flows, const std::vector<int>& job_of,
                                 const TransferOptions& options, int threads,
                                 RowPairs* row_pairs) {
  const auto src = flows.src(), dst = flows.dst();
  const size_t runs = size_t(std::max(1, std::min<int>(threads, int(flows.size() / 65536) + 1)));
  std::vector<size_t> cut(runs + 1);
  for (size_t k = 0; k <= runs; ++k) cut[k] = flows.size() * k / runs;
  RowPairs found;
  if (row_pairs == nullptr) {
    found = NumberRowPairs(src, dst, threads);
    row_pairs = &found;
  }
  PairNumbering numbering = NumberPairs(flows, job_of, *row_pairs);
  const std::vector<GpuPair>& pairs = numbering.pairs;
  std::vector<TransferBuilder> builders(pairs.size());
  // While every pair's builder fits the cache, one pass over the rows in time order feeds them
  // (the columns are read sequentially): with threads, each thread feeds its share of the pairs
  // (FeedInOnePassOnThreads); on one, each row's pair is looked up again in the small pair map,
  // pair_of_row freed first, so its 4 bytes per row and the growing transfers are not live
  // together (they were the analysis's memory peak). A 100,000-GPU window has millions of pairs:
  // then random builder updates miss the cache on every record, so rows are first listed per
  // pair (FeedPerPair). Either way each pair sees its rows in time order: the same transfers.
  if (pairs.size() <= options.single_pass_max_pairs && runs > 1) {
    FeedInOnePassOnThreads(flows, options, cut, std::move(row_pairs->key_of_row), &numbering,
                           &builders);
  } else if (pairs.size() <= options.single_pass_max_pairs) {
    BigVector<uint32_t>().swap(row_pairs->key_of_row);
    ReleaseBigBlocks();  // as FeedPerPair does before the transfers grow
    PairKeyMap index;  // numbers the pairs as `pairs` does
    for (const GpuPair& pair : pairs) index.FindOrInsert(PairKey(pair.a, pair.b));
    for (flow::RowId r = 0; r < flows.size(); ++r) {
      const int j = job_of[src[r]];
      if (j < 0 || j != job_of[dst[r]] || src[r] == dst[r]) continue;
      const uint32_t p = index.Find(PairKey(src[r], dst[r]));
      if (p != PairKeyMap::kNone) builders[p].Add(flows, r, src[r] == pairs[p].a, options);
    }
  } else {
    PairOfEachRow(std::move(row_pairs->key_of_row), cut, threads, &numbering);
    FeedPerPair(flows, cut, options, threads, &numbering, &builders);
  }
  return InAddressOrder(flows, pairs, &builders);
}

}  // namespace prism::analysis

#!/usr/bin/env python3
"""One rank of a real torch.distributed (gloo, TCP, CPU) training job for the real-traffic corpus.

The job's shape comes from variants.py (VARIANT, JOB). The model is a stack of diagonal layers
(element-wise math on realistically sized activations) cut into pipeline stages (optionally
Megatron-style tensor-parallel blocks), with a token embedding on stage 0; forward and backward
are real autograd on CPU. A GPU kernel does not use the host CPU, so each layer's GPU time is
emulated inside a custom autograd Function (fwd_ms in forward, bwd_ms in backward, per layer and
micro-batch; opt_ms after the optimizer) on an emulated GPU timeline (Stream): kernels run back to
back, each ending a fixed time after the previous one (or after the communication it waited for),
and the rank sleeps until that deadline. The cheap real math runs as well, inside the kernels'
time; the machine's load delays the process but does not add up over the kernels. Communication
is real: gloo all_reduce / all_gather / isend / irecv / batch_isend_irecv, or
DistributedDataParallel.

The rank writes JSON lines to --log, each flushed at once (make_corpus.sh watches the step count):
  {"event": "start", ...}                          process group up
  {"event": "step", "step": k, "end_ns": t,      end of optimizer step k on the emulated GPU
   "cpu_ms": c, "late_ms": l, ...}                 (on time.time_ns(), the clock tcpdump stamps
                                                   packets with); c = CPU time the process used
                                                   in the step; l = how late the process woke
                                                   from the optimizer's deadline
  {"event": "done", ...}
Truth step k of this rank runs from the end of its optimizer step k-1 to the end of step k.

Usage: train.py --variant V --job J --rank R --log FILE   (GLOO_SOCKET_IFNAME names the NIC)
"""
import argparse
import io
import json
import os
import queue
import socket
import sys
import threading
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variants as V  # noqa: E402


class Log:
    def __init__(self, path):
        self.f = open(path, "w")
        self.lock = threading.Lock()

    def write(self, **kv):
        with self.lock:
            self.f.write(json.dumps(kv) + "\n")
            self.f.flush()


# GPU time scale of this rank (a straggler's steps set it above 1).
SLOW = [1.0]


class Stream:
    """The emulated GPU's timeline, on time.monotonic_ns(): end_ns is when the last emulated
    kernel ends. Kernels run back to back from it, so that a kernel's end is a deadline computed
    from its start, not the moment a sleep returns: on the shared machine a sleep overruns and the
    real math between kernels takes CPU time, and both only delay the process, never the emulated
    GPU. The process waits for its GPU (sleeps until the deadline) because the next operation
    needs the result, as a CUDA synchronisation would."""

    end_ns = 0


def host_ready():
    """The host has just finished waiting for something outside the GPU (a communication, a
    barrier): a kernel launched from now on cannot start earlier than now."""
    Stream.end_ns = max(Stream.end_ns, time.monotonic_ns())


def gpu_sleep(ms):
    """One emulated kernel of ms (x SLOW): starts when the previous one ended (or when the host
    last stopped waiting, if later), ends ms later; sleeps until then."""
    if ms <= 0:
        return
    Stream.end_ns += int(ms * SLOW[0] * 1e6)
    while True:
        left_ns = Stream.end_ns - time.monotonic_ns()
        if left_ns <= 0:
            return
        time.sleep(left_ns / 1e9)


def stream_end_wall_ns():
    """The emulated GPU's current end of work on the time.time_ns() clock (tcpdump's)."""
    return Stream.end_ns + (time.time_ns() - time.monotonic_ns())


class GpuTime(torch.autograd.Function):
    """Identity whose forward sleeps fwd_ms and backward bwd_ms: the emulated GPU kernel time."""

    @staticmethod
    def forward(ctx, x, fwd_ms, bwd_ms):
        ctx.bwd_ms = bwd_ms
        gpu_sleep(fwd_ms)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        gpu_sleep(ctx.bwd_ms)
        return g, None, None


class CopyToTp(torch.autograd.Function):
    """Megatron's f: identity forward, all-reduce of the input gradient over the TP group."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        g = g.contiguous()
        dist.all_reduce(g, group=ctx.group)
        host_ready()
        return g, None


class ReduceFromTp(torch.autograd.Function):
    """Megatron's g: all-reduce of the partial output over the TP group, identity backward."""

    @staticmethod
    def forward(ctx, x, group):
        x = x.contiguous()
        dist.all_reduce(x, group=group)
        host_ready()
        return x

    @staticmethod
    def backward(ctx, g):
        return g, None


class Block(torch.nn.Module):
    """One layer, followed by its emulated GPU time. Diagonal, so that a realistic activation
    (batch x seq x hidden) costs only element-wise work: y = gelu(x * w + b) with one weight and
    one bias per position and feature. With TP, a Megatron-style block whose hidden width is tp x
    hidden: every TP rank holds hidden of it (its own w, b), f copies the input to the TP ranks
    (all-reduce of its gradient in the backward) and g sums their partial outputs (all-reduce in
    the forward)."""

    def __init__(self, seq, hidden, tp, tp_group, fwd_ms, bwd_ms):
        super().__init__()
        self.tp, self.tp_group = tp, tp_group
        self.fwd_ms, self.bwd_ms = fwd_ms, bwd_ms
        self.w = torch.nn.Parameter(1.0 + 0.01 * torch.randn(seq, hidden))
        self.b = torch.nn.Parameter(0.01 * torch.randn(seq, hidden))

    def forward(self, x):
        if self.tp == 1:
            y = F.gelu(x * self.w + self.b)
        else:
            h = F.gelu(CopyToTp.apply(x, self.tp_group) * self.w + self.b)
            y = ReduceFromTp.apply(h, self.tp_group)
        return GpuTime.apply(y, self.fwd_ms, self.bwd_ms)


class Storage:
    """Data loading reads and checkpoint writes to the storage node (storage_server.py)."""

    def __init__(self, ip, port, log):
        self.ip, self.port, self.log = ip, port, log
        self.stop = threading.Event()
        self.ckpt = queue.Queue()
        self.threads = [threading.Thread(target=self._loader, daemon=True),
                        threading.Thread(target=self._checkpointer, daemon=True)]
        for t in self.threads:
            t.start()

    def _request(self, head, payload=b"", expect=0):
        with socket.create_connection((self.ip, self.port), timeout=30) as s:
            s.sendall(head.encode() + b"\n" + payload)
            got = 0
            while got < expect:
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                got += len(chunk)
            if not expect:
                s.shutdown(socket.SHUT_WR)
                s.recv(16)
        return got

    def _loader(self):
        # A data loader prefetching 1 MiB of samples every 2 s.
        n = 0
        while not self.stop.wait(2.0):
            got = self._request(f"GET {1 << 20}", expect=1 << 20)
            self.log.write(event="storage_read", n=n, bytes=got, t_ns=time.time_ns())
            n += 1

    def _checkpointer(self):
        while True:
            item = self.ckpt.get()
            if item is None:
                return
            step, blob = item
            t0 = time.time_ns()
            self._request(f"PUT {len(blob)}", payload=blob)
            self.log.write(event="checkpoint", step=step, bytes=len(blob), start_ns=t0,
                           end_ns=time.time_ns())

    def checkpoint(self, step, model):
        buf = io.BytesIO()
        torch.save({k: v.detach().clone() for k, v in model.state_dict().items()}, buf)
        self.ckpt.put((step, buf.getvalue()))

    def close(self):
        self.stop.set()
        self.ckpt.put(None)
        self.threads[1].join(timeout=60)


class ZeroReducer:
    """ZeRO-style gradient reduce-scatter: as the backward produces a layer's gradients, a
    communication thread reduce-scatters them around the DP ring with isend / irecv (gloo in
    this torch has no reduce_scatter); each rank keeps the shard it owns."""

    def __init__(self, group_ranks, group, my_index):
        self.ranks, self.group, self.me = group_ranks, group, my_index
        self.n = len(group_ranks)
        self.q = queue.Queue()
        self.shards = {}
        self.error = None
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            item = self.q.get()
            if item is None:
                return
            key, flat = item
            try:
                self.shards[key] = self._ring(flat)
            except Exception as e:  # surfaced by wait()
                self.error = e
            self.q.task_done()

    def _ring(self, flat):
        n, me = self.n, self.me
        chunks = list(flat.chunk(n))
        nxt, prv = self.ranks[(me + 1) % n], self.ranks[(me - 1) % n]
        tmp = torch.empty_like(chunks[0])
        for r in range(n - 1):
            send_i, recv_i = (me - r) % n, (me - r - 1) % n
            s = dist.isend(chunks[send_i].contiguous(), nxt, group=self.group, tag=r)
            dist.irecv(tmp, prv, group=self.group, tag=r).wait()
            s.wait()
            chunks[recv_i] = chunks[recv_i] + tmp
        return chunks[(me + 1) % n]  # fully reduced after n-1 rounds

    def submit(self, key, flat):
        self.q.put((key, flat))

    def wait(self):
        self.q.join()
        if self.error:
            raise self.error


def pad_to(flat, n):
    """`flat` zero-padded to a multiple of n elements, so it splits into n equal chunks."""
    extra = (-flat.numel()) % n
    return torch.cat([flat, flat.new_zeros(extra)]) if extra else flat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", required=True)
    ap.add_argument("--job", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--log", required=True)
    args = ap.parse_args()

    torch.set_num_threads(1)
    J = V.job_config(args.variant, args.job)
    ips = V.job_ips(args.variant, args.job)
    world = len(ips)
    rank = args.rank
    dp, pp, tp, M = J["dp"], J["pp"], J["tp"], J["microbatches"]
    stage, dp_i, tp_i = V.coords(J, rank)
    log = Log(args.log)
    port = V.MASTER_PORT + V.job_index(args.variant, args.job)
    dist.init_process_group("gloo", init_method=f"tcp://{ips[0]}:{port}", rank=rank,
                            world_size=world)

    # Every rank creates every group, in the same order.
    dp_group, dp_ranks, tp_group = None, None, None
    if dp > 1:
        for s in range(pp):
            for t in range(tp):
                ranks = [V.rank_of(J, s, d, t) for d in range(dp)]
                g = dist.group.WORLD if len(ranks) == world else dist.new_group(ranks)
                if (s, t) == (stage, tp_i):
                    dp_group, dp_ranks = g, ranks
    if tp > 1:
        for s in range(pp):
            for d in range(dp):
                ranks = [V.rank_of(J, s, d, t) for t in range(tp)]
                g = dist.new_group(ranks)
                if (s, d) == (stage, dp_i):
                    tp_group = g

    torch.manual_seed(1000 + stage * 10 + tp_i)  # DP replicas start equal: no broadcast needed
    H, S, B = J["hidden"], J["seq"], J["batch"]
    blocks = [Block(S, H, tp, tp_group, J["fwd_ms"], J["bwd_ms"]) for _ in range(J["layers"])]
    if stage == 0:
        # The token embedding: its gradient is dense (vocab x hidden), as in real LLM training,
        # and joins the first stage's gradient bytes while costing no real compute. The same on
        # every rank of the stage (TP peers see the same input).
        torch.manual_seed(999)
        blocks.insert(0, torch.nn.Embedding(J["vocab"], H))
    model = torch.nn.Sequential(*blocks)
    if J["mode"] == "ddp":
        # DDP caps its first bucket (the last layers' gradients) at a fixed size whatever
        # bucket_cap_mb says; give it the others' cap, so that every bucket holds one layer
        # (w and b: bucket_mb) and is reduced as soon as the backward has produced it.
        dist._DEFAULT_FIRST_BUCKET_BYTES = int(J["bucket_mb"] * (1 << 20))
        model = torch.nn.parallel.DistributedDataParallel(
            model, process_group=dp_group, bucket_cap_mb=J["bucket_mb"])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    layers = list(model.module if J["mode"] == "ddp" else model)

    zero = None
    if J["mode"] == "zero":
        zero = ZeroReducer(dp_ranks, dp_group, dp_ranks.index(rank))
        for li, layer in enumerate(layers):
            params = list(layer.parameters())
            pending = {}
            for pi, p in enumerate(params):
                def make(pi=pi, li=li, params=params, pending=pending):
                    def h(g):
                        pending[pi] = g.detach().reshape(-1)
                        if len(pending) == len(params):
                            flat = torch.cat([pending[i] for i in range(len(params))])
                            zero.submit(li, pad_to(flat, dp))
                            pending.clear()
                        return g
                    return h
                p.register_hook(make())

    storage = None
    if J["storage"]:
        storage = Storage(V.storage_ip(args.variant), V.STORAGE_PORT, log)

    gen = torch.Generator().manual_seed(7 + dp_i)
    n_micro = M if pp > 1 else 1
    # A fixed regression target per micro-batch (the last stage's loss); drawn once, not per
    # step, to spend the shared CPU on the training itself.
    targets = [torch.randn(B, S, H, generator=gen) for _ in range(n_micro)] \
        if stage == pp - 1 else None
    first, last = 0, J["steps"] - 1
    straggler = J["straggler"]
    prev_rank, next_rank = None, None
    if pp > 1:
        if stage > 0:
            prev_rank = V.rank_of(J, stage - 1, dp_i, tp_i)
        if stage < pp - 1:
            next_rank = V.rank_of(J, stage + 1, dp_i, tp_i)

    log.write(event="start", rank=rank, job=args.job, ip=ips[rank], stage=stage, dp=dp_i, tp=tp_i,
              t_ns=time.time_ns(), torch=torch.__version__)
    dist.barrier()
    host_ready()
    gathers = []  # ZeRO: pending parameter all-gathers, waited before each layer's forward

    cpu0 = time.process_time()
    for step in range(first, last + 1):
        SLOW[0] = straggler[3] if straggler and straggler[0] == rank and \
            straggler[1] <= step <= straggler[2] else 1.0
        for p in model.parameters():
            p.grad = None
        if gathers:
            for layer, (work, outs) in zip(layers, gathers):
                work.wait()
                # Group rank g owns chunk (g + 1) % dp (ZeroReducer._ring).
                flat = torch.cat([outs[(c - 1) % dp] for c in range(dp)])
                off = 0
                with torch.no_grad():
                    for p in layer.parameters():
                        p.copy_(flat[off:off + p.numel()].view_as(p))
                        off += p.numel()
            gathers = []
            host_ready()

        inputs = [torch.randint(J["vocab"], (B, S), generator=gen) for _ in range(n_micro)]
        sends = []
        saved = {}

        def recv_from(peer):
            t = torch.empty(B, S, H)
            dist.irecv(t, peer).wait()
            host_ready()
            return t

        def exchange(send=None, send_peer=None, recv_peer=None):
            """Megatron's batched p2p: send `send` to send_peer and receive one tensor from
            recv_peer in one dist.batch_isend_irecv, waiting for both (send_forward_recv_backward
            and send_backward_recv_forward; with one side None, send_forward / recv_backward ...).
            """
            # The receive is posted first: gloo's isend writes the payload from the calling
            # thread when the peer already waits for it, which would hold back our receive's
            # ready notice (and so the peer's transfer) by the time of that write; posted in this
            # order both transfers start together, as NCCL's grouped send and receive do.
            ops, t = [], None
            if recv_peer is not None:
                t = torch.empty(B, S, H)
                ops.append(dist.P2POp(dist.irecv, t, recv_peer))
            if send is not None and send_peer is not None:
                ops.append(dist.P2POp(dist.isend, send.detach().contiguous(), send_peer))
            if ops:
                for work in dist.batch_isend_irecv(ops):
                    work.wait()
                host_ready()
            return t

        def send_to(t, peer):
            t = t.detach().contiguous()
            sends.append((dist.isend(t, peer), t))

        def forward(i, x):
            if x is None:
                x = inputs[i]
            else:
                x.requires_grad_(True)
            y = model(x)
            loss = F.mse_loss(y, targets[i]) if stage == pp - 1 else None
            saved[i] = (x, y, loss)
            return y

        def backward(i, gy):
            x, y, loss = saved.pop(i)
            if loss is not None:
                loss.backward()
            else:
                y.backward(gy)
            return x.grad if stage > 0 else None

        if pp == 1:
            forward(0, None)
            backward(0, None)
            if J["mode"] == "ddp":
                host_ready()  # DDP's backward returns once its last bucket is all-reduced
        elif J["schedule"] == "gpipe":
            for i in range(M):
                y = forward(i, recv_from(prev_rank) if stage > 0 else None)
                if next_rank is not None:
                    send_to(y, next_rank)
            for i in range(M):
                gx = backward(i, recv_from(next_rank) if next_rank is not None else None)
                if prev_rank is not None:
                    send_to(gx, prev_rank)
        elif J["p2p"] == "batched":  # 1F1B, non-interleaved, as Megatron-LM schedules it
            warm = min(pp - stage - 1, M)
            rem = M - warm
            fi = bi = 0
            for _ in range(warm):
                y = forward(fi, exchange(recv_peer=prev_rank))  # recv_forward
                fi += 1
                exchange(y, next_rank)  # send_forward
            x = exchange(recv_peer=prev_rank) if rem > 0 else None
            for k in range(rem):
                y = forward(fi, x)
                fi += 1
                gy = exchange(y, next_rank, next_rank)  # send_forward_recv_backward
                gx = backward(bi, gy)
                bi += 1
                last_k = k == rem - 1
                # send_backward_recv_forward, or send_backward after the last forward
                x = exchange(gx, prev_rank, None if last_k else prev_rank)
            for _ in range(warm):
                gx = backward(bi, exchange(recv_peer=next_rank))  # recv_backward
                bi += 1
                exchange(gx, prev_rank)  # send_backward
        else:  # 1F1B, non-interleaved
            warm = min(pp - stage - 1, M)
            rem = M - warm
            fi = bi = 0
            for _ in range(warm):
                y = forward(fi, recv_from(prev_rank) if stage > 0 else None)
                fi += 1
                send_to(y, next_rank)
            x = recv_from(prev_rank) if (rem > 0 and stage > 0) else None
            for k in range(rem):
                y = forward(fi, x)
                fi += 1
                gy = None
                if next_rank is not None:
                    send_to(y, next_rank)
                    gy = recv_from(next_rank)
                gx = backward(bi, gy)
                bi += 1
                x = None
                if prev_rank is not None:
                    send_to(gx, prev_rank)
                    if k < rem - 1:
                        x = recv_from(prev_rank)
            for _ in range(warm):
                gx = backward(bi, recv_from(next_rank))
                bi += 1
                if prev_rank is not None:
                    send_to(gx, prev_rank)
        for work, _ in sends:
            work.wait()
        if sends:
            host_ready()

        # Data-parallel gradient synchronisation.
        if dp > 1 and J["mode"] == "allreduce":
            grads = [p.grad for p in model.parameters()]
            flat = torch.cat([g.reshape(-1) for g in grads])
            dist.all_reduce(flat, group=dp_group)
            host_ready()
            flat /= dp
            off = 0
            for g in grads:
                g.copy_(flat[off:off + g.numel()].view_as(g))
                off += g.numel()
        if zero is not None:
            zero.wait()
            host_ready()
            me = dp_ranks.index(rank)
            with torch.no_grad():
                for li, layer in enumerate(layers):
                    flat_p = torch.cat([p.detach().reshape(-1) for p in layer.parameters()])
                    shard = pad_to(flat_p, dp).chunk(dp)[(me + 1) % dp].clone()
                    shard -= 1e-3 * zero.shards[li] / dp
                    zero.shards[li] = shard  # updated parameter shard, gathered below
            gpu_sleep(J["opt_ms"])
        else:
            opt.step()
            gpu_sleep(J["opt_ms"])
        cpu1 = time.process_time()
        # The step ends when the emulated GPU has finished the optimizer, not when the sleep
        # returned (late_ms: by how much it overran, under the machine's load).
        log.write(event="step", step=step, end_ns=stream_end_wall_ns(), slow=SLOW[0],
                  cpu_ms=round((cpu1 - cpu0) * 1e3, 2),
                  late_ms=round((time.monotonic_ns() - Stream.end_ns) / 1e6, 2))
        cpu0 = cpu1

        if zero is not None:
            # Parameter all-gather per layer, overlapped with the next forward.
            for li, layer in enumerate(layers):
                shard = zero.shards[li]
                outs = [torch.empty_like(shard) for _ in range(dp)]
                work = dist.all_gather(outs, shard, group=dp_group, async_op=True)
                gathers.append((work, outs))
        if storage is not None and step % 15 == 14:
            storage.checkpoint(step, model)
            host_ready()  # the snapshot is host work: the next kernels are launched after it

    if zero is not None:
        for work, _ in gathers:
            work.wait()
    if storage is not None:
        storage.close()
    dist.barrier()
    log.write(event="done", rank=rank, t_ns=time.time_ns())
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

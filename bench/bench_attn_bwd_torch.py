"""PyTorch's CPU SDPA forward and backward times (F32), for comparison
with bench_attn_bwd.c:  python bench_attn_bwd_torch.py B H Hkv T D causal
[threads] [reps].  Prints the minimum over reps in ms of the forward, of
forward + out.backward(g), and their difference (backward alone)."""
import sys
import time

import torch
import torch.nn.functional as F


def main():
    b, h, hkv, t, d, causal = (int(x) for x in sys.argv[1:7])
    threads = int(sys.argv[7]) if len(sys.argv) > 7 else 2
    reps = int(sys.argv[8]) if len(sys.argv) > 8 else 5
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    q = torch.randn(b, h, t, d, requires_grad=True)
    k = torch.randn(b, hkv, t, d, requires_grad=True)
    v = torch.randn(b, hkv, t, d, requires_grad=True)
    g = torch.randn(b, h, t, d)
    kw = dict(is_causal=bool(causal), enable_gqa=hkv != h)
    fwd = fb = cfwd = cfb = float("inf")
    for _ in range(reps):
        c0, t0 = time.process_time(), time.perf_counter()
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, **kw)
        fwd = min(fwd, time.perf_counter() - t0)
        cfwd = min(cfwd, time.process_time() - c0)
        c0, t0 = time.process_time(), time.perf_counter()
        out = F.scaled_dot_product_attention(q, k, v, **kw)
        out.backward(g)
        fb = min(fb, time.perf_counter() - t0)
        cfb = min(cfb, time.process_time() - c0)
        q.grad = k.grad = v.grad = None
    print(f"torch B={b} H={h} Hkv={hkv} T={t} D={d} causal={causal} "
          f"threads={threads}: forward {fwd * 1e3:.2f} ms, forward+backward "
          f"{fb * 1e3:.2f} ms, backward ~{(fb - fwd) * 1e3:.2f} ms; cpu time "
          f"(all threads) forward {cfwd * 1e3:.2f} ms, forward+backward "
          f"{cfb * 1e3:.2f} ms, backward ~{(cfb - cfwd) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()

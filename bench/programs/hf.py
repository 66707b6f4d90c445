"""Real PyTorch programs, unmodified, with random weights from their configs (no download):
HF GPT-2 (12 layers), an HF Llama-style decoder, HF BERT-base, and a bf16-autocast Llama
training step with AdamW (foreach). Each prints the per-iteration times and a checksum of
every output byte, so that a run under tcfuse is compared with eager bitwise.

    hf.py MODEL [--batch B] [--seq S] [--layers L] [--iters N] [--warmup W] [--compile]
          [--compile-mode MODE] [--census [--kernels FILE]] [--deterministic]
          [--attn sdpa|eager] [--parallel ddp|fsdp]

MODEL: gpt2 (default 1 x 32), llama (bf16, hidden 2048, 8 layers, intermediate 5632,
16 heads; default 4 x 2048, GPU-bound), bert (8 x 128), llama-train (hidden 1024, 8 layers,
8 x 1024). --compile wraps the model (or the step) in torch.compile (--compile-mode MODE:
with that mode, e.g. reduce-overhead). --census prints, per
kernel family (families.py), launches and GPU time of one iteration from torch.profiler.
--parallel (llama-train, under torchrun: one process a GPU, NCCL) trains data-parallel:
ddp wraps the model in DistributedDataParallel, fsdp shards each decoder layer and the
root with fully_shard; every rank starts from the same weights and draws its own batches.
Rank 0 prints the lines below, its own times, and a checksum over every rank's losses and
the final parameters (gathered whole); "rank_checksums" lists each rank's part.

Output lines: "iter_ms <t1> <t2> ...", "median_ms <m>", "first_ms <t>", "host_ms <t1> ..."
(each measured iteration's time until the call returned, before the synchronize: the
host's part, or more where the driver's queue was full and a launch blocked),
"checksum <sha256>".
"""
import argparse
import hashlib
import json
import os
import statistics
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

DEFAULTS = {"gpt2": (1, 32), "llama": (4, 2048), "bert": (8, 128), "llama-train": (8, 1024)}


def build(torch, name, layers=None, attn=None):
    import transformers as tf
    torch.manual_seed(0)
    if name == "gpt2":
        return tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=layers or 12)), torch.float32
    if name == "bert":
        return tf.BertModel(tf.BertConfig(num_hidden_layers=layers or 12)), torch.float32
    if name == "llama":
        cfg = tf.LlamaConfig(hidden_size=2048, num_hidden_layers=layers or 8, intermediate_size=5632,
                             num_attention_heads=16, num_key_value_heads=16, vocab_size=32000,
                             max_position_embeddings=4096)
        return tf.LlamaForCausalLM(cfg), torch.bfloat16
    if name == "llama-train":
        cfg = tf.LlamaConfig(hidden_size=1024, num_hidden_layers=layers or 8, intermediate_size=2816,
                             num_attention_heads=16, num_key_value_heads=16, vocab_size=32000,
                             max_position_embeddings=2048)
        if attn:
            cfg._attn_implementation = attn
        return tf.LlamaForCausalLM(cfg), torch.float32
    raise SystemExit("unknown model %r (known: %s)" % (name, ", ".join(DEFAULTS)))


def digest_update(h, torch, t):
    t = t.detach()
    if hasattr(t, "full_tensor"):   # an FSDP shard (DTensor): the whole parameter
        t = t.full_tensor()
    t = t.to("cpu").contiguous()
    h.update(str(t.dtype).encode() + str(tuple(t.shape)).encode())
    t = t.reshape(-1)  # a 0-dim tensor (the loss) cannot be viewed as bytes
    h.update((t.to(torch.uint8) if t.dtype == torch.bool else t).view(torch.uint8).numpy().tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=sorted(DEFAULTS))
    ap.add_argument("--batch", type=int)
    ap.add_argument("--seq", type=int)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--layers", type=int, help="override the config's layer count")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--compile-mode", help="torch.compile's mode (e.g. reduce-overhead); implies --compile")
    ap.add_argument("--census", action="store_true")
    ap.add_argument("--kernels", metavar="FILE",
                    help="with --census, also write every GPU kernel of the profiled iteration, "
                         "in order, as JSON lines {name, us, start_us} (to compare two runs kernel "
                         "by kernel, and to see where the GPU waited)")
    ap.add_argument("--attn", choices=["sdpa", "eager"],
                    help="llama-train's attention (eager: plain matmuls and softmax, whose "
                         "backward is deterministic; SDPA's flash backward is not)")
    ap.add_argument("--deterministic", action="store_true",
                    help="torch.use_deterministic_algorithms (warn only): a training step's "
                         "backward uses atomics otherwise, and two eager runs differ")
    ap.add_argument("--parallel", choices=["ddp", "fsdp"],
                    help="llama-train data-parallel over torchrun's processes (NCCL)")
    a = ap.parse_args()
    if a.kernels and not a.census:
        ap.error("--kernels needs --census (the kernels are those of the profiled iteration)")
    if a.parallel and (a.model != "llama-train" or "LOCAL_RANK" not in os.environ):
        ap.error("--parallel trains llama-train under torchrun (LOCAL_RANK unset or another model)")
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if a.deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)
    rank, dist = 0, None
    if a.parallel:
        import torch.distributed as dist
        rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    dev = torch.device("cuda", rank) if a.parallel else torch.device("cuda")
    batch, seq = a.batch or DEFAULTS[a.model][0], a.seq or DEFAULTS[a.model][1]
    model, dtype = build(torch, a.model, a.layers, a.attn)   # seeded: the same on every rank
    model = model.to(dev, dtype)
    g = torch.Generator().manual_seed(1 + rank)
    vocab = model.config.vocab_size
    train = a.model == "llama-train"
    params = model.parameters
    if a.parallel == "ddp":
        from torch.nn.parallel import DistributedDataParallel
        model = DistributedDataParallel(model, device_ids=[rank])
    elif a.parallel == "fsdp":
        from torch.distributed.fsdp import fully_shard
        for layer in model.model.layers:
            fully_shard(layer)
        fully_shard(model)

    if train:
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)

        def step(ids):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss.detach()
    else:
        model.eval()

        def step(ids):
            with torch.no_grad():
                out = model(input_ids=ids)
            return out.logits if hasattr(out, "logits") else out.last_hidden_state
    if a.compile_mode:
        a.compile = True
    fn = torch.compile(step, mode=a.compile_mode) if a.compile else step
    graphs = a.compile and a.compile_mode == "reduce-overhead"

    h = hashlib.sha256()
    times, host, probes = [], [], []
    outs = []
    for i in range(a.warmup + a.iters):
        if i % common.PROBE_EVERY == 0:   # between steps: the last one synchronized
            probes.append(common.probe())
        if i == a.warmup:
            common.sampling()
        ids = torch.randint(0, vocab, (batch, seq), generator=g).to(dev)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        if graphs:   # each call a new step: the last one's outputs may be overwritten
            torch.compiler.cudagraph_mark_step_begin()
        out = fn(ids)
        host.append((time.perf_counter() - t0) * 1e3)   # the host's part, up to the sync
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
        if train or i in (0, a.warmup + a.iters - 1):
            # reduce-overhead's outputs live in its graph's memory: the next replay
            # overwrites them, so keep a copy (made after the timing)
            outs.append(out.clone() if graphs and not train else out)
    common.sampling()
    for o in outs:
        digest_update(h, torch, o)
    if train:
        for p in params():
            digest_update(h, torch, p)
    digest = h.hexdigest()
    if a.parallel:   # every rank's losses and parameters, in rank order
        parts = [None] * dist.get_world_size()
        dist.all_gather_object(parts, digest)
        dist.destroy_process_group()
        if rank:
            return
        digest = hashlib.sha256(" ".join(parts).encode()).hexdigest()
        print("rank_checksums " + " ".join(parts))
    meas = times[a.warmup:]
    print("model %s batch %d seq %d dtype %s%s%s" % (
        a.model, batch, seq, str(dtype)[6:],
        (" compiled " + (a.compile_mode or "default")) if a.compile else "",
        (" %s over %d ranks" % (a.parallel, len(parts))) if a.parallel else ""))
    print("first_ms %.3f" % times[0])
    print("iter_ms " + " ".join("%.3f" % t for t in meas))
    print("median_ms %.3f" % statistics.median(meas))
    print("host_ms " + " ".join("%.3f" % t for t in host[a.warmup:]))
    print("probe_ms " + " ".join("%.3f" % t for t in probes))
    print("checksum %s" % digest)

    if a.census:
        import families
        from torch.profiler import ProfilerActivity, profile
        ids = torch.randint(0, vocab, (batch, seq), generator=g).to(dev)
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn(ids)
            torch.cuda.synchronize()
        rows = {}
        total = 0.0
        spans = []   # each kernel's [start, end] on the GPU: busy time against the span
        kf = open(a.kernels, "w") if a.kernels else None
        for ev in prof.events():
            if ev.device_type.name != "CUDA" or not ev.name:
                continue
            us = ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
            if getattr(ev, "time_range", None) is not None:
                spans.append((ev.time_range.start, ev.time_range.end))
            if kf:
                row = {"name": ev.name, "us": us}
                if getattr(ev, "time_range", None) is not None:   # where the GPU waited
                    row["start_us"] = ev.time_range.start
                kf.write(json.dumps(row) + "\n")
            fam = families.family(ev.name)
            n, t, names = rows.get(fam, (0, 0.0, {}))
            names[ev.name] = names.get(ev.name, 0.0) + us
            rows[fam] = (n + 1, t + us, names)
            total += us
        print("census: family launches gpu_us share")
        for fam in families.FAMILIES:
            if fam in rows:
                n, t, names = rows[fam]
                print("census %-24s %6d %10.1f %5.1f%%" % (fam, n, t, 100 * t / max(total, 1e-9)))
                for nm, us in sorted(names.items(), key=lambda x: -x[1])[:6]:
                    print("census   %9.1f  %.150s" % (us, nm))
        print("census total %.1f us" % total)
        if spans:   # GPU idle inside the profiled iteration (the host slower than the GPU)
            spans.sort()
            busy, cur_s, cur_e = 0.0, spans[0][0], spans[0][1]
            for s0, e0 in spans[1:]:
                if s0 > cur_e:
                    busy += cur_e - cur_s
                    cur_s, cur_e = s0, e0
                else:
                    cur_e = max(cur_e, e0)
            busy += cur_e - cur_s
            span = max(e for _, e in spans) - spans[0][0]
            print("census span %.1f us, GPU busy %.1f us (%.0f%%)" % (span, busy,
                                                                     100 * busy / max(span, 1e-9)))
        if kf:
            kf.close()


if __name__ == "__main__":
    main()

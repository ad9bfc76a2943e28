"""The transformer of include/foundry/models.h written in plain PyTorch,
nanoGPT-style, for parity tests and benchmarks.

Parameter names are Foundry's (Hugging Face's): model.embed_tokens.weight,
model.layers.N.self_attn.q_proj.weight, ..., so a state dict moves between
the two through one safetensors file.  The config is a dict of
foundry.models.GPTConfig fields (GPTConfig.to_dict()).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _norm(cfg):
    d, eps = cfg["d_model"], cfg["norm_eps"]
    if cfg["norm"] == "rmsnorm":
        return nn.RMSNorm(d, eps=eps)
    return nn.LayerNorm(d, eps=eps)


def _head_dim(cfg):
    return cfg["head_dim"] or cfg["d_model"] // cfg["n_heads"]


def rope_tables(cfg, T, start=0, dtype=torch.float32):
    """cos, sin of shape [T, rotary_dim / 2] (no scaling), computed in
    float64 as Foundry does, then rounded."""
    hd = _head_dim(cfg)
    r = cfg["rope"]
    rd = r["rotary_dim"] or hd
    if r["scaling"] != "none":
        raise NotImplementedError("torch_gpt: rope scaling")
    inv = r["theta"] ** (-torch.arange(0, rd, 2, dtype=torch.float64) / rd)
    pos = torch.arange(start, start + T, dtype=torch.float64)
    ang = pos[:, None] * inv[None, :]
    return ang.cos().to(dtype), ang.sin().to(dtype)


def apply_rope(x, cos, sin):
    """x [B, H, T, hd] rotated in halves (HF Llama's rotate_half)."""
    rd = cos.shape[-1] * 2
    x1, x2 = x[..., :rd // 2], x[..., rd // 2:rd]
    rot = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    return torch.cat([rot, x[..., rd:]], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        D, H, Hkv, hd = (cfg["d_model"], cfg["n_heads"], cfg["n_kv_heads"],
                         _head_dim(cfg))
        b = cfg["attn_bias"]
        self.H, self.Hkv, self.hd = H, Hkv, hd
        self.q_proj = nn.Linear(D, H * hd, bias=b)
        self.k_proj = nn.Linear(D, Hkv * hd, bias=b)
        self.v_proj = nn.Linear(D, Hkv * hd, bias=b)
        self.o_proj = nn.Linear(H * hd, D, bias=b)
        self.rope = cfg["pos"] == "rope"
        self.dropout = cfg["dropout"]
        self.cfg = cfg

    def forward(self, x, start=0, cache=None):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.H, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.Hkv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.Hkv, self.hd).transpose(1, 2)
        if self.rope:
            cos, sin = rope_tables(self.cfg, T, start, x.dtype)
            q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is not None:  # a plain list [k, v] grown by concatenation
            if cache[0] is not None:
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            cache[0], cache[1] = k, v
        causal = T > 1
        if self.Hkv != self.H:
            rep = self.H // self.Hkv
            k = k.repeat_interleave(rep, dim=1)
            v = v.repeat_interleave(rep, dim=1)
        if causal and k.shape[2] != T:
            # queries at the bottom-right of the key range
            S = k.shape[2]
            mask = torch.ones(T, S, dtype=torch.bool).tril(S - T)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        else:
            y = F.scaled_dot_product_attention(
                q, k, v, is_causal=causal,
                dropout_p=self.dropout if self.training else 0.0)
        y = y.transpose(1, 2).reshape(B, T, self.H * self.hd)
        return F.dropout(self.o_proj(y), self.dropout, self.training)


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        D, ff, b = cfg["d_model"], cfg["d_ff"], cfg["mlp_bias"]
        self.kind = cfg["mlp"]
        if self.kind == "swiglu":
            self.gate_proj = nn.Linear(D, ff, bias=b)
        self.up_proj = nn.Linear(D, ff, bias=b)
        self.down_proj = nn.Linear(ff, D, bias=b)
        self.dropout = cfg["dropout"]

    def forward(self, x):
        if self.kind == "swiglu":
            h = F.silu(self.gate_proj(x)) * self.up_proj(x)
        else:
            approx = "tanh" if self.kind == "gelu_tanh" else "none"
            h = F.gelu(self.up_proj(x), approximate=approx)
        return F.dropout(self.down_proj(h), self.dropout, self.training)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = _norm(cfg)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = _norm(cfg)
        self.mlp = MLP(cfg)

    def forward(self, x, start=0, cache=None):
        x = x + self.self_attn(self.input_layernorm(x), start, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class Body(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["d_model"])
        if cfg["pos"] == "learned":
            self.embed_positions = nn.Embedding(cfg["context"],
                                                cfg["d_model"])
        self.layers = nn.ModuleList(Block(cfg) for _ in
                                    range(cfg["n_layers"]))
        self.norm = _norm(cfg)


class TorchGPT(nn.Module):
    """forward(ids) -> logits; loss(ids, targets) -> mean cross entropy."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = dict(cfg)
        self.model = Body(cfg)
        self.dropout = cfg["dropout"]
        if not cfg["tie_embeddings"]:
            self.lm_head = nn.Linear(cfg["d_model"], cfg["vocab_size"],
                                     bias=False)
        self._init(cfg)

    def _init(self, cfg):
        std = cfg["init_std"]
        res = std / math.sqrt(2 * cfg["n_layers"])
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                s = res if name.endswith(("o_proj.weight",
                                          "down_proj.weight")) else std
                nn.init.normal_(p, 0.0, s)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
            else:
                nn.init.ones_(p)

    def head_weight(self):
        if self.cfg["tie_embeddings"]:
            return self.model.embed_tokens.weight
        return self.lm_head.weight

    def forward(self, ids, caches=None, start=0):
        B, T = ids.shape
        x = self.model.embed_tokens(ids)
        if self.cfg["pos"] == "learned":
            x = x + self.model.embed_positions.weight[start:start + T]
        x = F.dropout(x, self.dropout, self.training)
        for i, layer in enumerate(self.model.layers):
            x = layer(x, start, None if caches is None else caches[i])
        x = self.model.norm(x)
        return F.linear(x, self.head_weight())

    def loss(self, ids, targets):
        logits = self(ids)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                               targets.reshape(-1), ignore_index=-100)

    def new_caches(self):
        return [[None, None] for _ in self.model.layers]

    def state_dict_for_foundry(self):
        """Parameters by name (lm_head absent when tied), contiguous."""
        return {k: v.detach().contiguous()
                for k, v in self.named_parameters()}


# ------------------------------------------------------------ safetensors
# The format is small enough to read and write here with json and numpy,
# so the reference side shares no code with Foundry's reader and needs no
# extra package.

_DT = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4"}


def save_safetensors(path, tensors, metadata=None):
    """tensors: name -> torch tensor (saved as its dtype)."""
    import json
    import numpy as np
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = dict(metadata)
    inv = {v: k for k, v in _DT.items()}
    for name in sorted(tensors):
        a = tensors[name].detach().cpu().contiguous().numpy()
        dt = inv[a.dtype.newbyteorder("<").str]
        b = a.astype(_DT[dt], copy=False).tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)


def load_safetensors(path):
    """name -> torch tensor."""
    import json
    import numpy as np
    with open(path, "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        b, en = e["data_offsets"]
        a = np.frombuffer(data[b:en], dtype=_DT[e["dtype"]])
        out[name] = torch.from_numpy(a.reshape(e["shape"]).copy())
    return out

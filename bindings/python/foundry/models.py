"""foundry.models: decoder-only transformer language models (GPT-2 and
Llama families), over the C model of include/foundry/models.h.

    cfg = foundry.models.GPTConfig.preset("gpt-tiny", vocab_size=512)
    model = foundry.models.GPT(cfg, seed=0)
    loss = model.loss(x, y)          # x, y: [B, T] int64
    loss.backward()                  # grads on model.parameters()
    model.save_pretrained("run")     # run/model.safetensors + config.json
    model = foundry.models.load("run")

A GGUF file llama.cpp reads (general.architecture "llama", e.g.
SmolLM2-135M-Instruct.Q4_1.gguf) loads with its weights quantized and
zero-copy, and its tokenizer, in Hugging Face's shape:

    model = foundry.models.load("SmolLM2-135M-Instruct.Q4_1.gguf")
    ids = model.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hi"}], add_generation_prompt=True)
    new = model.generate(ids, max_new_tokens=32)   # greedy; stops at eos
    print(model.tokenizer.decode(new, skip_special_tokens=True))
    logits = model([ids])                          # [1, T, vocab]

A GPT is an nn.Module whose parameters are the C model's own tensors,
named as Hugging Face names them ("model.layers.0.self_attn.q_proj.weight"),
so state_dict, load_state_dict and the optimizers work on it as on any
module.  It stays float32 on the CPU: .to() to another dtype or device is
refused, since the C model computes on the tensors it holds.
"""
import json
import os

from . import _c
from ._c import ffi, lib
from ._base import wrap
from ._tensor import Tensor
from .nn.module import Module, Parameter
from ._models_generate import GenerationMixin, Sampler  # noqa: F401

__all__ = ["GPTConfig", "GPT", "load"]

_POS = ("learned", "rope")
_NORM = ("layernorm", "rmsnorm")
_MLP = ("gelu_tanh", "gelu", "swiglu")
_SCALING = ("none", "linear", "dynamic", "yarn", "llama3")
_INT = ("vocab_size", "context", "d_model", "n_layers", "n_heads",
        "n_kv_heads", "head_dim", "d_ff", "bos_id", "eos_id")
_BOOL = ("attn_bias", "mlp_bias", "tie_embeddings")
_FLOAT = ("norm_eps", "dropout", "init_std")
_ENUM = {"pos": _POS, "norm": _NORM, "mlp": _MLP}
_ROPE_INT = ("head_dim", "rotary_dim", "original_max_positions")
_ROPE_BOOL = ("interleaved", "yarn_truncate")
_ROPE_FLOAT = ("theta", "factor", "attention_factor", "beta_fast",
               "beta_slow", "mscale", "mscale_all_dim", "low_freq_factor",
               "high_freq_factor")
FIELDS = _INT[:8] + ("pos", "rope", "norm", "norm_eps", "mlp") + _BOOL + \
    ("dropout", "init_std", "bos_id", "eos_id")


def _from_c(c):
    """A dict of the fields of a C tm_gpt_config."""
    d = {k: int(getattr(c, k)) for k in _INT}
    d.update({k: bool(getattr(c, k)) for k in _BOOL})
    d.update({k: float(getattr(c, k)) for k in _FLOAT})
    d.update({k: names[int(getattr(c, k))] for k, names in _ENUM.items()})
    r = c.rope
    rope = {k: int(getattr(r, k)) for k in _ROPE_INT}
    rope.update({k: bool(getattr(r, k)) for k in _ROPE_BOOL})
    rope.update({k: float(getattr(r, k)) for k in _ROPE_FLOAT})
    rope["scaling"] = _SCALING[int(r.scaling)]
    d["rope"] = rope
    return {k: d[k] for k in FIELDS}


def _enum(field, names, v):
    if isinstance(v, str):
        if v not in names:
            raise ValueError(f"GPTConfig: {field} must be one of {names}, "
                             f"not {v!r}")
        return names.index(v)
    return int(v)


class GPTConfig:
    """The model's configuration: the fields of the C tm_gpt_config (see
    include/foundry/models.h), with the enums as strings (pos "learned" |
    "rope", norm "layernorm" | "rmsnorm", mlp "gelu_tanh" | "gelu" |
    "swiglu") and `rope` a dict of the rotary settings (theta, rotary_dim,
    scaling, factor, ...).  GPTConfig(**fields) starts from the "gpt-tiny"
    preset; GPTConfig.preset(name, **overrides) from any preset."""

    def __init__(self, **fields):
        object.__setattr__(self, "_d", {})
        self._load_c(_preset_c("gpt-tiny"))
        self.update(**fields)

    def _load_c(self, c):
        self._d.update(_from_c(c))

    def update(self, **fields):
        """Sets fields; a new n_heads without n_kv_heads keeps an MHA
        config MHA (n_kv_heads follows)."""
        if "n_heads" in fields and "n_kv_heads" not in fields and \
                self._d["n_kv_heads"] == self._d["n_heads"]:
            fields = dict(fields, n_kv_heads=fields["n_heads"])
        for k, v in fields.items():
            setattr(self, k, v)
        return self

    def __getattr__(self, name):
        d = self.__dict__.get("_d", {})
        if name in d:
            return d[name]
        raise AttributeError(f"GPTConfig has no field {name!r}")

    def __setattr__(self, name, value):
        if name not in FIELDS:
            raise AttributeError(f"GPTConfig has no field {name!r} (fields: "
                                 f"{', '.join(FIELDS)})")
        if name == "rope":
            rope = dict(self._d["rope"])
            unknown = set(value) - set(rope)
            if unknown:
                raise AttributeError(f"GPTConfig.rope has no field(s) "
                                     f"{sorted(unknown)}")
            rope.update(value)
            value = rope
        self._d[name] = value

    def _c(self):
        """A new C tm_gpt_config * of these fields (not checked)."""
        c = ffi.new("tm_gpt_config *")
        d = self._d
        for k in _INT:
            setattr(c, k, int(d[k]))
        for k in _BOOL:
            setattr(c, k, bool(d[k]))
        for k in _FLOAT:
            setattr(c, k, float(d[k]))
        for k, names in _ENUM.items():
            setattr(c, k, _enum(k, names, d[k]))
        r = d["rope"]
        for k in _ROPE_INT:
            setattr(c.rope, k, int(r[k]))
        for k in _ROPE_BOOL:
            setattr(c.rope, k, bool(r[k]))
        for k in _ROPE_FLOAT:
            setattr(c.rope, k, float(r[k]))
        c.rope.scaling = _enum("rope.scaling", _SCALING, r["scaling"])
        return c

    def check(self):
        """Raises ValueError naming the field when a value is out of
        range (tm_gpt_config_check)."""
        _c.check(lib.tm_gpt_config_check(self._c()))
        return self

    @property
    def resolved_head_dim(self):
        """head_dim, or d_model // n_heads when head_dim is 0."""
        return int(lib.tm_gpt_config_head_dim(self._c()))

    @classmethod
    def preset(cls, name, **overrides):
        """A named configuration ("gpt2", "gpt2-medium", "smollm2-135m",
        "smollm2-360m", "tinyllama-1.1b", "llama3.2-1b", "llama3-8b",
        "gpt-tiny", "llama-tiny") with some fields changed."""
        cfg = cls()
        cfg._load_c(_preset_c(name))
        return cfg.update(**overrides)

    def to_dict(self):
        d = dict(self._d)
        d["rope"] = dict(d["rope"])
        return d

    @classmethod
    def from_dict(cls, d):
        return cls(**d)

    def to_json_string(self):
        """config.json text in Hugging Face's names (tm_gpt_config_to_json)."""
        p = lib.tm_gpt_config_to_json(self._c())
        if p == ffi.NULL:
            raise _c.error()
        try:
            return ffi.string(p).decode()
        finally:
            lib.free(p)

    @classmethod
    def from_json_string(cls, text):
        if isinstance(text, str):
            text = text.encode()
        c = ffi.new("tm_gpt_config *")
        _c.check(lib.tm_gpt_config_from_json(text, len(text), c))
        cfg = cls()
        cfg._load_c(c)
        return cfg

    @classmethod
    def from_json_file(cls, path):
        """A config.json written by save_pretrained, or a Hugging Face
        Llama config.json."""
        with open(path, "rb") as f:
            return cls.from_json_string(f.read())

    def __eq__(self, other):
        return isinstance(other, GPTConfig) and self._d == other._d

    def __repr__(self):
        return f"GPTConfig({json.dumps(self._d)})"


def _preset_c(name):
    c = ffi.new("tm_gpt_config *")
    _c.check(lib.tm_gpt_preset(name.encode(), c))
    return c


class _Node(Module):
    """A plain container module: one level of the Hugging Face names."""


def _ids(x, what="input_ids"):
    """x as an int64 Tensor of 2 dims (numpy arrays, lists)."""
    if isinstance(x, Tensor):
        return x
    from ._create import tensor
    import numpy as np
    return tensor(np.asarray(x, dtype=np.int64))


class GPT(GenerationMixin, Module):
    """A decoder-only transformer: GPT(config, seed=0) initialises one as
    the config says (normal(0, init_std), GPT-2's scaled residual init)
    from a generator seeded with `seed`."""

    def __init__(self, config=None, seed=0, _ptr=None):
        super().__init__()
        if _ptr is None:
            if config is None:
                config = GPTConfig()
            rng = ffi.new("tm_rng *", lib.tm_rng_new(int(seed)))
            _ptr = lib.tm_gpt_new(config._c(), rng)
            if _ptr == ffi.NULL:
                raise _c.error()
        object.__setattr__(self, "_m", ffi.gc(_ptr, lib.tm_gpt_free))
        cfg = GPTConfig()
        cfg._load_c(lib.tm_gpt_config_of(self._m))
        object.__setattr__(self, "_config", cfg)
        self._build_tree()
        Module.train(self, bool(lib.tm_gpt_training(self._m)))

    def _build_tree(self):
        ps = lib.tm_gpt_params(self._m)
        for i in range(lib.tm_params_count(ps)):
            name = ffi.string(lib.tm_params_name(ps, i)).decode()
            c = lib.tm_params_get(ps, i)
            # a quantized weight (quantize_module) is frozen: a plain Tensor
            p = object.__new__(Tensor if lib.tm_dtype_is_quantized(
                lib.tm_dtype_of(c)) else Parameter)
            p._p = lib.tm_retain(c)
            *path, leaf = name.split(".")
            node = self
            for j, part in enumerate(path):
                if part.isdigit():
                    continue
                nxt = path[j + 1] if j + 1 < len(path) else None
                child = node.__dict__.get(part)
                if nxt is not None and nxt.isdigit():
                    if child is None:
                        child = []
                        object.__setattr__(node, part, child)
                    k = int(nxt)
                    while len(child) <= k:
                        child.append(_Node())
                    node = child[k]
                else:
                    if child is None:
                        child = _Node()
                        object.__setattr__(node, part, child)
                    node = child
            object.__setattr__(node, leaf, p)

    @property
    def config(self):
        """The model's GPTConfig (a copy; head_dim resolved)."""
        return GPTConfig.from_dict(self._config.to_dict())

    # --------------------------------------------------------------- modes
    def train(self, mode=True):
        lib.tm_gpt_set_training(self._m, bool(mode))
        return super().train(mode)

    @property
    def rng_state(self):
        """Dropout's generator as (key, counter), for checkpoints."""
        r = lib.tm_gpt_rng(self._m)
        return (int(r.key), int(r.counter))

    @rng_state.setter
    def rng_state(self, state):
        key, counter = state
        r = ffi.new("tm_rng *")
        r.key, r.counter = int(key), int(counter)
        _c.check(lib.tm_gpt_set_rng(self._m, r[0]))

    def to(self, *args, **kwargs):
        from .nn.module import _to_args
        dev, dt = _to_args(args, dict(kwargs))
        if (dev is not None and str(dev) != "cpu") or \
                (dt is not None and dt != _c.float32):
            raise NotImplementedError("GPT runs in float32 on the CPU; "
                                      ".to() another dtype or device is "
                                      "not supported")
        return self

    # ------------------------------------------------------------- compute
    def _fwd_opts(self, cache=None, last_only=False):
        o = ffi.new("tm_gpt_fwd_opts *")
        o.cache = ffi.NULL if cache is None else getattr(cache, "_p", cache)
        o.last_only = bool(last_only)
        return o

    def forward(self, input_ids, cache=None, last_only=False):
        """Logits [B, T, V] (float32) of input_ids [B, T] (int64/int32).
        cache: a KV cache from new_cache (positions continue after its
        length); last_only: only the last position's logits, [B, 1, V]."""
        ids = _ids(input_ids)
        return wrap(lib.tm_gpt_forward(self._m, ids._p,
                                       self._fwd_opts(cache, last_only)))

    def loss(self, input_ids, targets, return_logits=False):
        """Mean cross entropy of the next-token targets [B, T] (-100 is
        ignored), fused with the output head; with return_logits, the pair
        (loss, logits)."""
        ids, tg = _ids(input_ids), _ids(targets, "targets")
        out = ffi.new("tm_tensor **")
        p = lib.tm_gpt_loss(self._m, ids._p, tg._p,
                            out if return_logits else ffi.NULL)
        loss = wrap(p)
        return (loss, wrap(out[0])) if return_logits else loss

    def new_cache(self, batch=1, max_len=None, dtype=None):
        """A raw C KV cache (tm_kv_cache *) sized for this model, freed
        with the returned object."""
        max_len = self._config.context if max_len is None else max_len
        dt = _c.float32 if dtype is None else dtype
        from ._base import to_dtype
        p = lib.tm_gpt_cache_new(self._m, batch, max_len, to_dtype(dt).c)
        if p == ffi.NULL:
            raise _c.error()
        return _Cache(ffi.gc(p, lib.tm_kv_cache_free))

    def evaluate(self, dataset, split="val", batch_size=8, block_size=None,
                 max_batches=0, progress=None):
        """Mean loss (nats/token), perplexity, bits per byte and accuracy
        over a split ("all", "train", "val") of a foundry.data.TokenDataset,
        in windows of block_size + 1 tokens (default: the context), without
        grad and with dropout off (tm_gpt_evaluate).  progress: a
        foundry.progress.tqdm (or None).  Returns a dict."""
        from .data import _split
        T = self._config.context if block_size is None else int(block_size)
        r = ffi.new("tm_eval_result *")
        bar = ffi.NULL if progress is None else progress._h()
        _c.check(lib.tm_gpt_evaluate(self._m, dataset._h(), _split(split),
                                     int(batch_size), T, int(max_batches),
                                     bar, r))
        return {"loss": r.mean_loss, "perplexity": r.perplexity,
                "bits_per_byte": r.bits_per_byte, "accuracy": r.accuracy,
                "tokens": int(r.tokens)}

    # ------------------------------------------------------------------ io
    def save_pretrained(self, directory):
        """directory/model.safetensors (Hugging Face names) and
        directory/config.json."""
        _c.check(lib.tm_gpt_save(self._m, str(directory).encode()))

    @classmethod
    def from_pretrained(cls, directory):
        """A model from a directory of save_pretrained or a Hugging Face
        Llama checkpoint (config.json + model.safetensors), in eval
        mode."""
        p = lib.tm_gpt_load(str(directory).encode())
        if p == ffi.NULL:
            raise _c.error()
        return cls(_ptr=p)

    @classmethod
    def from_gguf(cls, path):
        """A model from a GGUF file (tm_model_load_gguf): llama.cpp's
        "llama" architecture or Foundry's own "foundry_gpt", in eval mode.
        Its .tokenizer comes from the same file (loaded on first use), its
        generate() is greedy unless do_sample=True (Hugging Face's
        default) and stops at the file's eos token."""
        p = lib.tm_model_load_gguf(os.fsencode(str(path)))
        if p == ffi.NULL:
            raise _c.error()
        m = cls(_ptr=p)
        # Its matrices are quantized and frozen: the few dense ones (the
        # norms) are frozen too, so model(ids) gives plain logits.
        m.requires_grad_(False)
        object.__setattr__(m, "_gguf_path", str(path))
        object.__setattr__(m, "_do_sample_default", False)
        eos = m._config.eos_id
        object.__setattr__(m, "_default_stop", [eos] if eos >= 0 else None)
        return m

    @property
    def tokenizer(self):
        """The tokenizer of a model loaded from a GGUF file
        (foundry.tokenizers.PreTrainedTokenizer.from_gguf of that file;
        loaded on first use), else None."""
        tok = self.__dict__.get("_tokenizer")
        path = self.__dict__.get("_gguf_path")
        if tok is None and path is not None:
            from .tokenizers import PreTrainedTokenizer
            tok = PreTrainedTokenizer.from_gguf(path)
            object.__setattr__(self, "_tokenizer", tok)
        return tok

    def num_parameters(self):
        return int(lib.tm_params_numel(lib.tm_gpt_params(self._m)))

    def extra_repr(self):
        c = self._config
        return (f"d_model={c.d_model}, n_layers={c.n_layers}, "
                f"n_heads={c.n_heads}, n_kv_heads={c.n_kv_heads}, "
                f"vocab_size={c.vocab_size}, pos={c.pos}, norm={c.norm}, "
                f"mlp={c.mlp}")


class _Cache:
    """Owns a C tm_kv_cache (its pointer in ._p)."""

    def __init__(self, p):
        self._p = p

    def __len__(self):
        return int(lib.tm_kv_cache_length(self._p, 0))

    def reset(self):
        _c.check(lib.tm_kv_cache_reset(self._p))

    def truncate(self, n):
        _c.check(lib.tm_kv_cache_truncate(self._p, int(n)))


def load(path):
    """A model: GPT.from_gguf for a .gguf file, else
    GPT.from_pretrained(path) (a directory)."""
    if str(path).endswith(".gguf") and os.path.isfile(str(path)):
        return GPT.from_gguf(path)
    return GPT.from_pretrained(path)

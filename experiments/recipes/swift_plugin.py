"""swiftbench's plugin for ms-swift: what the recommended recipes need that `swift sft` flags cannot say.

    swift sft ... --external_plugins "$(swiftbench plugin || echo swiftbench-not-installed)" [--callbacks NAME ...]

ms-swift imports this file (`--external_plugins`, BaseArguments.__post_init__) while it reads the arguments, before it
checks them. Importing it does one thing; each name given to `--callbacks` (ms-swift's callbacks registry) switches on
one more. The file is self-contained (torch, transformers and ms-swift only), so it also works copied on its own.
Stays whole: `--external_plugins` takes files, and a user copies this one alone (`swiftbench plugin --copy DIR`).

On import
    padding_free with SDPA, eager or flex attention. ms-swift 4.x refuses `--padding_free` unless `--attn_impl` is a
    flash-attention one (SftArguments._check_padding_free). transformers >= 4.54 builds a block-diagonal causal mask
    from a packed row's position_ids for sdpa, eager and flex_attention (masking_utils.find_packed_sequence_indices),
    so each sample attends only to itself, as when padded. The check is relaxed only where that function exists.

--callbacks
    sdpa_no_cudnn    SDPA may pick flash, memory-efficient or math kernels, not cuDNN's: cuDNN builds an execution
                     graph for every new shape, and a packed row's length changes every step.
    pad_buckets      In training, a packed row is padded up to the next multiple of SWIFTBENCH_PAD_MULTIPLE tokens
                     (default 1024) with labels -100 and position id 0 (each pad token a one-token sequence of its
                     own): a few fixed shapes instead of a new one every step. Adds no loss term; the tokens each
                     step trains on are unchanged.
    compile_layers   torch.compile of each decoder layer (static shapes: one graph per row length, shared by the
                     layers); evaluation runs eager. The inductor cache is kept in SWIFTBENCH_COMPILE_CACHE (default
                     ~/.cache/swiftbench/inductor), so a later run on the same host loads the compiled code.
                     Before compiling it loads the compiled code of an earlier run (torch.compiler's cache artifacts):
                     SWIFTBENCH_COMPILE_ARTIFACTS (a file; `none` for none), else the file shipped beside this plugin
                     for this GPU architecture and torch/Triton (compile_cache/<sm..>-torch<..>-triton<..>.bin, or
                     .bin.gz). A run that compiled writes its artifacts to the inductor cache's artifacts/ folder (that
                     file name). With SWIFTBENCH_STEP1_STACKS=1 it prints where step 1's time went (every thread's
                     stack sampled each 20 ms until step 1 ends). Where the command line names it, importing the
                     plugin starts inductor's compile workers (SWIFTBENCH_WARM_POOL=0: torch starts them at the
                     first compile, in step 1).
    compile_dynamic  compile_layers with the row length symbolic: one graph for every length, so rows need no padding
                     (no pad_buckets); evaluation runs eager, as with compile_layers. A training row shorter than
                     MIN_DYNAMIC_ROW tokens (an epoch's last batch of one or two samples) is padded up to it, as
                     pad_buckets pads: torch.compile specialises a dimension of size 1 even when dynamic, and such a
                     row's FlexAttention block mask has one 128-token block, which cost a second compile (28.7 s on an
                     H100, results/calls/2026-12-07-call24).
    liger_loss_only  With --use_liger_kernel true, only Liger's fused linear cross-entropy (no logits tensor), not
                     its RoPE, RMSNorm and SwiGLU kernels, which cut the compiled layers into pieces.
    liger_config     With --use_liger_kernel true, the kernels SWIFTBENCH_LIGER_CONFIG names (a JSON object of
                     booleans, transformers' liger_kernel_config, e.g. '{"fused_linear_cross_entropy": false}'):
                     ms-swift's command line cannot pass that dict.
    no_host_sync     ms-swift checks the gradient norm for NaN with .item() after every step, which makes the host
                     wait for the GPU. This makes the same check on the GPU: a non-finite norm skips the optimizer
                     update through the fused optimizer's found_inf (needs --optim adamw_torch_fused). Two more waits
                     go: transformers' check whether a row holds one sequence or several (.all() on the GPU; the
                     packed-row mask is used either way, the same mask for one sequence) and ms-swift's training
                     token accuracy (argmax copied to the host every step; evaluation still reports it). And the
                     training batch is copied to the GPU without waiting (ms-swift 4.6.0 trains from its own
                     DataLoaderShard, whose copies block whatever --accelerator_config says: a blocking copy waits for
                     the GPU to finish the step before, every step; the batch is in pinned memory, so the copy is a
                     true async one). It says
                     which waits it cannot remove: --use_logits_to_keep (a boolean index of the labels every step) and
                     Liger's fused linear cross-entropy (.item() on the label count).
    sync_debug       Prints the Python stack of each distinct call that makes the host wait for the GPU in the
                     optimizer steps SWIFTBENCH_SYNC_DEBUG names (e.g. 20-21; torch.cuda.set_sync_debug_mode).
"""
from __future__ import annotations

import contextlib
import gc
import gzip
import os
import time
from pathlib import Path

CACHE_ENV = "SWIFTBENCH_COMPILE_CACHE"
PAD_ENV = "SWIFTBENCH_PAD_MULTIPLE"
LIGER_ENV = "SWIFTBENCH_LIGER_CONFIG"
SYNC_ENV = "SWIFTBENCH_SYNC_DEBUG"
ARTIFACTS_ENV = "SWIFTBENCH_COMPILE_ARTIFACTS"
STEP1_ENV = "SWIFTBENCH_STEP1_STACKS"
WARM_ENV = "SWIFTBENCH_WARM_POOL"
COMPILING = ("compile_layers", "compile_dynamic")
SHIPPED_CACHE = Path(__file__).with_name("compile_cache")  # compiled code shipped beside the plugin
DEFAULT_PAD_MULTIPLE = 1024
MIN_DYNAMIC_ROW = 256  # two of FlexAttention's 128-token blocks: no mask dimension of size 1
RECOMPILE_LIMIT = 64  # graphs per compiled layer: one per row length (and grad mode); dynamo's default is 8


def _log(text: str) -> None:
    print(f"swiftbench plugin: {text}", flush=True)


# ------------------------------------------------------------------------------------------------ on import


def allow_sdpa_padding_free() -> bool:
    """Accept --padding_free / --packing with sdpa, eager or flex attention where transformers masks packed rows."""
    from swift.arguments import SftArguments
    from transformers import masking_utils

    if not hasattr(masking_utils, "find_packed_sequence_indices"):
        _log("this transformers has no packed-sequence masks: padding_free still needs flash attention")
        return False
    if getattr(SftArguments._check_padding_free, "_swiftbench", False):
        return True  # imported twice (a dataloader worker replays the import)
    orig = SftArguments._check_padding_free

    def _check_padding_free(self):
        if (self.padding_free or self.packing) and self.attn_impl in (None, "sdpa", "eager", "flex_attention"):
            if self.packing:
                self.padding_free = True
            return None
        return orig(self)

    _check_padding_free._swiftbench = True  # type: ignore[attr-defined]
    SftArguments._check_padding_free = _check_padding_free
    return True


# ------------------------------------------------------------------------------------------------ callbacks


def default_cache_dir() -> Path:
    """Where compile_layers keeps the inductor cache (SWIFTBENCH_COMPILE_CACHE, else ~/.cache/swiftbench/inductor)."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "swiftbench" / "inductor")


def inductor_cache_dir() -> Path:
    """The inductor cache compile_layers uses: TORCHINDUCTOR_CACHE_DIR where the user set it, else ours. torch sets
    that variable to its own default under /tmp on first use, which a reboot empties: that one is replaced."""
    current = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if current and not os.environ.get(CACHE_ENV):
        try:
            from torch._inductor.runtime.cache_dir_utils import default_cache_dir as torch_default
        except ImportError:
            return Path(current)
        if Path(current) != Path(torch_default()):
            return Path(current)
    return default_cache_dir()


def cache_file_count(folder: Path) -> int:
    """The files in an inductor cache folder (0 where it does not exist): 0 is a cold run, more a warm one."""
    return sum(1 for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else 0


def artifacts_name(torch) -> str:
    """The artifacts file of this GPU architecture and torch/Triton build: compiled code loads only where all three
    match (a mismatched file is harmless, its entries are never hit, but it is not loaded)."""
    arch = "cpu"
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        arch = f"sm{major}{minor}"
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = "none"
    return f"{arch}-torch{torch.__version__}-triton{triton_version}.bin"


def artifacts_to_load(torch) -> Path | None:
    """SWIFTBENCH_COMPILE_ARTIFACTS where set (it must exist; `none`: no file), else the shipped file of this build
    (as saved, or gzipped: a seventh of the size), else None."""
    named = os.environ.get(ARTIFACTS_ENV)
    if named == "none":  # a cold compile on purpose: no file, not even the shipped one
        return None
    if named:
        path = Path(named)
        if not path.is_file():
            raise ValueError(f"{ARTIFACTS_ENV}={named!r}: no such file")
        return path
    shipped = SHIPPED_CACHE / artifacts_name(torch)
    return next((p for p in (shipped, shipped.with_name(shipped.name + ".gz")) if p.is_file()), None)


def pad_multiple() -> int:
    text = os.environ.get(PAD_ENV, str(DEFAULT_PAD_MULTIPLE))
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{PAD_ENV}={text!r}: a whole number of tokens, e.g. 1024") from None
    if value < 1:
        raise ValueError(f"{PAD_ENV}={text!r}: must be >= 1")
    return value


def liger_config() -> dict:
    """SWIFTBENCH_LIGER_CONFIG as a dict of booleans (transformers' liger_kernel_config)."""
    import json

    text = os.environ.get(LIGER_ENV, "")
    try:
        cfg = json.loads(text)
    except ValueError:
        cfg = None
    if not isinstance(cfg, dict) or not all(isinstance(v, bool) for v in cfg.values()):
        raise ValueError(f"{LIGER_ENV}={text!r}: a JSON object of booleans, e.g. "
                         '{"fused_linear_cross_entropy": false, "cross_entropy": true}')
    return cfg


def bucket_length(tokens: int, multiple: int) -> int:
    """The row length a packed row of TOKENS tokens is padded to: the next multiple of MULTIPLE (at least one)."""
    return max(1, -(-tokens // multiple)) * multiple


def min_row_length(tokens: int, minimum: int) -> int | None:
    """The length a packed row of TOKENS tokens is padded to under compile_dynamic: MINIMUM where it is shorter, else
    None (left as it is)."""
    return minimum if tokens < minimum else None


class _RowPadCollator:
    """ms-swift's collator with the packed row padded up to padded_length(its tokens) (a class, not a closure:
    dataloader workers may receive it pickled)."""

    def __init__(self, collator):
        self.collator = collator

    def padded_length(self, tokens: int) -> int | None:
        raise NotImplementedError

    def __call__(self, batch):
        return self.collator(batch, padding_to=self.padded_length(sum(len(b["input_ids"]) for b in batch)))


class BucketCollator(_RowPadCollator):
    """Rows padded up to bucket_length (pad_buckets)."""

    def __init__(self, collator, multiple: int):
        super().__init__(collator)
        self.multiple = multiple

    def padded_length(self, tokens: int) -> int | None:
        return bucket_length(tokens, self.multiple)


class MinRowCollator(_RowPadCollator):
    """A row shorter than MINIMUM tokens padded up to MINIMUM (compile_dynamic)."""

    def __init__(self, collator, minimum: int):
        super().__init__(collator)
        self.minimum = minimum

    def padded_length(self, tokens: int) -> int | None:
        return min_row_length(tokens, self.minimum)


def wrap_train_collator(trainer, wrap) -> None:
    """The training loader's collator wrapped by WRAP (collator -> collator); evaluation rows stay as they are."""
    get_train_dataloader = trainer.get_train_dataloader

    def train_loader(*a, **kw):
        collator = trainer.data_collator
        trainer.data_collator = wrap(collator)
        try:
            return get_train_dataloader(*a, **kw)
        finally:
            trainer.data_collator = collator

    trainer.get_train_dataloader = train_loader


_NONBLOCKING: dict[type, type] = {}


def _nonblocking_shard(cls: type) -> type:
    """ms-swift's DataLoaderShard (swift/dataloader/shard.py: each batch through swift.utils.to_device, blocking) as a
    subclass whose batches go through the same function with non_blocking=True."""
    if cls not in _NONBLOCKING:
        def __iter__(self):
            from swift.utils import to_device
            from torch.utils.data import DataLoader

            for item in DataLoader.__iter__(self):
                yield to_device(item, self.device, non_blocking=True) if self.device else item

        _NONBLOCKING[cls] = type(cls.__name__, (cls,), {"__iter__": __iter__, "__module__": __name__})
    return _NONBLOCKING[cls]


def nonblocking_train_loader(trainer) -> None:
    """The training loader's host-to-GPU batch copies made non-blocking where its batches are pinned: ms-swift's own
    DataLoaderShard (the loader of ms-swift 4.6.0's training) or accelerate's (`_non_blocking`, which ms-swift never
    sets). A loader of any other kind is left as it is."""
    get_train_dataloader = trainer.get_train_dataloader

    def train_loader(*a, **kw):
        loader = get_train_dataloader(*a, **kw)
        if not getattr(loader, "pin_memory", False):
            return loader
        if hasattr(loader, "_non_blocking"):
            loader._non_blocking = True
        elif type(loader).__module__ == "swift.dataloader.shard" and type(loader).__name__ == "DataLoaderShard":
            loader.__class__ = _nonblocking_shard(type(loader))
        return loader

    trainer.get_train_dataloader = train_loader


def decoder_layers(model) -> list:
    """The model's repeated decoder blocks: the modules whose class transformers names in `_no_split_modules`."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    names = set(getattr(base, "_no_split_modules", None) or [])
    return [m for m in base.modules() if type(m).__name__ in names]


try:
    from transformers import TrainerCallback as _HfCallback
except ImportError:  # read without transformers (a package test of the file alone): no callbacks to build
    _HfCallback = object  # type: ignore[misc,assignment]


class _Callback(_HfCallback):  # type: ignore[misc,valid-type]
    """ms-swift's callback shape: built with (args, trainer) by `--callbacks NAME` (swift.callbacks.TrainerCallback)."""

    def __init__(self, args, trainer):
        self.args = args
        self.trainer = trainer


class SdpaNoCudnn(_Callback):
    def __init__(self, args, trainer):
        super().__init__(args, trainer)
        import torch

        torch.backends.cuda.enable_cudnn_sdp(False)
        _log("sdpa_no_cudnn: cuDNN attention off (flash, memory-efficient, math remain)")


class PadBuckets(_Callback):
    def __init__(self, args, trainer):
        super().__init__(args, trainer)
        multiple = pad_multiple()
        if not trainer.template.padding_free:
            _log("pad_buckets: no effect without --padding_free true")
            return
        wrap_train_collator(trainer, lambda collator: BucketCollator(collator, multiple))
        _log(f"pad_buckets: training rows padded to multiples of {multiple} tokens")


class GcClock:
    """Python's cyclic garbage collections, counted and timed per generation (gc.callbacks), in the whole training and
    in its steps after the second: a compiled run's steady step was 40 ms longer after a compile in the same process
    than on a warm cache (results/calls/2026-12-07-call25), and a collector scanning the compile's objects each time
    is one candidate."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self.mark: tuple[list[int], list[float], int] | None = None  # at the end of step 2, and the objects tracked
        self._t: float | None = None

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t = time.perf_counter()
        elif self._t is not None:
            g = int(info.get("generation", 2))
            self.count[g] += 1
            self.seconds[g] += time.perf_counter() - self._t
            self._t = None

    def start(self) -> None:
        gc.callbacks.append(self)

    def at_step(self, step: int) -> None:
        if step == 2 and self.mark is None:
            self.mark = (list(self.count), list(self.seconds), len(gc.get_objects()))

    def stop(self) -> str:
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self)

        def gens(count: list[int], secs: list[float]) -> str:
            return ", ".join(f"gen{g} {count[g]} in {secs[g]:.2f} s" for g in range(3))

        text = f"whole training: {gens(self.count, self.seconds)}"
        if self.mark is not None:
            c0, s0, objects = self.mark
            text += (f"; after step 2 ({objects} objects tracked then): "
                     f"{gens([a - b for a, b in zip(self.count, c0)], [a - b for a, b in zip(self.seconds, s0)])}")
        return text


class Step1Stacks:
    """Where the first optimizer step's time goes in a compiled run (47-61 s with every FX graph a cache hit, 38 s of
    it inside inductor's PyCodeCache.load_by_key_path by dynamo's own clock; results/calls/2026-12-07-call29): every
    thread's Python stack sampled each INTERVAL_S from the start of training to the end of step 1, each function on a
    stack counted once per sample (inclusive, so a wait in a subprocess shows under the code that started it)."""

    def __init__(self, interval_s: float = 0.02, top: int = 25) -> None:
        import threading

        self.interval_s, self.top = interval_s, top
        self._keys: dict = {}
        self.rounds = 0
        self.inclusive: dict[int, dict[str, int]] = {}  # by thread id
        self.leaf: dict[int, dict[str, int]] = {}
        self.samples: dict[int, int] = {}
        self.names: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="swiftbench-step1-stacks", daemon=True)
        self.t0 = 0.0

    def _key(self, frame) -> str:
        """FILE's last two parts:FUNCTION, made once per code object (a sample holds the GIL: keep it short)."""
        code = frame.f_code
        key = self._keys.get(code)
        if key is None:
            parts = Path(code.co_filename).parts
            key = self._keys[code] = f"{'/'.join(parts[-2:])}:{code.co_name}"
        return key

    def sample(self, frames: dict, names: dict) -> None:
        """One round: FRAMES (sys._current_frames()) by thread id, NAMES thread id -> name."""
        import threading

        self.rounds += 1
        for tid, frame in frames.items():
            if tid == threading.get_ident():
                continue
            self.names.setdefault(tid, names.get(tid, f"native {tid:#x}"))
            inc = self.inclusive.setdefault(tid, {})
            leaf = self.leaf.setdefault(tid, {})
            self.samples[tid] = self.samples.get(tid, 0) + 1
            key = self._key(frame)
            leaf[key] = leaf.get(key, 0) + 1
            seen = set()
            f = frame
            while f is not None:
                key = self._key(f)
                if key not in seen:
                    seen.add(key)
                    inc[key] = inc.get(key, 0) + 1
                f = f.f_back

    def _run(self) -> None:
        import sys
        import threading

        while not self._stop.wait(self.interval_s):
            names = {t.ident: ("main" if t is threading.main_thread() else t.name) for t in threading.enumerate()}
            self.sample(sys._current_frames(), names)

    def start(self) -> None:
        self.t0 = time.perf_counter()
        self._thread.start()

    def stop(self) -> list[str]:
        """The report: per thread seen in at least a tenth of the rounds, its top functions by share of the rounds."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        return self.report(time.perf_counter() - self.t0)

    def report(self, wall_s: float) -> list[str]:
        """Per thread seen in a tenth of the rounds or more, and not in one stack all along: the functions on its stack
        by share of the rounds, less those on it in every one of its samples (the thread's frame, the training loop),
        and its innermost frames."""
        rounds = max(self.rounds, 1)
        out = [f"{self.rounds} samples over {wall_s:.1f} s (every {self.interval_s * 1000:.0f} ms asked)"]
        for tid, inc in sorted(self.inclusive.items(), key=lambda kv: -self.samples[kv[0]]):
            n = self.samples[tid]
            if n < rounds / 10:
                continue
            name = self.names[tid] if list(self.names.values()).count(self.names[tid]) == 1 else f"{self.names[tid]} " \
                f"{tid:#x}"
            top = sorted(((k, c) for k, c in inc.items() if c < n), key=lambda kv: -kv[1])[:self.top]
            if not top:  # one stack all along: a thread that waited the whole time
                continue
            always = sum(1 for c in inc.values() if c >= n)
            out.append(f"thread {name} ({n / rounds:.0%} of the rounds; {always} functions on every sample left "
                       "out): " + "; ".join(f"{k} {c / rounds:.0%}" for k, c in top))
            leaves = sorted(self.leaf[tid].items(), key=lambda kv: -kv[1])[:8]
            out.append(f"thread {name}: innermost " + "; ".join(f"{k} {c / rounds:.0%}" for k, c in leaves))
        return out


class CompileLayers(_Callback):
    dynamic = False  # static shapes: one graph per row length (pad_buckets keeps the lengths few)

    def __init__(self, args, trainer):
        super().__init__(args, trainer)
        import torch
        import torch._dynamo
        import torch._inductor.config as inductor_config

        cache = inductor_cache_dir()
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
        cache.mkdir(parents=True, exist_ok=True)
        inductor_config.fx_graph_cache = True
        with contextlib.suppress(ImportError, AttributeError):
            import torch._functorch.config as functorch_config

            functorch_config.enable_autograd_cache = True
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, RECOMPILE_LIMIT)
        self.compiled = 0
        self.gc_clock = GcClock()
        self.step1: Step1Stacks | None = None
        self.frozen = False
        self.torch = torch
        files = cache_file_count(cache)
        _log(f"{self.name}: inductor cache {cache} ({files} files before this run)")
        self._load_artifacts()
        evaluate = trainer.evaluate

        def eager_evaluate(*a, **kw):  # no grad: a graph of its own (a cold compile) for one or two batches
            with torch.compiler.set_stance("force_eager"):
                return evaluate(*a, **kw)

        trainer.evaluate = eager_evaluate

    @property
    def name(self) -> str:
        return "compile_dynamic" if self.dynamic else "compile_layers"

    def _load_artifacts(self) -> Path | None:
        path = artifacts_to_load(self.torch)
        if path is None:
            return None
        data = path.read_bytes()
        info = self.torch.compiler.load_cache_artifacts(gzip.decompress(data) if path.suffix == ".gz" else data)
        kinds = {k: len(v) for k, v in getattr(info, "artifacts", {}).items()}
        _log(f"{self.name}: compiled code loaded from {path} ({path.stat().st_size} bytes; {kinds})")
        return path

    def cache_counts(self) -> dict:
        """torch's counts of compiled-code cache hits and misses in this process (inductor's FX graph cache, AOT
        autograd's cache): whether a loaded file or a warm cache spared the compile, said by the run itself."""
        try:
            from torch._dynamo.utils import counters
        except ImportError:
            return {}
        return {k: v for group in ("inductor", "aot_autograd") for k, v in sorted(counters[group].items())
                if "cache" in k}

    def on_train_end(self, args, state, control, **kwargs):
        """The compiled code of this run as one file (torch.compiler.save_cache_artifacts), for another host."""
        if self.step1 is not None:  # training ended before step 1 did
            self.step1.stop()
            self.step1 = None
        if not self.compiled:
            return
        _log(f"{self.name}: compiled-code caches {self.cache_counts()}")
        _log(f"{self.name}: Python's garbage collections: {self.gc_clock.stop()}")
        with contextlib.suppress(Exception):  # dynamo's own per-phase compile seconds, where this torch has them
            from torch._dynamo.utils import compile_times

            _log(f"{self.name}: {compile_times(repr='str', aggregate=True)}")
        saved = self.torch.compiler.save_cache_artifacts()
        if not saved:
            return
        data, info = saved
        out = inductor_cache_dir() / "artifacts" / artifacts_name(self.torch)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(out)
        kinds = {k: len(v) for k, v in getattr(info, "artifacts", {}).items()}
        _log(f"{self.name}: compiled code saved to {out} ({len(data)} bytes; {kinds})")

    def on_step_end(self, args, state, control, **kwargs):
        self.gc_clock.at_step(state.global_step)
        if state.global_step >= 2 and self.compiled and not self.frozen:
            # the compile's ~845k objects live as long as the process: out of the collector's scans (each full
            # collection over them took 0.45-0.6 s inside a training step, twice an epoch: call 29's runs); collected
            # first, so that no garbage cycle of the compile is frozen with them (frozen garbage is never freed)
            gc.collect()
            gc.freeze()
            self.frozen = True
        if self.step1 is not None and state.global_step >= 1:
            for line in self.step1.stop():
                _log(f"{self.name}: step 1 stacks: {line}")
            self.step1 = None

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        if self.compiled or model is None:
            return
        layers = decoder_layers(model)
        # The first layer's input (the frozen embedding's output) needs no gradient, every other layer's does: two
        # graphs, each compiled forward and backward. Asking a gradient of the embedding output makes it one graph;
        # the LoRA gradients are the same, the extra one is dropped (the embedding is frozen).
        same_input = hasattr(model, "enable_input_require_grads") and not getattr(args, "gradient_checkpointing", False)
        if same_input:
            model.enable_input_require_grads()
        for layer in layers:
            layer.compile(dynamic=self.dynamic)
        self.compiled = len(layers)
        self.gc_clock.start()
        if os.environ.get(STEP1_ENV, "").strip() not in ("", "0"):
            self.step1 = Step1Stacks()
            self.step1.start()
        kind = type(layers[0]).__name__ if layers else "-"
        shapes = "row length symbolic" if self.dynamic else "static shapes"
        first = "; the embedding output asks a gradient, so the first layer shares the graph" if same_input else ""
        _log(f"{self.name}: {len(layers)} decoder layers compiled ({kind}, {shapes}){first}")


class CompileDynamic(CompileLayers):
    dynamic = True

    def __init__(self, args, trainer):
        super().__init__(args, trainer)
        if getattr(getattr(trainer, "template", None), "padding_free", False):
            wrap_train_collator(trainer, lambda collator: MinRowCollator(collator, MIN_DYNAMIC_ROW))
            _log(f"{self.name}: training rows shorter than {MIN_DYNAMIC_ROW} tokens padded to {MIN_DYNAMIC_ROW}")


class LigerLossOnly(_Callback):
    def __init__(self, args, trainer):
        super().__init__(args, trainer)
        # transformers' Trainer applies Liger in train() with args.liger_kernel_config, after this runs
        args.liger_kernel_config = {**(getattr(args, "liger_kernel_config", None) or {}),
                                    "rope": False, "rms_norm": False, "swiglu": False,
                                    "fused_linear_cross_entropy": True}
        _log("liger_loss_only: Liger's fused linear cross-entropy only")


class LigerConfig(_Callback):
    def __init__(self, args, trainer):
        super().__init__(args, trainer)
        cfg = liger_config()
        args.liger_kernel_config = {**(getattr(args, "liger_kernel_config", None) or {}), **cfg}
        _log(f"liger_config: {cfg}")


def packed_sequence_indices_no_sync(masking_utils):
    """transformers' find_packed_sequence_indices without its `.all()` test for a row of one sequence (a host wait
    every forward): the sequence-index tensor is returned either way; for one sequence it is all zeros, the same
    mask."""
    orig = masking_utils.find_packed_sequence_indices
    if getattr(orig, "_swiftbench", False):
        return orig
    import torch

    def find_packed_sequence_indices(position_ids):
        first = position_ids[:, :1] - 1
        return (torch.diff(position_ids, prepend=first, dim=-1) != 1).cumsum(-1)

    find_packed_sequence_indices._swiftbench = True  # type: ignore[attr-defined]
    find_packed_sequence_indices.original = orig  # type: ignore[attr-defined]
    return find_packed_sequence_indices


class NoHostSync(_Callback):
    def __init__(self, args, trainer):
        super().__init__(args, trainer)
        import torch
        from transformers import masking_utils

        optim = getattr(args, "optim", "")
        optim = str(getattr(optim, "value", optim))
        if "fused" not in optim:
            raise ValueError(f"--callbacks no_host_sync needs --optim adamw_torch_fused (got {optim!r}): only a "
                             "fused optimizer can skip a step on the GPU (found_inf)")
        trainer._fix_grad_norm_nan = contextlib.nullcontext  # ms-swift's check: .item() on the norm every step
        clip = trainer._clip_grad_norm

        def _clip_grad_norm(model):
            norm = clip(model)
            if isinstance(norm, torch.Tensor):
                opt = trainer.optimizer
                opt = getattr(opt, "optimizer", opt)  # accelerate's AcceleratedOptimizer wraps it
                opt.found_inf = (~torch.isfinite(norm)).float().reshape(())
            return norm

        trainer._clip_grad_norm = _clip_grad_norm
        if hasattr(masking_utils, "find_packed_sequence_indices"):
            masking_utils.find_packed_sequence_indices = packed_sequence_indices_no_sync(masking_utils)
        compute_acc = getattr(trainer, "_compute_acc", None)
        if compute_acc is not None:
            def _compute_acc(*a, **kw):  # training token accuracy copies the argmax to the host every step
                if not trainer.model.training:
                    return compute_acc(*a, **kw)
                return None

            trainer._compute_acc = _compute_acc
        nonblocking_train_loader(trainer)
        _log("no_host_sync: non-finite gradient norms skip the update on the GPU (fused optimizer's found_inf); "
             "packed rows masked without a host test; no training token accuracy; training batches copied to the GPU "
             "without a wait (pinned)")
        for why in remaining_syncs(args):
            _log(f"no_host_sync: still waits every step: {why}")


def remaining_syncs(args) -> list[str]:
    """The per-step host waits no_host_sync leaves, from the run's own flags."""
    out = []
    if getattr(args, "use_logits_to_keep", None) is not False:
        out.append("--use_logits_to_keep (labels indexed by a boolean mask); pass --use_logits_to_keep false")
    cfg = getattr(args, "liger_kernel_config", None) or {}
    if getattr(args, "use_liger_kernel", False) and cfg.get("fused_linear_cross_entropy", True):
        out.append("Liger's fused linear cross-entropy (.item() on the label count)")
    return out


def sync_debug_steps() -> range:
    """SWIFTBENCH_SYNC_DEBUG as a range of optimizer steps ('20-21', or '20')."""
    text = os.environ.get(SYNC_ENV, "").strip()
    first, _, last = text.partition("-")
    try:
        lo, hi = int(first), int(last or first)
    except ValueError:
        raise ValueError(f"{SYNC_ENV}={text!r}: optimizer steps, e.g. 20-21") from None
    if lo < 1 or hi < lo:
        raise ValueError(f"{SYNC_ENV}={text!r}: steps from 1, first <= last")
    return range(lo, hi + 1)


class SyncDebug(_Callback):
    """Each distinct stack that waits on the GPU in the chosen steps, printed once with how often it waited."""

    MESSAGE = ".*synchroniz.*"

    def __init__(self, args, trainer):
        super().__init__(args, trainer)
        import torch

        self.steps = sync_debug_steps()
        self.seen: dict[str, int] = {}
        self.on = False
        self._show = None
        if not torch.cuda.is_available():
            self.steps = range(0)
            _log("sync_debug: no CUDA device, no host waits to print")
            return
        _log(f"sync_debug: host waits in steps {self.steps.start}-{self.steps.stop - 1} are printed")

    def _hook(self, message, category, filename, lineno, file=None, line=None):
        import traceback

        if "synchroniz" not in str(message):
            return self._show(message, category, filename, lineno, file, line)
        frames = [f for f in traceback.extract_stack()[:-1] if "warnings" not in f.filename]
        key = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames[-8:]))
        self.seen[key] = self.seen.get(key, 0) + 1
        return None

    def on_step_begin(self, args, state, control, **kwargs):
        import warnings

        import torch

        if state.global_step + 1 in self.steps and not self.on:
            self._show, warnings.showwarning = warnings.showwarning, self._hook
            warnings.filterwarnings("always", message=self.MESSAGE)
            torch.cuda.set_sync_debug_mode("warn")
            self.on = True

    def on_step_end(self, args, state, control, **kwargs):
        import warnings

        import torch

        if self.on and state.global_step + 1 not in self.steps:
            torch.cuda.set_sync_debug_mode("default")
            warnings.showwarning = self._show
            self.on = False
            n = len(self.steps)
            _log(f"sync_debug: {sum(self.seen.values())} host waits in {n} step(s), {len(self.seen)} distinct")
            for key, count in sorted(self.seen.items(), key=lambda kv: -kv[1]):
                _log(f"sync_debug: {count}x {key}")


def make_callbacks() -> dict:
    """The callback classes by their --callbacks name."""
    return {"sdpa_no_cudnn": SdpaNoCudnn, "pad_buckets": PadBuckets, "compile_layers": CompileLayers,
            "compile_dynamic": CompileDynamic, "liger_loss_only": LigerLossOnly, "liger_config": LigerConfig,
            "no_host_sync": NoHostSync, "sync_debug": SyncDebug}


CALLBACKS = ("sdpa_no_cudnn", "pad_buckets", "compile_layers", "compile_dynamic", "liger_loss_only", "liger_config",
             "no_host_sync", "sync_debug")


NEEDS = "ms-swift 4.x (swift.arguments and swift.callbacks; measured with 4.6.0)"


def compiles(argv: list[str]) -> bool:
    """Does this command line's --callbacks name a compiling callback (`--callbacks compile_dynamic no_host_sync`,
    `--callbacks=...`, or a list in one argument; the last --callbacks wins, as in ms-swift's parser)? Other flags'
    values do not count. The launcher asks the same of a run's arguments (compile_cache_state)."""
    import re

    values, inside = [], False
    for a in argv:
        if a.startswith("--"):
            flag, eq, rest = a.partition("=")
            inside = flag == "--callbacks"
            if inside:
                values = [rest] if eq else []
        elif inside:
            values.append(a)
    return any(tok in COMPILING for v in values for tok in re.split(r"[\s,\[\]\"']+", v))


def warm_compile_pool(argv: list[str]) -> bool:
    """Start inductor's compile workers now, at the plugin's import (before the model loads), where the run compiles:
    torch starts them at the first compile, inside step 1, where a warm run spent 38 s loading its cached compiled
    code (results/calls/2026-12-07-call29). SWIFTBENCH_WARM_POOL=0 leaves it to torch, as does a process that
    multiprocessing started (a dataloader worker that re-imports the plugin, a spawned rank). True where this call
    started them (torch skips it without Triton or with TORCH_WARM_POOL=0; a second import of the plugin finds them).
    Torch closes idle workers after a while; a long model load may see them restarted at the first compile."""
    import multiprocessing

    if os.environ.get(WARM_ENV, "1").strip() == "0" or not compiles(argv):
        return False
    if multiprocessing.parent_process() is not None:  # a dataloader worker re-importing the plugin (spawn), a rank
        return False
    try:
        from torch._inductor import async_compile
    except ImportError:
        return False
    pool = async_compile.AsyncCompile.process_pool
    before = pool.cache_info().currsize if hasattr(pool, "cache_info") else 0
    async_compile.maybe_warm_pool()
    return bool(hasattr(pool, "cache_info") and pool.cache_info().currsize > before)


def register() -> None:
    """Relax the padding-free check and add the callbacks to ms-swift's registry (--callbacks NAME). An older or
    partial ms-swift (swift.callbacks without swift.arguments, or no callbacks_map) stops the run with one line
    naming the ms-swift this file needs, not a traceback from inside ms-swift's argument parsing."""
    try:
        from swift.arguments import SftArguments  # noqa: F401
        from swift.callbacks import callbacks_map
    except ImportError as exc:
        import swift

        have = getattr(swift, "__version__", None) or "of unknown version"
        missing = getattr(exc, "name", None) or "swift.arguments"
        raise SystemExit(f"swiftbench plugin: needs {NEEDS}; this ms-swift {have} has no {missing}") from None

    allow_sdpa_padding_free()
    for name, cls in make_callbacks().items():
        callbacks_map.setdefault(name, cls)
    import sys

    if warm_compile_pool(sys.argv):
        _log("compile workers started at the plugin's import (before the model loads; SWIFTBENCH_WARM_POOL=0: at "
             "the first compile)")


try:
    import swift.callbacks  # noqa: F401
except ImportError:  # imported without ms-swift (the package's tests): nothing to register into
    pass
else:
    register()

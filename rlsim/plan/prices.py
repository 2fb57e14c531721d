"""Prices of GPU time: public on-demand list prices in US dollars per GPU-hour, so that cost = GPU-hours x price.

``rlsim/catalog/prices.yaml`` holds, for every GPU type of ``gpus.yaml``, one default price with the offer it is
(provider, instance, tier, per GPU), its source and the date it was read, plus every offer found; the default is the
lower median of the counted on-demand offers (docs/prices.md). A GPU with no public price has
``usd_per_gpu_hour: null``: :func:`price_for` then raises :class:`MissingPrice` unless an override gives one
(``--price GPU=USD`` on the command line, :func:`parse_price_overrides`, or the scenario's price field).

The catalog is validated when first loaded (:func:`validate_catalog`): every entry has ``usd_per_gpu_hour`` null or
a positive number, a ``source``, an ISO ``date`` and an ``offer``; a null entry has a ``note`` saying why; every
listed offer is complete and its per-GPU price agrees with its instance price. A bad entry fails with one line
naming it.
"""

from __future__ import annotations

import copy
import datetime
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeGuard

from rlsim import catalog
from rlsim.errors import RlsimError, ScenarioError, one_line
from rlsim.io.numbers import finite
from rlsim.scenario.overrides import split_assignment

CATALOG_FILE = "rlsim/catalog/prices.yaml"
PRICE_FLAG = "--price"
PRICE_EXAMPLE = "H100-SXM=3.99"
OVERRIDE_SOURCE = "override"
OVERRIDE_OFFER = "user override (--price GPU=USD or the scenario's price field)"

# relative tolerance between an offer's usd_per_gpu_hour and usd_per_instance_hour / gpus_per_instance
# (transcripts round the per-GPU figure to a few decimals)
_PER_GPU_REL_TOL = 1e-3


class PriceCatalogError(RlsimError, ValueError):
    """``prices.yaml`` has an entry that breaks the catalog's rules (the message names the entry and the field)."""


class MissingPrice(RlsimError):
    """No price for a GPU: its catalog entry is null (no public list price was found) or it is not in the catalog,
    and no override was given. The message names the GPU and the fix."""

    def __init__(self, gpu: str, reason: str) -> None:
        self.gpu = gpu
        self.reason = reason
        super().__init__(
            one_line(
                f"no price for GPU {gpu!r}: {reason}; pass {PRICE_FLAG} {gpu}=USD (US dollars per GPU-hour) "
                "or set the scenario's price field"
            )
        )


@dataclass(frozen=True)
class Price:
    """The price used for one GPU type: US dollars per GPU-hour, where it comes from and whether it was overridden.

    ``source``/``date``/``offer`` are the catalog default's (its URL or document, the ISO date it was read, and the
    offer: provider, instance, per GPU); for an override ``source`` is ``"override"`` and ``date`` is empty."""

    gpu: str
    usd_per_gpu_hour: float
    source: str
    date: str
    offer: str
    overridden: bool


# ------------------------------------------------------------------------------------------------ validation


def _fail(origin: str, where: str, value: object, problem: str) -> PriceCatalogError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return PriceCatalogError(one_line(f"{origin}: {where}: {shown} {problem}"))


def _positive(value: object) -> TypeGuard[float]:
    """Whether ``value`` is a finite number above 0 (rlsim.io.numbers.finite), which the caller may then use as one."""
    x = finite(value)
    return x is not None and x > 0


def _text(mapping: Mapping[str, Any], key: str, origin: str, where: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str) or not value.strip():
        raise _fail(origin, f"{where}.{key}", value, "must be a non-empty string")
    return value


def _iso_date(mapping: Mapping[str, Any], key: str, origin: str, where: str) -> str:
    value = mapping.get(key)
    if isinstance(value, datetime.datetime):
        raise _fail(origin, f"{where}.{key}", value, "must be an ISO date (YYYY-MM-DD), not a date and time")
    if isinstance(value, datetime.date):  # an unquoted date in YAML
        return value.isoformat()
    if isinstance(value, str):
        try:
            return datetime.date.fromisoformat(value.strip()).isoformat()
        except ValueError:
            pass
    raise _fail(origin, f"{where}.{key}", value, "must be an ISO date (YYYY-MM-DD, quoted in YAML)")


def _validate_offer(offer: object, origin: str, where: str) -> dict[str, Any]:
    if not isinstance(offer, Mapping):
        raise _fail(origin, where, offer, "must be a mapping (provider, instance, tier, prices, source, date, counted)")
    out = dict(offer)
    for key in ("provider", "instance", "tier", "source"):
        _text(offer, key, origin, where)
    out["date"] = _iso_date(offer, "date", origin, where)
    per_gpu = offer.get("usd_per_gpu_hour")
    if not _positive(per_gpu):
        raise _fail(origin, f"{where}.usd_per_gpu_hour", per_gpu, "must be a positive number (US dollars per GPU-hour)")
    per_instance = offer.get("usd_per_instance_hour")
    if per_instance is not None and not _positive(per_instance):
        raise _fail(origin, f"{where}.usd_per_instance_hour", per_instance, "must be null or a positive number")
    gpus = offer.get("gpus_per_instance")
    if gpus is not None and not (isinstance(gpus, int) and not isinstance(gpus, bool) and gpus >= 1):
        raise _fail(origin, f"{where}.gpus_per_instance", gpus, "must be null or a whole number >= 1")
    if per_instance is not None and gpus is not None:
        implied = per_instance / gpus
        if not math.isclose(implied, per_gpu, rel_tol=_PER_GPU_REL_TOL):
            raise _fail(
                origin,
                f"{where}.usd_per_gpu_hour",
                per_gpu,
                f"disagrees with usd_per_instance_hour / gpus_per_instance = {per_instance} / {gpus} = {implied:.6g}",
            )
    if not isinstance(offer.get("counted"), bool):
        raise _fail(origin, f"{where}.counted", offer.get("counted"), "must be true or false")
    if "note" in offer and (not isinstance(offer["note"], str) or not offer["note"].strip()):
        raise _fail(origin, f"{where}.note", offer["note"], "must be a non-empty string when present")
    return out


def _validate_entry(name: object, entry: object, origin: str) -> dict[str, Any]:
    if not isinstance(name, str) or not name.strip():
        raise _fail(origin, "entry name", name, "must be a GPU name (a non-empty string)")
    if not isinstance(entry, Mapping):
        raise _fail(origin, name, entry, "must be a mapping with usd_per_gpu_hour, offer, source and date")
    if "usd_per_gpu_hour" not in entry:
        raise _fail(origin, name, list(entry), "has no usd_per_gpu_hour (write null if no public price was found)")
    price = entry["usd_per_gpu_hour"]
    if price is not None and not _positive(price):
        raise _fail(
            origin, f"{name}.usd_per_gpu_hour", price, "must be null or a positive number (US dollars per GPU-hour)"
        )
    out = dict(entry)
    out["usd_per_gpu_hour"] = None if price is None else float(price)
    out["source"] = _text(entry, "source", origin, name)
    out["date"] = _iso_date(entry, "date", origin, name)
    out["offer"] = _text(entry, "offer", origin, name)
    if price is None:
        out["note"] = _text(entry, "note", origin, name)  # a null says why
    elif "note" in entry:
        out["note"] = _text(entry, "note", origin, name)
    offers = entry.get("offers", [])
    if offers is None:
        offers = []
    if not isinstance(offers, list):
        raise _fail(origin, f"{name}.offers", offers, "must be a list of offers")
    out["offers"] = [_validate_offer(o, origin, f"{name}.offers[{i}]") for i, o in enumerate(offers)]
    return out


def validate_catalog(entries: object, origin: str = CATALOG_FILE) -> dict[str, dict[str, Any]]:
    """The price table checked entry by entry (a new dict; dates normalised to ``YYYY-MM-DD`` strings).

    Raises :class:`PriceCatalogError` naming the first bad entry and field."""
    if not isinstance(entries, Mapping) or not entries:
        raise _fail(origin, "top level", entries, "must be a non-empty mapping of GPU name -> price entry")
    return {name: _validate_entry(name, entry, origin) for name, entry in entries.items()}


@cache
def _table() -> dict[str, dict[str, Any]]:
    try:
        raw = catalog._load("prices")  # the catalog's importlib.resources loader, as for gpus.yaml / models.yaml
    except AttributeError as exc:  # the loader reads entry.get("aliases"): an entry that is not a mapping
        raise PriceCatalogError(one_line(f"{CATALOG_FILE}: every entry must be a mapping ({exc})")) from exc
    return validate_catalog(raw)


# ------------------------------------------------------------------------------------------------ lookups


def load_catalog() -> dict[str, dict[str, Any]]:
    """The validated price catalog, GPU name -> entry (a copy: changing it changes nothing here)."""
    return copy.deepcopy(_table())


def offers_for(gpu: str) -> list[dict[str, Any]]:
    """Every offer the catalog lists for ``gpu`` (copies; empty for a GPU not in the catalog)."""
    entry = _table().get(gpu)
    return copy.deepcopy(entry["offers"]) if entry else []


def known_gpus() -> list[str]:
    """GPU names a ``--price`` item may name: the GPU catalog's, in its order, then any priced only here."""
    names = list(catalog.gpu_names())
    return names + [n for n in _table() if n not in names]


def _override_value(gpu: str, value: object) -> float:
    if isinstance(value, str):
        try:
            value = _parse_usd_text(value)
        except ValueError:
            pass  # refused below, naming the text
    if not _positive(value):
        raise ScenarioError(
            f"price override for GPU {gpu!r}",
            value,
            "is not a positive number of US dollars per GPU-hour",
            f"write e.g. {PRICE_FLAG} {gpu}=3.99",
        )
    return float(value)


def price_for(gpu: str, overrides: Mapping[str, float] | None = None) -> Price:
    """The price of one GPU-hour of ``gpu``: ``overrides[gpu]`` if given (it wins, and the Price says so), else the
    catalog default. Raises :class:`MissingPrice` when neither has a price (the catalog's null, or a GPU the catalog
    does not know), and :class:`ScenarioError` for an override that is not a positive number."""
    if overrides and gpu in overrides:
        value = _override_value(gpu, overrides[gpu])
        return Price(gpu, value, OVERRIDE_SOURCE, "", OVERRIDE_OFFER, True)
    entry = _table().get(gpu)
    if entry is None:
        raise MissingPrice(gpu, f"it is not in {CATALOG_FILE}")
    if entry["usd_per_gpu_hour"] is None:
        raise MissingPrice(gpu, f"no public list price was found (null in {CATALOG_FILE}; see docs/prices.md)")
    return Price(gpu, entry["usd_per_gpu_hour"], entry["source"], entry["date"], entry["offer"], False)


def cost_usd(gpu_hours: float, price: Price) -> float:
    """US dollars for ``gpu_hours`` GPU-hours at ``price``: ``gpu_hours * price.usd_per_gpu_hour``."""
    if finite(gpu_hours) is None or gpu_hours < 0:
        raise ValueError(f"gpu_hours must be a finite number >= 0, got {gpu_hours!r}")
    return float(gpu_hours) * price.usd_per_gpu_hour


# ------------------------------------------------------------------------------------------------ --price


def _parse_usd_text(text: str) -> float:
    """``"3.99"`` or ``"$3.99"`` -> 3.99; ValueError for text that is not a number."""
    body = text.strip()
    if body.startswith("$"):
        body = body[1:].strip()
    return float(body)


def parse_price_overrides(items: Sequence[str]) -> dict[str, float]:
    """``["H100-SXM=3.5", "A100-80GB=$2"]`` (the CLI's ``--price GPU=USD`` items) -> ``{"H100-SXM": 3.5,
    "A100-80GB": 2.0}``, US dollars per GPU-hour.

    Each error is one :class:`ScenarioError` line naming the item: no ``=``, an unknown GPU (the known ones are
    listed), a price that is not a number or not positive, or a GPU priced twice with different values."""
    if isinstance(items, str):
        items = [items]
    known = known_gpus()
    out: dict[str, float] = {}
    for item in items:
        gpu, text = split_assignment(item, flag=PRICE_FLAG, example=PRICE_EXAMPLE, form="GPU=USD")
        if gpu not in known:
            raise ScenarioError(PRICE_FLAG, item, f"names unknown GPU {gpu!r}", f"known GPUs: {', '.join(known)}")
        try:
            value = _parse_usd_text(text)
        except ValueError:
            raise ScenarioError(
                PRICE_FLAG,
                item,
                f"has a price {text!r} that is not a number",
                f"write US dollars per GPU-hour, e.g. {PRICE_EXAMPLE}",
            ) from None
        if not math.isfinite(value) or value <= 0:
            raise ScenarioError(
                PRICE_FLAG,
                item,
                f"has a price {text!r} that is not a positive finite number",
                f"write US dollars per GPU-hour, e.g. {PRICE_EXAMPLE}",
            )
        if gpu in out and out[gpu] != value:
            raise ScenarioError(
                PRICE_FLAG, item, f"prices {gpu} a second time (first {out[gpu]:g})", "give each GPU one price"
            )
        out[gpu] = value
    return out

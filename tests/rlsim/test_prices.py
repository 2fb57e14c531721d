"""The price catalog (rlsim/catalog/prices.yaml) and rlsim.plan.prices.

* Coverage and provenance: every GPU of gpus.yaml has exactly one price entry; every price (default and offer) has a
  source and an ISO date; a null says why; each default is the lower median of its counted offers and carries that
  offer's source and date; an offer's per-GPU price agrees with its instance price; docs/prices.md shows the defaults.
* Lookups: the catalog default is returned as is; an override wins and says so; a null (or unknown GPU) without an
  override raises MissingPrice naming the GPU and the fix.
* ``--price GPU=USD`` parsing: good items parse; each bad item is one ScenarioError naming the item.
* cost = GPU-hours x price.
* Validation at load: a bad entry fails with a message naming the entry and the field.
"""

from __future__ import annotations

import copy
import datetime
import math
import re
import statistics
from pathlib import Path

import pytest

from rlsim import catalog
from rlsim.errors import RlsimError, ScenarioError
from rlsim.plan import prices
from rlsim.plan.prices import MissingPrice, Price, PriceCatalogError

REPO = Path(__file__).resolve().parents[2]
TABLE = prices.load_catalog()
PRICED = [g for g, e in TABLE.items() if e["usd_per_gpu_hour"] is not None]
UNPRICED = [g for g, e in TABLE.items() if e["usd_per_gpu_hour"] is None]


def _is_iso_date(text: object) -> bool:
    try:
        return isinstance(text, str) and datetime.date.fromisoformat(text).isoformat() == text
    except ValueError:
        return False


def _urls(text: str) -> set[str]:
    return {u.rstrip(").,;'") for u in re.findall(r"https?://[^\s']+", text)}


# ------------------------------------------------------------------------------------------------ the catalog


def test_every_catalog_gpu_has_one_price_entry() -> None:
    assert list(TABLE) == list(catalog.gpu_names())


def test_both_priced_and_unpriced_gpus_exist() -> None:
    # the tests below exercise both kinds; the catalog has both (A100/H100 priced, H800 has no public price)
    assert {"A100-80GB", "H100-SXM"} <= set(PRICED)
    assert "H800" in UNPRICED


@pytest.mark.parametrize("gpu", list(TABLE))
def test_every_entry_has_source_date_and_offer(gpu: str) -> None:
    entry = TABLE[gpu]
    assert entry["source"].strip() and entry["offer"].strip()
    assert _is_iso_date(entry["date"]), entry["date"]
    if entry["usd_per_gpu_hour"] is None:
        assert entry["note"].strip(), "a null price must say why"
    else:
        assert entry["usd_per_gpu_hour"] > 0
    for offer in entry["offers"]:
        assert offer["source"].strip() and offer["provider"].strip() and offer["instance"].strip()
        assert _is_iso_date(offer["date"]), offer
        assert offer["usd_per_gpu_hour"] > 0


@pytest.mark.parametrize("gpu", list(TABLE))
def test_default_is_lower_median_of_counted_offers(gpu: str) -> None:
    entry = TABLE[gpu]
    counted = [o for o in entry["offers"] if o["counted"]]
    if entry["usd_per_gpu_hour"] is None:
        assert counted == [], "a null entry has no counted offer"
        return
    assert counted, "a priced entry has at least one counted offer"
    value = statistics.median_low([o["usd_per_gpu_hour"] for o in counted])
    chosen = next(o for o in counted if o["usd_per_gpu_hour"] == value)
    assert entry["usd_per_gpu_hour"] == value
    assert entry["date"] == chosen["date"]
    assert chosen["provider"] in entry["offer"]
    # the default's source names the chosen offer's pages (every URL of the offer's source)
    urls = _urls(chosen["source"])
    assert urls and urls <= _urls(entry["source"]), (urls, entry["source"])
    assert all(o["tier"] == "on-demand" for o in counted)


@pytest.mark.parametrize("gpu", list(TABLE))
def test_offer_per_gpu_price_matches_instance_price(gpu: str) -> None:
    for offer in TABLE[gpu]["offers"]:
        if offer["usd_per_instance_hour"] is not None and offer["gpus_per_instance"] is not None:
            implied = offer["usd_per_instance_hour"] / offer["gpus_per_instance"]
            assert math.isclose(implied, offer["usd_per_gpu_hour"], rel_tol=1e-3), offer


def test_docs_table_shows_every_default() -> None:
    lines = (REPO / "docs" / "prices.md").read_text().splitlines()
    for gpu, entry in TABLE.items():
        rows = [line for line in lines if line.startswith(f"| {gpu} |")]
        assert len(rows) == 1, f"docs/prices.md needs one table row for {gpu}"
        cell = rows[0].split("|")[2].strip()
        want = "none" if entry["usd_per_gpu_hour"] is None else f"{entry['usd_per_gpu_hour']:.2f}"
        assert cell == want, f"docs/prices.md shows {cell} for {gpu}, the catalog {want}"
        if entry["usd_per_gpu_hour"] is not None:
            assert entry["date"] in rows[0]


def test_load_catalog_returns_a_copy() -> None:
    table = prices.load_catalog()
    table["H100-SXM"]["usd_per_gpu_hour"] = 0.01
    table["H100-SXM"]["offers"].clear()
    assert prices.price_for("H100-SXM").usd_per_gpu_hour == TABLE["H100-SXM"]["usd_per_gpu_hour"]
    assert prices.offers_for("H100-SXM") == TABLE["H100-SXM"]["offers"]


# ------------------------------------------------------------------------------------------------ price_for


@pytest.mark.parametrize("gpu", PRICED)
def test_catalog_price_is_returned(gpu: str) -> None:
    price = prices.price_for(gpu)
    entry = TABLE[gpu]
    assert price == Price(gpu, entry["usd_per_gpu_hour"], entry["source"], entry["date"], entry["offer"], False)


def test_override_wins_and_says_so() -> None:
    catalog_value = TABLE["H100-SXM"]["usd_per_gpu_hour"]
    price = prices.price_for("H100-SXM", {"H100-SXM": 1.25})
    assert price.usd_per_gpu_hour == 1.25 != catalog_value
    assert price.overridden is True
    assert price.source == "override"
    assert price.gpu == "H100-SXM"


def test_override_of_another_gpu_changes_nothing() -> None:
    price = prices.price_for("H100-SXM", {"A100-80GB": 9.0})
    assert price.usd_per_gpu_hour == TABLE["H100-SXM"]["usd_per_gpu_hour"]
    assert price.overridden is False


@pytest.mark.parametrize("gpu", UNPRICED)
def test_override_prices_a_gpu_without_public_price(gpu: str) -> None:
    price = prices.price_for(gpu, {gpu: 2.5})
    assert (price.usd_per_gpu_hour, price.overridden) == (2.5, True)


def test_override_prices_a_gpu_outside_the_catalog() -> None:
    # a scenario may spell out its own GPU; its price field then gives the price
    assert prices.price_for("My-Custom-GPU", {"My-Custom-GPU": 4.0}).usd_per_gpu_hour == 4.0


@pytest.mark.parametrize("gpu", UNPRICED)
def test_null_without_override_raises_missing_price(gpu: str) -> None:
    with pytest.raises(MissingPrice) as info:
        prices.price_for(gpu)
    message = str(info.value)
    assert isinstance(info.value, RlsimError)
    assert info.value.gpu == gpu
    assert repr(gpu) in message
    assert f"--price {gpu}=USD" in message and "price field" in message
    assert "\n" not in message
    with pytest.raises(MissingPrice):
        prices.price_for(gpu, {"H100-SXM": 3.0})  # an override for another GPU does not help


def test_unknown_gpu_without_override_raises_missing_price() -> None:
    with pytest.raises(MissingPrice, match="'No-Such-GPU'.*--price No-Such-GPU=USD"):
        prices.price_for("No-Such-GPU")


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, True, "abc", None])
def test_bad_override_value_is_refused(bad: object) -> None:
    with pytest.raises(ScenarioError, match="H100-SXM"):
        prices.price_for("H100-SXM", {"H100-SXM": bad})  # type: ignore[dict-item]


# ------------------------------------------------------------------------------------------------ --price


def test_parse_price_overrides() -> None:
    got = prices.parse_price_overrides(["H100-SXM=3.5", " A100-80GB = 2 ", "H800=$1.75", "H100-SXM=3.5"])
    assert got == {"H100-SXM": 3.5, "A100-80GB": 2.0, "H800": 1.75}
    assert all(type(v) is float for v in got.values())
    assert prices.parse_price_overrides([]) == {}
    assert prices.parse_price_overrides("B200=6") == {"B200": 6.0}  # one item given as a string


@pytest.mark.parametrize(
    "item, problem",
    [
        ("H100-SXM", "no '='"),
        ("=3.5", "empty key"),
        ("H100-SXM=", "not a number"),
        ("H100-SXM=abc", "not a number"),
        ("H100-SXM=3.99/h", "not a number"),
        ("H100-SXM=0", "not a positive"),
        ("H100-SXM=-2", "not a positive"),
        ("H100-SXM=nan", "not a positive"),
        ("H100-SXM=inf", "not a positive"),
        ("h100-sxm=3", "unknown GPU"),
        ("RTX-4090=0.5", "unknown GPU"),
    ],
)
def test_parse_errors_name_the_item(item: str, problem: str) -> None:
    with pytest.raises(ScenarioError) as info:
        prices.parse_price_overrides(["A100-80GB=2", item])
    message = str(info.value)
    assert message.startswith("--price: ")
    assert repr(item) in message
    assert problem in message
    assert "\n" not in message


def test_unknown_gpu_error_lists_the_known_ones() -> None:
    with pytest.raises(ScenarioError) as info:
        prices.parse_price_overrides(["RTX-4090=0.5"])
    for gpu in catalog.gpu_names():
        assert gpu in str(info.value)


def test_a_gpu_priced_twice_differently_is_refused() -> None:
    with pytest.raises(ScenarioError, match="'H100-SXM=4'.*second time"):
        prices.parse_price_overrides(["H100-SXM=3", "H100-SXM=4"])


def test_parsed_overrides_feed_price_for() -> None:
    overrides = prices.parse_price_overrides(["H800=2.2"])
    price = prices.price_for("H800", overrides)
    assert (price.usd_per_gpu_hour, price.overridden, price.source) == (2.2, True, "override")


# ------------------------------------------------------------------------------------------------ cost


@pytest.mark.parametrize("gpu", PRICED)
def test_cost_is_gpu_hours_times_price(gpu: str) -> None:
    price = prices.price_for(gpu)
    assert prices.cost_usd(128.0, price) == pytest.approx(128.0 * TABLE[gpu]["usd_per_gpu_hour"])
    assert prices.cost_usd(0, price) == 0.0


def test_cost_with_override() -> None:
    price = prices.price_for("H100-SXM", {"H100-SXM": 2.0})
    assert prices.cost_usd(8 * 10.5, price) == pytest.approx(168.0)  # 8 GPUs for 10.5 h at $2


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, "10", None, True])
def test_cost_refuses_bad_gpu_hours(bad: object) -> None:
    with pytest.raises(ValueError, match="gpu_hours"):
        prices.cost_usd(bad, prices.price_for("H100-SXM"))  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------------ validation


def _good() -> dict:
    return {
        "X-GPU": {
            "usd_per_gpu_hour": 3.0,
            "offer": "Some Cloud on-demand 8x X, per GPU-hour",
            "source": "https://example.com/pricing",
            "date": "2026-11-01",
            "offers": [
                {
                    "provider": "Some Cloud",
                    "instance": "8x X",
                    "tier": "on-demand",
                    "usd_per_instance_hour": 24.0,
                    "gpus_per_instance": 8,
                    "usd_per_gpu_hour": 3.0,
                    "source": "https://example.com/pricing",
                    "date": "2026-11-01",
                    "counted": True,
                }
            ],
        }
    }


def test_validate_accepts_a_good_entry_and_normalises_dates() -> None:
    table = _good()
    table["X-GPU"]["date"] = datetime.date(2026, 11, 1)  # what unquoted YAML gives
    out = prices.validate_catalog(table)
    assert out["X-GPU"]["date"] == "2026-11-01"
    assert prices.validate_catalog({"Y": {**_good()["X-GPU"], "usd_per_gpu_hour": None, "note": "none found"}})


def _breaks(path: tuple, value: object) -> dict:
    table = copy.deepcopy(_good())
    target = table
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return table


_DELETE = object()


@pytest.mark.parametrize(
    "path, value, where",
    [
        (("X-GPU", "usd_per_gpu_hour"), -1.0, "X-GPU.usd_per_gpu_hour"),
        (("X-GPU", "usd_per_gpu_hour"), 0, "X-GPU.usd_per_gpu_hour"),
        (("X-GPU", "usd_per_gpu_hour"), "3.0", "X-GPU.usd_per_gpu_hour"),
        (("X-GPU", "usd_per_gpu_hour"), True, "X-GPU.usd_per_gpu_hour"),
        (("X-GPU", "usd_per_gpu_hour"), _DELETE, "X-GPU: "),
        (("X-GPU", "source"), _DELETE, "X-GPU.source"),
        (("X-GPU", "source"), "  ", "X-GPU.source"),
        (("X-GPU", "date"), _DELETE, "X-GPU.date"),
        (("X-GPU", "date"), "11/01/2026", "X-GPU.date"),
        (("X-GPU", "date"), "2026-13-01", "X-GPU.date"),
        (("X-GPU", "date"), datetime.datetime(2026, 11, 1, 12, 0), "X-GPU.date"),
        (("X-GPU", "offer"), _DELETE, "X-GPU.offer"),
        (("X-GPU", "offers"), "Some Cloud", "X-GPU.offers"),
        (("X-GPU", "offers", 0, "usd_per_gpu_hour"), 2.5, "X-GPU.offers[0].usd_per_gpu_hour"),
        (("X-GPU", "offers", 0, "gpus_per_instance"), 0, "X-GPU.offers[0].gpus_per_instance"),
        (("X-GPU", "offers", 0, "usd_per_instance_hour"), -24.0, "X-GPU.offers[0].usd_per_instance_hour"),
        (("X-GPU", "offers", 0, "date"), "last week", "X-GPU.offers[0].date"),
        (("X-GPU", "offers", 0, "source"), _DELETE, "X-GPU.offers[0].source"),
        (("X-GPU", "offers", 0, "counted"), "yes", "X-GPU.offers[0].counted"),
        (("X-GPU",), "3.99", "X-GPU: "),
    ],
)
def test_validate_names_the_bad_entry(path: tuple, value: object, where: str) -> None:
    with pytest.raises(PriceCatalogError) as info:
        prices.validate_catalog(_breaks(path, value), origin="prices.yaml")
    message = str(info.value)
    assert message.startswith("prices.yaml: ")
    assert where in message
    assert "\n" not in message


def test_validate_requires_a_note_for_null() -> None:
    table = _good()
    table["X-GPU"]["usd_per_gpu_hour"] = None
    with pytest.raises(PriceCatalogError, match=r"X-GPU\.note"):
        prices.validate_catalog(table)


def test_validate_refuses_an_empty_catalog() -> None:
    with pytest.raises(PriceCatalogError, match="top level"):
        prices.validate_catalog({})

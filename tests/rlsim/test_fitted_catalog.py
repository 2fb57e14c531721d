"""rlsim/catalog/fitted.yaml: every constant fitted on published rows, with the value rlsim uses and its prior. The
value must be what a scenario resolves to (the schema's Costs default, or the behaviour's own value in
engines.yaml), so the accuracy measured with the catalog is the accuracy users get."""

from __future__ import annotations

import dataclasses

import yaml

from rlsim import catalog
from rlsim.schema import Costs

KEYS = {"value", "prior", "prior_source", "mechanism", "fitted_on", "command", "date"}


def _engines_yaml() -> dict:
    from importlib import resources

    return yaml.safe_load(resources.files("rlsim.catalog").joinpath("engines.yaml").read_text())


def test_every_fitted_constant_is_the_value_a_scenario_resolves_to() -> None:
    defaults = {f.name: f.default for f in dataclasses.fields(Costs)}
    engines = _engines_yaml()
    entries = catalog.fitted_constants()
    assert entries
    for name, entry in entries.items():
        assert KEYS <= set(entry), f"{name}: missing {sorted(KEYS - set(entry))}"
        kind, _, rest = name.partition(".")
        if kind == "costs":
            assert rest in defaults, f"{name}: not a costs field"
            assert defaults[rest] == entry["value"], f"{name}: schema default {defaults[rest]} != {entry['value']}"
        else:
            assert kind == "engines", name
            behaviour, _, key = rest.rpartition(".")
            assert behaviour in engines, f"{name}: no behaviour {behaviour!r} in engines.yaml"
            got = engines[behaviour].get(key)
            assert got == entry["value"], f"{name}: engines.yaml has {got}"


def test_a_behaviour_marked_fitted_has_its_fitted_values_listed() -> None:
    listed = {
        name.partition(".")[2].rpartition(".")[0] for name in catalog.fitted_constants() if name.startswith("engines.")
    }
    for name, entry in _engines_yaml().items():
        if entry.get("fitted"):
            assert name in listed, f"engines.yaml {name} says fitted: true but fitted.yaml lists none of its values"


def test_prior_values_put_every_fitted_constant_at_its_prior() -> None:
    costs, engines = catalog.prior_values()
    for name, entry in catalog.fitted_constants().items():
        kind, _, rest = name.partition(".")
        if kind == "costs":
            assert costs[rest] == entry["prior"]
        else:
            behaviour, _, key = rest.rpartition(".")
            assert engines[behaviour][key] == entry["prior"]
    with catalog.engine_overrides(engines):
        assert catalog.engine("vllm-0.5")["gpu_scaled"] == []
    assert catalog.engine("vllm-0.5")["gpu_scaled"] != []

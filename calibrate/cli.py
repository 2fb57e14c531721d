"""``rlsim-calibrate``: turn measurements into profiles and check predictions against real runs.

``rlsim-calibrate fit BENCH_TABLE... [--runs RUN_DIR... [--target X]] -o profile.json [--scenario-out S.yaml]
[--model-dir DIR | --model NAME] [--gpu NAME]``: every fitted number into the profile (bench costs; with the
reference runs also lengths, reward and glue, in-loop factors and the learning model), the runs' setup into S.yaml
``rlsim-calibrate fit-learning RUN... --target X --profile P -o profile.json [--reference-batch B]``: the
learning model from run logs at two or more batch sizes, written into the profile's ``learning``
``rlsim-calibrate fit-staleness RUN... [--initial X] [--profile P -o profile.json]``: which staleness form
(stretch, naive_ppo, decoupled_ppo, or the threshold form with fitted constants) async runs at two or more max
stalenesses follow, into ``learning.staleness_loss`` (and ``staleness_form`` / ``staleness_penalty_per_step``)
``rlsim-calibrate fit-groups RUN... --target X [--profile P -o profile.json]``: whether runs at one batch and two
or more group sizes follow B = P x G alone or the informative-group term, into ``learning.reference_group_size``
``rlsim-calibrate fit-filtering RUN... --target X [--profile P -o profile.json]``: how much DAPO's dynamic sampling
saves per trained sample, from runs at one batch with and without it, into ``learning.filtered_signal_power``
``rlsim-calibrate import --format verl|openrlhf|trl|nemo-rl LOG -o runlog.jsonl [--prompts-per-step P
--group-size G]``
``rlsim-calibrate validate [--profile P] RUN_DIR... -o DIR [--target X]``: predict each run's batch from the
profile alone and compare (never fits)
``rlsim-calibrate published [CSV ...] -o DIR [--costs fitted|catalog] [--set costs.X=V ...] [--cv KEY]``: predict
published RL step times (default: the project's copy of the NeMo RL development set) and print the accuracy;
DIR gets published.csv and summary.json
``rlsim-calibrate anchor [LOG] --scenario S [--step-time S] [--phase NAME=S ...] -o profile.json``: fit the few
global cost coefficients on one measured step of the user's own job (calibrate.anchor)
``rlsim-calibrate vllm-check -o DIR [--model tiny|smollm2] [--quick]``: vLLM's own benchmark on this machine at
points off the project's bench grid, predicted by the engine model under a profile fitted from that bench alone
``rlsim-calibrate loop -o DIR [--engine hf|vllm] [--group-size G] [--seeds N]``: predict before you run on this
CPU (calibrate.loop); it calls ``rlsim-real`` and ``rlsim`` in subprocesses, so this package never imports
torch.

Bad input prints one line ``rlsim-calibrate: error: ...`` and exits 2.

Each command lives in its package's ``cli`` module (calibrate.runs: fit, validate; calibrate.learning: the fit-*
commands; calibrate.importers: import; calibrate.published; calibrate.anchor; calibrate.loop; calibrate.vllm_check);
this module only puts them on one parser, in the order ``--help`` lists them.
"""

from __future__ import annotations

import argparse
import sys

from calibrate.anchor import cli as anchor_cli
from calibrate.importers import cli as importers_cli
from calibrate.learning import cli as learning_cli
from calibrate.loop import cli as loop_cli
from calibrate.published import cli as published_cli
from calibrate.runs import cli as runs_cli
from calibrate.vllm_check import cli as vllm_check_cli
from rlsim.cli import parse, run_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlsim-calibrate", description="fit profiles and validate predictions")
    sub = parser.add_subparsers(dest="command", required=True)
    runs_cli.add_fit_parser(sub)
    learning_cli.add_parsers(sub)
    importers_cli.add_parsers(sub)
    runs_cli.add_validate_parser(sub)
    published_cli.add_parsers(sub)
    anchor_cli.add_parsers(sub)
    loop_cli.add_parsers(sub)
    vllm_check_cli.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    return run_command("rlsim-calibrate", parse(build_parser(), sys.argv[1:] if argv is None else list(argv)))


if __name__ == "__main__":
    sys.exit(main())

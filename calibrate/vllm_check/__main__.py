"""``python -m calibrate.vllm_check``: the check as a program (calibrate.vllm_check.cli)."""

import sys

from calibrate.vllm_check.cli import main

sys.exit(main())

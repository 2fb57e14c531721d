"""``python -m calibrate.vllm_check``: the check as a program (calibrate.vllm_check.command)."""

import sys

from calibrate.vllm_check.command import main

sys.exit(main())

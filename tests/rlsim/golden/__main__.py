import sys

from tests.rlsim.golden import main

sys.exit(main())

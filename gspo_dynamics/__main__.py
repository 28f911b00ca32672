"""`python -m gspo_dynamics ARGS`: the `gspo-dynamics` command, for an environment whose scripts are not on PATH."""

from gspo_dynamics.cli.main import main

raise SystemExit(main())

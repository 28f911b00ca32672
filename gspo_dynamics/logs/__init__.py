"""Training-log readers: every supported format -> one canonical `RunLog`.

    log = read_log("outputs/checkpoint-500/trainer_state.json")
    log.steps, log["reward"], log["frac_zero_std"], log.warnings

Formats (auto-detected from the content; see `detect_format`): TRL/transformers
`trainer_state.json`, transformers console output, TensorBoard event files, CSV (W&B exports),
JSONL (generic, W&B, verl file logger), verl console lines. The names of TRL, verl, OpenRLHF, ROLL
and hand-written loops (`reward_mean`, `rollout/reward_mean`, `token_entropy`, ...) are read as
`STANDARD_NAMES` by a rule (`_vocabulary`); unknown keys are kept. A column map names the others:

    log = read_log("metrics.csv", column_map={"reward": "score", "step": "iter"})

numpy only (no torch).
"""

from gspo_dynamics.logs._columns import ColumnMapError, parse_map_option
from gspo_dynamics.logs._flat_rows import NO_SIGNAL_TOL, flat_rows
from gspo_dynamics.logs._folders import holds_log, run_folders
from gspo_dynamics.logs._follow import Follower
from gspo_dynamics.logs._names import STANDARD_NAMES, canonical_name
from gspo_dynamics.logs._printed_config import HEAD_CHARS as PRINTED_CONFIG_HEAD
from gspo_dynamics.logs._printed_config import PrintedConfig, printed_config
from gspo_dynamics.logs._trainers import trl_release_bound
from gspo_dynamics.logs._read import FORMATS, detect_format, read_log, read_log_history
from gspo_dynamics.logs._readers import ROW_NUMBERS
from gspo_dynamics.logs._runlog import MIN_ANALYSIS_POINTS, RunLog, is_too_short

__all__ = [
    "Follower",
    "holds_log",
    "run_folders",
    "ColumnMapError",
    "FORMATS",
    "MIN_ANALYSIS_POINTS",
    "NO_SIGNAL_TOL",
    "ROW_NUMBERS",
    "STANDARD_NAMES",
    "RunLog",
    "canonical_name",
    "trl_release_bound",
    "detect_format",
    "flat_rows",
    "is_too_short",
    "parse_map_option",
    "PRINTED_CONFIG_HEAD",
    "PrintedConfig",
    "printed_config",
    "read_log",
    "read_log_history",
]

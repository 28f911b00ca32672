"""Names of the real logs in ../shared/data/real_logs (its INDEX.md describes them).

The files are other people's runs and never ship with the repository; tests take the folder from
the `real_logs` fixture (tests/conftest.py), which skips them with the reason when it is absent.
Parametrising over these names (not over the folder's listing) keeps the test ids the same on a
machine without the folder, where each is skipped with that reason.
"""

ALEX = "alexchilton__CAS_NLP_MODULE4_GRPO__expert_guy__post_training_project__threestage__stage2_output__"
ALEX_JSON = ALEX + "checkpoint-160__trainer_state.json"
ALEX_TB = ALEX + "logs__events.out.tfevents.1766306229.Mac.13809.0"
IMJONEZZ = "IMJONEZZ__UnslothGRPO__outputs__checkpoint-250__trainer_state.json"
SRINATH = "srinath-manda__IITD_Feb26_AAIPL__outputs__checkpoint-500__trainer_state.json"
SUNSHINE = "Sunshine535__nips-grpo-dynamics__results__gates_1_2__logs__gate2_rho1.00_seed42.log"
VERL_SMOKE = "terrense__qwen3-8b-grpo-dapo-lab__analysis__gspo_smoke_metrics.jsonl"
DPO = "chandlerzuo__rlhf_recsys__outputs__trainer_state.json"

ALL = (ALEX_JSON, ALEX_TB, IMJONEZZ, SRINATH, SUNSHINE, VERL_SMOKE, DPO)

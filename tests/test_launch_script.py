"""A verl launch script read as its config (`_launch_script`, `_config_file.load_config_file` by the .sh suffix): the
Hydra overrides of its trainer command, with the script's own variables, as verl's examples write them."""

from __future__ import annotations

import pytest

from gspo_dynamics import ConfigError
from gspo_dynamics._config_file import load_config_file
from gspo_dynamics._launch_script import overrides_of
from gspo_dynamics.predict import read_run_config

SCRIPT = """#!/bin/bash
set -x
# the learning rate
export LR=1e-6
N=8   # responses per prompt
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=256 \\
    data.train_files=$HOME/data/gsm8k/train.parquet \\
    actor_rollout_ref.actor.optim.lr=${LR} \\
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \\
    actor_rollout_ref.rollout.n=$N \\
    actor_rollout_ref.actor.clip_ratio_high=${CLIP_HIGH:-0.28} \\
    trainer.logger='["console","tensorboard"]' \\
    +trainer.total_training_steps=300 \\
    ~trainer.val_before_train \\
    trainer.total_epochs=15 $@ 2>&1 | tee verl_demo.log
"""


def test_the_overrides_of_the_trainer_command_with_the_scripts_variables():
    got = overrides_of(SCRIPT)
    assert got[:2] == ["algorithm.adv_estimator=grpo", "data.train_batch_size=256"]
    assert "actor_rollout_ref.actor.optim.lr=1e-6" in got and "actor_rollout_ref.rollout.n=8" in got
    assert "actor_rollout_ref.actor.clip_ratio_high=0.28" in got  # ${NAME:-default}, NAME unset in the script
    assert "data.train_files=$HOME/data/gsm8k/train.parquet" in got  # the caller's variable, as written
    assert 'trainer.logger=["console","tensorboard"]' in got and "+trainer.total_training_steps=300" in got  # + kept
    assert not any(item.startswith(("~", "$@", "2>&1", "tee")) for item in got) and got[-1] == "trainer.total_epochs=15"


def test_a_launch_script_is_read_as_the_verl_config_it_sets(tmp_path):
    path = tmp_path / "run_grpo.sh"
    path.write_text(SCRIPT)
    cfg = load_config_file(path)
    assert cfg["actor_rollout_ref"]["actor"]["optim"]["lr"] == 1e-6 and cfg["actor_rollout_ref"]["rollout"]["n"] == 8
    setup = read_run_config(path)
    assert setup.framework == "verl" and setup.hparams.lr == 1e-6 and setup.hparams.group_size == 8
    assert setup.hparams.refresh_interval == 4 and setup.run_steps == 300  # 256 / 64 updates per rollout


@pytest.mark.parametrize("base", ["--config-path=config --config-name='ppo_megatron_trainer.yaml'",
                                  "--config-path=./config --config-name=ppo_trainer", "--config-name ppo_megatron_trainer",
                                  "-cn ppo_trainer"])
def test_a_script_on_one_of_verls_own_base_configs_is_read_on_its_defaults(base):
    """verl's examples launch their Megatron runs on its shipped `ppo_megatron_trainer.yaml` (Hydra finds `config`
    beside verl/trainer/main_ppo.py): its defaults are the loader's, so the overrides are the whole config."""
    text = SCRIPT.replace("python3 -m verl.trainer.main_ppo \\\n", f"python3 -m verl.trainer.main_ppo {base} \\\n")
    assert base in text
    assert "actor_rollout_ref.rollout.n=8" in overrides_of(text)


@pytest.mark.parametrize("text, words", [
    ("python3 -m verl.trainer.main_ppo --config-name=my_grpo actor_rollout_ref.rollout.n=8\n", "names its own base config"),
    ("python3 -m verl.trainer.main_ppo --config-path=$(pwd)/mine --config-name=ppo_trainer a.b=1\n", "names its own base"),
    ("python3 -m recipe.mine.main_ppo --config-path=config --config-name=ppo_trainer a.b=1\n", "names its own base"),
    ("echo hello\npython3 train.py --lr 1e-6\n", "runs no verl trainer"),
    # a fork's entry point (audit s38 D8): its own base config is in its code, so the run's resolved config is asked for
    ("python3 -m verl.trainer.main_ppo_sent_rind actor_rollout_ref.rollout.n=8\n",
     r"runs verl\.trainer\.main_ppo_sent_rind, a fork's own entry point .* \.hydra/config\.yaml"),
])
def test_a_script_whose_config_is_elsewhere_or_that_runs_no_verl_trainer_is_one_clear_error(tmp_path, text, words):
    path = tmp_path / "run.sh"
    path.write_text(text)
    with pytest.raises(ConfigError, match=words):
        load_config_file(path)


def test_a_key_added_by_hydras_plus_is_named_as_added_not_as_a_misspelling(tmp_path):
    """`+key=` is Hydra's add-a-key: the user meant it, so no refusal and no "did you mean"; the key is not read, said
    once in the first lines. A key written without the `+` that verl does not have is still a typo, refused."""
    path = tmp_path / "run_grpo.sh"
    path.write_text(SCRIPT.replace("~trainer.val_before_train", "+actor_rollout_ref.rollout.my_sampler_knob=0.7 \\\n"
                                   "    ++actor_rollout_ref.actor.my_fork_coef=0.2"))
    setup = read_run_config(path, overrides=["+algorithm.my_bonus=0.1"])
    added = ("actor_rollout_ref.actor.my_fork_coef", "actor_rollout_ref.rollout.my_sampler_knob", "algorithm.my_bonus")
    assert setup.added == added and setup.unknown == ()
    line = f"added by +key, not in verl 0.9.1's schema, not read: {', '.join(added)}"
    assert [x for x in setup.brief_lines() if "added" in x] == [line]
    assert setup.brief_json()["added_keys"] == list(added)
    assert not any("my_bonus" in note or "did you mean" in note for note in setup.notes)
    assert setup.hparams.group_size == 8 and setup.run_steps == 300  # a known key added with + is read as usual
    many = read_run_config(path, overrides=[f"+reward_model.my_kwargs.k{i}=1" for i in range(7)])
    (line,) = [x for x in many.brief_lines() if x.startswith("added by +key")]
    assert line.endswith("and 4 more (--json lists them)") and len(many.brief_json()["added_keys"]) == 9  # 2 + 7
    plain = tmp_path / "plain.sh"
    plain.write_text(SCRIPT)
    with pytest.raises(ConfigError, match=r"has no key --set actor_rollout_ref.rollout.my_sampler_knob: a misspelt key"):
        read_run_config(plain, overrides=["actor_rollout_ref.rollout.my_sampler_knob=0.7"])  # no +: refused
    # a fork's validation key (a word `val` under rollout.) changes no step: read past, + or not
    assert read_run_config(plain, overrides=["actor_rollout_ref.rollout.val_temperature=0.7"]).unknown == ()


GROUPED = """#!/bin/bash
nproc=4; nodes=2
train_bsz=$(( nproc * nodes * 8 ))    # 64
max_len=$(((512 + 1024) * 2))
half=$(( -7 / 2 ))
DATA=(
    data.train_batch_size=$train_bsz
    # data.shuffle=True  (a comment inside the array)
    data.max_response_length=$max_len
)
ACTOR="
    actor_rollout_ref.actor.optim.lr=1e-6 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=$((train_bsz / 4))
    actor_rollout_ref.actor.clip_ratio_low=0.2"
python3 -m verl.trainer.main_ppo --config-path=config --config-name='ppo_megatron_trainer.yaml' \\
    algorithm.adv_estimator=grpo \\
    "${DATA[@]}" \\
    $ACTOR \\
    actor_rollout_ref.rollout.n=$(( 2 ** 3 )) \\
    trainer.total_training_steps=$half
"""


def test_arrays_multi_line_strings_and_integer_arithmetic_are_expanded_as_the_shell_does():
    """verl's newer examples group their overrides in arrays (DATA=(...), "${DATA[@]}") and multi-line strings
    ($ACTOR), and compute batch sizes with $(( )); an expression outside integer + - * / % stays as written."""
    got = overrides_of(GROUPED)
    assert got[:3] == ["algorithm.adv_estimator=grpo", "data.train_batch_size=64", "data.max_response_length=3072"]
    assert "actor_rollout_ref.actor.ppo_mini_batch_size=16" in got and "actor_rollout_ref.actor.optim.lr=1e-6" in got
    assert "actor_rollout_ref.actor.clip_ratio_low=0.2" in got and not any("shuffle" in w for w in got)
    assert "actor_rollout_ref.rollout.n=$((" in got  # ** is not the shell's: as written, so the key fails by name
    assert "trainer.total_training_steps=-3" in got  # the shell's / truncates toward 0


@pytest.mark.parametrize("a, b", [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, 3), (0, 5)])
def test_the_shells_integer_division_and_remainder_truncate_toward_zero(a, b):
    from gspo_dynamics._launch_script import _expanded

    assert _expanded(f"$(( {a} / {b} )) $(( {a} % {b} ))", {}) == f"{int(a / b)} {a - b * int(a / b)}"


def test_one_expansion_serves_verl_and_openrlhf():
    """`command_words` finds each trainer's command after the same expansion: a verl script is not OpenRLHF's, and the
    words of an OpenRLHF command after `ray job submit ... --` are its arguments."""
    from gspo_dynamics._launch_script import openrlhf_arguments, runs_openrlhf

    assert not runs_openrlhf(SCRIPT) and not runs_openrlhf(GROUPED)
    text = "N=4\nray job submit --address=x -- python3 -m openrlhf.cli.train_ppo_ray --n_samples_per_prompt $((N*2))\n"
    assert runs_openrlhf(text) and openrlhf_arguments(text) == {"n_samples_per_prompt": "8"}
    with pytest.raises(ConfigError, match="runs no verl trainer .* OpenRLHF's .* nor TRL's"):
        overrides_of("python3 train.py --lr 1e-6\n")


def test_a_script_that_runs_the_trainer_twice_is_one_clear_error_not_its_first_run_read():
    """Two commands (two runs, or an if's two branches): which one the user means the script does not say (audit
    s31: the first was read, the second's lr 5e-6 unsaid)."""
    with pytest.raises(ConfigError, match=r"runs verl.trainer.main_ppo 2 times \(two runs, or one per branch of an if\)"):
        overrides_of(SCRIPT + SCRIPT.replace("LR=1e-6", "LR=5e-6"))


def test_a_default_holding_a_variable_and_a_clones_verl_config_folder_are_read():
    """`${CONFIG_DIR:-"${HOME}/verl/trainer/config"}` (a default with a variable of its own) expands whole, and a
    clone's copy of verl's config folder holds verl's own bases (audit s31: Weigaa/qwen30b_tpu_verl)."""
    text = ('HOME=$(pwd)\nCONFIG_DIR=${CONFIG_DIR:-"${HOME}/verl/trainer/config"}\n'
            + SCRIPT.replace("python3 -m verl.trainer.main_ppo \\\n", 'python3 -m verl.trainer.main_ppo '
                             '--config-path="${CONFIG_DIR}" --config-name=ppo_megatron_trainer \\\n'))
    assert "actor_rollout_ref.rollout.n=8" in overrides_of(text)
    other = text.replace("verl/trainer/config", "my/configs")
    with pytest.raises(ConfigError, match=r"names its own base config \(--config-path=\$\(pwd\)/my/configs "):
        overrides_of(other)


def test_search_r1s_format_entry_is_its_trainer():
    """Search-R1's `verl.trainer.main_ppo_format` (its trainer with a format reward) is read as main_ppo is."""
    script = SCRIPT.replace("verl.trainer.main_ppo ", "verl.trainer.main_ppo_format ")
    assert overrides_of(script) == overrides_of(SCRIPT)


def test_a_value_that_is_not_yaml_is_kept_as_written(tmp_path):
    """A data path list holding the caller's $HOME (`data.train_files="[${HOME}/a.parquet, ...]"`) is no YAML: kept as
    its text, so a key that changes no step does not stop the read, and one the mapping reads fails by name."""
    script = SCRIPT.replace("data.train_files=$HOME/data/gsm8k/train.parquet",
                            'data.train_files="[${HOME}/a.parquet, ${HOME}/b.parquet]"')
    path = tmp_path / "run.sh"
    path.write_text(script)
    assert load_config_file(path)["data"]["train_files"] == "[${HOME}/a.parquet, ${HOME}/b.parquet]"
    assert read_run_config(path).hparams.group_size == 8
    path.write_text(SCRIPT.replace("optim.lr=${LR}", 'optim.lr="[1e-6"'))
    with pytest.raises(ConfigError, match="'actor_rollout_ref.actor.optim.lr' must be a positive number, got '\\[1e-6'"):
        read_run_config(path)


def test_a_single_quoted_string_over_several_lines_is_one_word():
    """`ray job submit --runtime-env-json='{...}' -- python -m verl.trainer.main_ppo ...` with the JSON over several
    lines (simpleRL-reason's scripts): the quote spans the lines, as the shell reads it, and the command is found."""
    script = ("ray job submit --address=x \\\n  --runtime-env-json='{\n    \"working_dir\": \"'${WD}'\",\n"
              "    \"env_vars\": {\"A\": \"1\"}\n  }' \\\n  -- python -m verl.trainer.main_ppo \\\n"
              "  algorithm.adv_estimator=grpo actor_rollout_ref.rollout.n=8\n")
    assert overrides_of(script) == ["algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=8"]


def test_verls_dapo_recipe_is_read_with_its_own_keys():
    """`python3 -m recipe.dapo.main_dapo` (verl's DAPO recipe, its dapo_trainer.yaml on ppo_trainer): read as verl,
    its gen_batch_size and overlong_buffer.* its own, the overlong penalty named as not modelled where on."""
    script = SCRIPT.replace("verl.trainer.main_ppo ", "recipe.dapo.main_dapo ").replace(
        "trainer.total_epochs=15", "data.gen_batch_size=384 reward_model.overlong_buffer.enable=True "
        "reward_model.overlong_buffer.len=512 reward_model.overlong_buffer.penalty_factor=1.0 trainer.total_epochs=15")
    cfg = {}
    from gspo_dynamics._config_file import set_override

    for item in overrides_of(script):
        set_override(cfg, item)
    setup = read_run_config(cfg)
    assert not setup.unknown and setup.hparams.group_size == 8
    assert ("reward_model.overlong_buffer.enable", True) in {(k, v) for k, v, _ in setup.unmodelled}


def test_a_default_takes_over_an_empty_value_as_the_shell_does():
    """`X=${X:-}` then `${X:-512}` is 512 in bash (`:-`: unset or empty), and `${X-512}` keeps the empty value (audit
    s38c C1: verl's own GSPO example was refused as missing data.train_batch_size)."""
    text = ("TBS=${TBS:-}\nA=${TBS:-512}\nB=${TBS-256}\npython3 -m verl.trainer.main_ppo data.train_batch_size=$A "
            "data.val_batch_size=x$B\n")
    got = overrides_of(text)
    assert "data.train_batch_size=512" in got and "data.val_batch_size=x" in got


@pytest.mark.parametrize("device, batch", [("gpu", 512), ("npu", 256), ("tpu", 1024)])
def test_a_case_on_the_scripts_own_variable_runs_its_matching_branch(device, batch):
    """`case "$DEVICE" in gpu) ...;; npu) ...;; *) ...;; esac` (audit s38c C3: read on the last branch, the NPU's):
    the branch the script's DEVICE matches, the first match winning as in the shell, `*` the rest."""
    text = (f"DEVICE={device}\ncase \"${{DEVICE}}\" in\n    gpu)\n        echo \"gpu run)\"\n        TBS=512\n        ;;\n"
            "    npu|ascend) TBS=256 ;;\n"
            "    *)\n        TBS=1024\n        ;;\nesac\npython3 -m verl.trainer.main_ppo data.train_batch_size=$TBS\n")
    assert f"data.train_batch_size={batch}" in overrides_of(text)


def test_a_case_on_a_variable_the_script_does_not_set_reads_on_the_last_assignment():
    text = "case \"$1\" in\n  a) TBS=512 ;;\n  b) TBS=256 ;;\nesac\npython3 -m verl.trainer.main_ppo data.train_batch_size=$TBS\n"
    assert "data.train_batch_size=256" in overrides_of(text)


@pytest.mark.parametrize("argument", ["$OPTARG", '"$OPTARG"', "${OPTARG}", '"$2"', "$1"])
def test_an_options_argument_is_set_only_where_the_caller_passes_it(argument):
    """Audit s43c D3: `while getopts ...; case ${opt} in n ) N=$OPTARG;; esac; done` then `N=${N:-8}` read G as
    '$OPTARG' (an error) where the shell, without -n, gives 8: the option's branch runs only where it is passed, so
    the script's own default stands; likewise an argument loop's `N="$2"`."""
    text = (f'while getopts ":n:t:" opt; do\n  case ${{opt}} in\n    n ) N={argument};;\n    t ) T=$OPTARG;;\n'
            '  esac\ndone\nN="${N:-8}"\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.n=$N\n')
    assert "actor_rollout_ref.rollout.n=8" in overrides_of(text)
    unset = text.replace('N="${N:-8}"\n', "")  # no default of the script's own: the value stays unknown, by name
    assert "actor_rollout_ref.rollout.n=$N" in overrides_of(unset)


@pytest.mark.parametrize("script, said", [
    ('case "$1" in\n  a) TBS=512 ;;\n  b)\n    TBS=256\n    ;;\nesac\n', ["TBS"]),  # the shell's argument: unsaid before
    ('case "$1" in\n  a) TBS=512 ;;\n  b) N=8 ;;\nesac\n', []),  # each variable in one branch: nothing guessed
    ('D=gpu\ncase "$D" in\n  gpu) TBS=512 ;;\n  *) TBS=256 ;;\nesac\n', []),  # the script's own subject: one branch runs
    ('case "$1" in\n  a) TBS=1 ; TBS=2 ;;\nesac\n', []),  # twice in one branch: the shell's own order, no guess
])
def test_a_variable_set_in_several_branches_of_an_unknown_case_is_said(script, said):
    """A case on a subject the script does not give (`case "$1" in`) is read on its last branch: said like an if's
    (session 38's note: a case's guess was unsaid), and only where two branches assign the same variable."""
    from gspo_dynamics._launch_script import branch_assignments

    assert branch_assignments(script + "python3 -m verl.trainer.main_ppo data.train_batch_size=$TBS\n") == said


def test_a_variable_set_in_both_branches_of_an_if_is_read_on_the_last_and_said(tmp_path):
    """Which branch of an if runs is the shell's to decide (audit s38c C3): the last assignment is read, and the
    first lines say so with the way to give the branch run; a script without such a variable says nothing."""
    from gspo_dynamics.predict import read_run_config

    command = ("python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=$TBS "
               "actor_rollout_ref.actor.ppo_mini_batch_size=128 actor_rollout_ref.rollout.n=8\n")
    path = tmp_path / "run.sh"
    path.write_text('if [ "$DEVICE" = gpu ]; then\n  TBS=512\nelse\n  TBS=256\nfi\n' + command)
    setup = read_run_config(path)
    assert setup.hparams.refresh_interval == 2  # read on the last branch: T = 256 / 128 (the first's would be 4)
    assert any(line.startswith("the script assigns TBS in more than one branch of an if or case: read on the last")
               for line in setup.brief_lines())
    path.write_text("TBS=512\nif [ -z \"$X\" ]; then X=1; fi\n" + command)
    assert not any("more than one branch" in line for line in read_run_config(path).brief_lines())


@pytest.mark.parametrize("assign", ["T1=\"$(awk -v s=\"${S}\" '\n  $0 ~ s { print $2 }\n' \"${LOG}\")\"",
                                    "T1=`cat best.txt`", "T1=$(cat best.txt | tail -n 1)"])
def test_a_variable_set_to_a_commands_output_is_one_unknown_word(assign):
    """A command's output is not known from the script (audit s39c 4: a multi-line awk program's text was spliced into
    the command line and made a key `...temperature.$(awk -v step=$(awk -F`, the real key lost): the key keeps its
    name, its value reads `$(command)`, and a `${T1:-1.2}` fallback does not replace it (the variable is set)."""
    from gspo_dynamics._launch_script import COMMAND_OUTPUT

    text = (f"{assign}\nT1=\"${{T1:-1.2}}\"\nN=$((2 * 4))\npython3 -m verl.trainer.main_ppo "
            "actor_rollout_ref.rollout.temperature=\"${T1}\" actor_rollout_ref.rollout.n=$N\n")
    got = overrides_of(text)
    assert f"actor_rollout_ref.rollout.temperature={COMMAND_OUTPUT}" in got and "actor_rollout_ref.rollout.n=8" in got
    assert not any("awk" in word or "cat" in word for word in got)


def test_a_command_inside_single_quotes_is_text_not_a_commands_output():
    """`X='$(a b)'` is that text in the shell (single quotes substitute nothing); `X="$(a b)"` runs the command."""
    from gspo_dynamics._launch_script import COMMAND_OUTPUT

    command = "python3 -m verl.trainer.main_ppo trainer.experiment_name=\"$NAME\" actor_rollout_ref.rollout.n=8\n"
    assert "trainer.experiment_name=$(date +%s)" in overrides_of("NAME='$(date +%s)'\n" + command)
    assert f"trainer.experiment_name={COMMAND_OUTPUT}" in overrides_of('NAME="$(date +%s)"\n' + command)
    assert f"trainer.experiment_name={COMMAND_OUTPUT}" in overrides_of("NAME=\"it's $(date +%s)\"\n" + command)


@pytest.mark.parametrize("written", ["$NRESP", "${NRESP}"])
def test_a_variable_the_script_never_sets_is_one_error_naming_it_and_the_set_that_gives_it(tmp_path, written, monkeypatch):
    """Audit s43c D5: `rollout.n=$NRESP` was "must be a positive integer, got '$NRESP'" and `${NRESP}` "an
    interpolation this reader cannot resolve ... give the value": both forms now name the script's variable and the
    --set that gives it; the caller's environment is not read (an exported NRESP changes nothing)."""
    monkeypatch.setenv("NRESP", "8")
    path = tmp_path / "run.sh"
    path.write_text(f"python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo actor_rollout_ref.rollout.n={written} "
                    "actor_rollout_ref.actor.optim.lr=1e-6\n")
    with pytest.raises(ConfigError) as err:
        read_run_config(path)
    assert "the launch script does not set" in str(err.value) or "script's variable the script does not set" in str(err.value)
    assert "--set actor_rollout_ref.rollout.n=VALUE" in str(err.value)


def test_a_forks_own_entry_point_with_verls_keys_is_named_in_its_refusal():
    """Audit s43c D4: `python -m sp3f.main_grpo` followed by verl's Hydra keys was refused as running "no verl
    trainer", the command unnamed. It is a fork's trainer, whose base config is its own: refused as such, named."""
    text = ("python -m sp3f.main_grpo algorithm.adv_estimator=grpo data.train_batch_size=32 "
            "actor_rollout_ref.rollout.n=8 actor_rollout_ref.actor.optim.lr=5e-7\n")
    with pytest.raises(ConfigError, match=r"runs sp3f\.main_grpo with 4 of verl's keys: a fork's own entry point"):
        overrides_of(text)
    with pytest.raises(ConfigError, match="runs no verl trainer"):  # a main_ script with no verl keys is no fork of it
        overrides_of("python -m tool.main_eval --n 8 --lr 1e-6\n")

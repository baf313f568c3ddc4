"""The checks of ``train.py``'s config that a type cannot express (positive counts, known env ids, a teacher the
env can have); the types are :mod:`agents.config.schema`'s.

:func:`validate` raises :class:`ConfigError` naming the offending key and the fix. Only training runs it: the
modules it needs to check a value (the learner factory, the vector env, the controller teacher's parameters)
are imported when a config is checked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_args

from omegaconf import DictConfig, OmegaConf

from agents.config.teacher_kinds import LLM_PROPOSERS, PROPOSERS, TEACHERS, VERIFY_ON, old_name_refusal
from agents.config.tree import config_leaves
from agents.errors import ConfigError, check_seed, env_error
from agents.teachers.stages import controller_stage, masked_stages, stage_spans, teaching_stages

if TYPE_CHECKING:
    from envs.declarations import ControllerSpec


_POSITIVE = {
    "train.total_timesteps": "the number of environment steps to train for",
    "train.num_envs": "how many environments are simulated in parallel",
    "train.eval_episodes": "evaluation episodes per evaluation",
    "train.eval_envs": "evaluation environments",
    "train.checkpoint_freq": "env steps between checkpoints",
    "train.keep_checkpoints": "checkpoints kept on disk",
    "train.torch_threads": "threads torch computes with",
    "train.log_interval": "rollouts (PPO) or episodes (SAC) between logs",
}

# agent key: (valid?, what a valid value is); checked when the agent has the key
_AGENT_RULES: dict[str, tuple[Any, str]] = {
    "learning_rate": (lambda v: v > 0, "> 0"),
    "n_steps": (lambda v: v >= 1, ">= 1"),
    "batch_size": (lambda v: v >= 2, ">= 2"),
    "n_epochs": (lambda v: v >= 1, ">= 1"),
    "gamma": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "gae_lambda": (lambda v: 0 <= v <= 1, "in [0, 1]"),
    "clip_range": (lambda v: v > 0, "> 0"),
    "ent_coef": (lambda v: _sac_ent_coef(v) if isinstance(v, str) else v >= 0,
                 ">= 0 (SAC: 'auto', 'auto_<initial value > 0>' or a number > 0)"),
    "vf_coef": (lambda v: v >= 0, ">= 0"),
    "max_grad_norm": (lambda v: v > 0, "> 0"),
    "target_kl": (lambda v: v is None or v > 0, "> 0 or null"),
    "desired_kl": (lambda v: v is None or v > 0, "> 0 or null"),
    "net_arch": (lambda v: len(v) > 0 and all(n >= 1 for n in v), "a non-empty list of layer widths >= 1"),
    "buffer_size": (lambda v: v >= 1, ">= 1"),
    "learning_starts": (lambda v: v >= 0, ">= 0"),
    "tau": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "train_freq": (lambda v: v >= 1, ">= 1"),
    "gradient_steps": (lambda v: v >= 1 or v == -1, ">= 1, or -1 (as many as env steps)"),
    "her_n_sampled_goal": (lambda v: v >= 1, ">= 1"),
}


def _sac_ent_coef(value: str) -> bool:
    if value == "auto":
        return True
    try:
        return 0 < float(value.removeprefix("auto_")) < math.inf
    except ValueError:
        return False

def _choices() -> dict[str, tuple[str, ...]]:
    """key: the values it may take, read from the code that owns them (imported when a config is checked)."""
    from stable_baselines3.her.goal_selection_strategy import KEY_TO_GOAL_STRATEGY

    from agents.factory import ACTIVATIONS
    from agents.vec_env import VEC_MODES
    from distill.kl import Direction
    from distill.schedules import SCHEDULES

    return {
        "train.vec_mode": VEC_MODES,
        "agent.activation": tuple(ACTIVATIONS),
        "distill.name": tuple(TEACHERS),
        "distill.schedule": SCHEDULES,
        "distill.direction": get_args(Direction),
        "distill.ema_condition": ("always", "eval_not_worse"),
        "distill.teacher_checkpoint": ("best", "latest"),
        "agent.her_goal_selection_strategy": tuple(KEY_TO_GOAL_STRATEGY),
    }


def _check_choices(cfg: DictConfig, choices: dict[str, tuple[str, ...]]) -> None:
    """:class:`ConfigError` naming the first key of ``choices`` whose value in ``cfg`` is not one of its choices."""
    for key, allowed in choices.items():
        value = OmegaConf.select(cfg, key)
        if value is not None and value not in allowed:
            raise ConfigError(f"{key}={value!r} is invalid; choose one of: {', '.join(allowed)}")


@dataclass
class Checked:
    """What :func:`validate` loaded to check the config, handed to the run (:func:`agents.training.runner.train`) so
    that it is not loaded twice: each checkpoint teacher's run, ``(absolute run directory, teacher_checkpoint)`` ->
    its intact checkpoint's learner and normalisation (:func:`agents.teachers.builders.teacher_checkpoint`)."""

    teacher_runs: dict[tuple[str, str], Any] = field(default_factory=dict)


def _check_warp(cfg: DictConfig) -> None:
    """``sim=warp`` (``train.vec_mode=warp``): MuJoCo Warp installed and the training env one it runs."""
    import importlib.util

    import gymnasium as gym

    from agents.vec_env import env_kwargs

    if importlib.util.find_spec("mujoco_warp") is None:
        raise ConfigError('sim=warp needs MuJoCo Warp: pip install -e ".[gpu]" (or train on C MuJoCo: sim=mujoco)')
    from envs.quadruped.warp_sim import warp_refusal

    env = gym.make(cfg.env.id, **env_kwargs(cfg))
    problem = warp_refusal(env.unwrapped)
    env.close()
    if problem:
        raise ConfigError(f"sim=warp with env={cfg.env.name}: {problem}; train it on C MuJoCo (sim=mujoco)")
    if cfg.agent.name != "ppo":  # SAC learns on the host from the worlds' numpy copies: any teacher
        return
    from agents.teachers.stages import controller_stage

    stage = controller_stage(cfg.distill)
    if stage is not None and stage.distill.name != "scripted":
        raise ConfigError(f"sim=warp: the {stage.distill.name} teacher learns from each env's step outcomes on the "
                          "host, and PPO on Warp collects on the device; teach with distill=scripted there, or train "
                          "on C MuJoCo (sim=mujoco)")


def _validate_env(cfg: DictConfig, checked: Checked) -> ControllerSpec | None:
    """Construct the training env once (and the evaluation env as the video recorder will) and return the training
    env's controller spec (None for an env without a scripted controller): bad
    ``env.kwargs`` / ``env.eval_kwargs`` values (each argument's declared kind, bounds and choices), a model
    that contradicts the env config's name (:mod:`agents.training.env_names`) and video sizes the renderer cannot
    draw fail here, and so do what the learner and the teacher need of its spaces (privileged observations, a
    checkpoint teacher's, a PPO actor's history encoder)."""
    import gymnasium as gym

    from agents.evaluation.video import recordable
    from agents.factory import check_privileged, history_frames
    from agents.training.env_names import named_model_problem
    from agents.vec_env import env_kwargs, is_goal_space
    from envs.base import EnvConfig

    t = cfg.train
    eval_kwargs, eval_keys = env_kwargs(cfg, evaluation=True), "env.kwargs or env.eval_kwargs"
    if t.video and t.eval_freq > 0:
        eval_kwargs = recordable(eval_kwargs, t.video_width, t.video_height)[0]
        eval_keys = "train.video_width/train.video_height, " + eval_keys
    specs = []
    for kwargs, where in ((env_kwargs(cfg), "env.kwargs"), (eval_kwargs, eval_keys)):
        try:
            env = gym.make(cfg.env.id, **kwargs)
        except (TypeError, ValueError, gym.error.Error) as err:
            raise ConfigError(f"{where}: {cfg.env.id} cannot be made: {env_error(err)}") from None
        specs.append(getattr(env.unwrapped, "controller_spec", None))
        if len(specs) == 1:  # the training env's gait clock, which a checkpoint teacher reads
            student_hz = _clock_hz(env.unwrapped)
        space, actions, config = env.observation_space, env.action_space, getattr(env.unwrapped, "config", None)
        privileged = getattr(env.unwrapped, "privileged_obs", None)
        frames = getattr(env.unwrapped, "history_frames", None)
        env.close()
        problem = named_model_problem(cfg.env.name, config) if isinstance(config, EnvConfig) else None
        if problem:
            raise ConfigError(problem)
    if t.vec_mode == "warp":
        _check_warp(cfg)
    check_privileged(cfg.agent, privileged, cfg.env.id)
    if cfg.agent.name == "ppo":
        history_frames(cfg.agent.history_encoder, frames)
    for stage in _run_readers(cfg.distill):
        _validate_teacher_run(stage.distill, space, actions, (cfg.env.id, env_kwargs(cfg)), cfg.train.device, checked)
        if controller_stage(cfg.distill) is None:  # a scripted teacher retimes the student's clock to its own
            _check_teacher_clock(stage.distill, student_hz)
    recording = controller_stage(cfg.distill) is not None or masked_stages(cfg.distill)
    if recording and cfg.agent.name == "sac" and cfg.agent.her and is_goal_space(space):
        raise ConfigError(f"distill={cfg.distill.name} records the teacher's action or weight with each transition; HER "
                          "relabels them: add agent.her=false")
    return specs[0]


def _validate_teacher_run(d: DictConfig, space: Any, actions: Any, student_env: tuple[str, dict[str, Any]],
                          device: str, checked: Checked) -> None:
    """The checkpoint teacher's run has an intact checkpoint (``distill.teacher_checkpoint``'s, or the newest intact
    one), of a learner that acts in ``actions`` (the student's) and observes ``space`` (the student's observation
    space) or entries of it (``student_env``: the student's env id and kwargs; :mod:`agents.teachers.observation_map`).
    The checkpoint, loaded on the run's ``device``, goes into ``checked``."""
    from agents.teachers.builders import teacher_checkpoint, teacher_observation_index, teacher_run_key

    intact = teacher_checkpoint(d.teacher, d.teacher_checkpoint, device)
    teacher_observation_index(d.teacher, intact.value[0], (space, actions), student_env)
    checked.teacher_runs[teacher_run_key(d)] = intact


def _clock_hz(env: Any) -> float | None:
    """The gait clock's frequency (Hz) of the unwrapped ``env``, or None for an env without one."""
    return float(env.gait_frequency_hz) if getattr(env, "gait_clock", False) else None


def _check_teacher_clock(d: DictConfig, student_hz: float | None) -> None:
    """A checkpoint teacher whose observation holds a gait clock must read it at the frequency it trained with (its
    run's env ``gait_frequency_hz``: a scripted trot that taught that run retimed the clock to its own): the student's
    env's (``student_hz``), or the teacher reads phases it never saw (the Go2 stairs specialist, trained at 2.88 Hz,
    stands at 2.5)."""
    import gymnasium as gym

    from agents import saved_config
    from agents.vec_env import env_kwargs

    saved = saved_config.load(d.teacher, "distill.teacher")
    teacher = gym.make(saved.env.id, **env_kwargs(saved))
    teacher_hz = _clock_hz(teacher.unwrapped)
    teacher.close()
    if teacher_hz is not None and student_hz is not None and not math.isclose(teacher_hz, student_hz, rel_tol=1e-9):
        raise ConfigError(f"distill.teacher={d.teacher} trained with its gait clock at {teacher_hz!r} Hz and this "
                          f"run's env runs it at {student_hz!r} Hz: the teacher would read clock phases it never saw "
                          f"(and may stand). Run the student's clock at the teacher's: "
                          f"+env.kwargs.gait_frequency_hz={teacher_hz!r}")


def validate(cfg: DictConfig) -> Checked:
    """Check values that a type cannot; raise :class:`ConfigError` naming the key and the fix. Returns what it loaded
    to check them (:class:`Checked`), for the run."""
    import gymnasium as gym

    import envs  # noqa: F401  (registers the OpenClaw ids)
    from agents.factory import check_device

    old_name = old_name_refusal("distill.name", cfg.distill.name)  # a saved run's config.yaml was read with the new one
    if old_name:
        raise ConfigError(old_name)
    bad = next(((path, value) for path, _, value in config_leaves(OmegaConf.to_container(cfg, resolve=True))
                if isinstance(value, float) and not math.isfinite(value)), None)
    if bad is not None:
        raise ConfigError(f"{bad[0]}={bad[1]} is invalid: it must be a finite number")
    check_seed("seed", cfg.seed)
    for key, meaning in _POSITIVE.items():
        value = OmegaConf.select(cfg, key)
        if value is not None and value <= 0:
            raise ConfigError(f"{key}={value} is invalid: {meaning} must be a positive integer")
    _check_choices(cfg, _choices())
    if cfg.train.eval_freq < 0:
        raise ConfigError(f"train.eval_freq={cfg.train.eval_freq} is invalid: use 0 to disable evaluation")
    t = cfg.train
    if t.video and not 1 <= t.video_episodes <= t.eval_episodes:
        raise ConfigError(f"train.video_episodes={t.video_episodes} must be in [1, train.eval_episodes={t.eval_episodes}]")
    if t.video and (t.video_width % 2 or t.video_height % 2 or min(t.video_width, t.video_height) <= 0):
        raise ConfigError("train.video_width and train.video_height must be positive even numbers (H.264 video)")
    if cfg.env.id not in gym.registry:
        known = sorted(k for k in gym.registry if k.startswith("OpenClaw/"))
        raise ConfigError(f"env.id={cfg.env.id!r} is not a registered Gymnasium id; OpenClaw ids: {', '.join(known)}")
    agent = cfg.agent
    for key, (valid, requirement) in _AGENT_RULES.items():
        if key in agent and not valid(agent[key]):
            raise ConfigError(f"agent.{key}={agent[key]} is invalid: it must be {requirement}")
    check_device("train.device", t.device)
    if agent.name == "ppo" and (agent.n_steps * cfg.train.num_envs) % agent.batch_size:
        raise ConfigError(
            f"agent.batch_size={agent.batch_size} must divide agent.n_steps * train.num_envs "
            f"= {agent.n_steps * cfg.train.num_envs}"
        )
    n = cfg.train.num_envs
    if agent.name == "sac" and agent.buffer_size // n * n < agent.batch_size:
        raise ConfigError(
            f"agent.buffer_size={agent.buffer_size} holds fewer transitions than one batch (agent.batch_size="
            f"{agent.batch_size}; SB3 keeps buffer_size // train.num_envs of them per env), so every update would "
            f"train on repeats of the same few; use agent.buffer_size >= {-(-agent.batch_size // n) * n}"
        )
    _validate_distill(cfg.distill)
    _validate_stages(cfg)
    _check_teacher_is_read(cfg.distill)
    _validate_teach_contexts(cfg.distill)
    controller = controller_stage(cfg.distill) is not None
    if controller:
        _validate_controller_teacher(cfg)
    checked = Checked()
    spec = _validate_env(cfg, checked)
    if controller:
        _validate_controller_params(cfg, spec)
    return checked


def _validate_controller_params(cfg: DictConfig, spec: ControllerSpec | None) -> None:
    """The controller teacher's starting parameters (``distill.controller_params``): a resumed run's file unchanged,
    the file's parameters the family's, made for the robot of the training env's controller ``spec``."""
    from agents.teachers.controller import CONTROLLER_PARAMS, starting_params
    from agents.training.inputs import check_pinned
    from envs.controllers import family_of_id

    d = cfg.distill
    check_pinned(cfg)  # a resume: the parameter file the run started from, unchanged
    family = family_of_id(cfg.env.id)
    try:
        starting_params(family, d.controller_params, spec)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"distill.controller_params={d.controller_params!r}: {err}; use {' or '.join(CONTROLLER_PARAMS)}, "
                          f"or a JSON file of the {family.family} controller's parameters") from None


def _validate_controller_teacher(cfg: DictConfig) -> None:
    from pathlib import Path

    from envs.controllers import family_of_id

    d = cfg.distill
    if d.teacher_std <= 0:
        raise ConfigError(f"distill.teacher_std={d.teacher_std} is invalid: the teacher's std must be > 0")
    for key in ("segment_steps", "hint_max_age", "verify_rollouts", "verify_steps"):
        if d[key] < 1:
            raise ConfigError(f"distill.{key}={d[key]} is invalid: it must be >= 1")
    try:
        family_of_id(cfg.env.id)
    except ValueError as err:
        raise ConfigError(f"distill={d.name} needs a scripted controller: {err}; "
                          "choose another env or distill=none|ema|checkpoint") from None
    if d.proposer not in PROPOSERS:
        raise ConfigError(f"distill.proposer={d.proposer!r} is unknown; choose one of: {', '.join(PROPOSERS)}")
    if d.max_verified is not None and d.max_verified < 1:
        raise ConfigError(f"distill.max_verified={d.max_verified} is invalid: use >= 1, or null for no bound")
    if not 0 < d.search_sigma <= 1:
        raise ConfigError(f"distill.search_sigma={d.search_sigma} is invalid: use a step in (0, 1] of each bound's width")
    if d.search_popsize is not None and d.search_popsize < 2:
        raise ConfigError(f"distill.search_popsize={d.search_popsize} is invalid: use >= 2, or null for CMA-ES's default")
    if d.verify_on not in VERIFY_ON:
        raise ConfigError(f"distill.verify_on={d.verify_on!r} is unknown; choose one of: {', '.join(VERIFY_ON)}")
    if d.verify_margin < 0:
        raise ConfigError(f"distill.verify_margin={d.verify_margin} is invalid: use >= 0 (0 adopts any improvement)")
    confirm = d.get("verify_confirm_rollouts", 0)  # absent from a run saved before the setting: off, as it was made
    if confirm < 0:
        raise ConfigError(f"distill.verify_confirm_rollouts={confirm} is invalid: use >= 1 held-out episodes per "
                          "parameter set, or 0 for no confirmation")
    if d.verify_budget_s_per_min is not None and d.verify_budget_s_per_min <= 0:
        raise ConfigError(f"distill.verify_budget_s_per_min={d.verify_budget_s_per_min} is invalid: use a positive "
                          "number of CPU seconds per minute, null for no bound, or distill.verify_hints=false")
    if d.hint_replay and not Path(d.hint_replay).is_file():
        raise ConfigError(f"distill.hint_replay={d.hint_replay}: no such records file (<run dir>/records/*.jsonl)")
    if not TEACHERS[d.name].adaptive or d.proposer not in LLM_PROPOSERS:
        return
    from agents.teachers.adaptive import channel_config
    from coach.llm.errors import ChannelError
    from coach.llm.settings import check_settings

    try:
        settings = channel_config(cfg)  # the llm group's, as the run opens it (environment overrides applied)
    except ValueError as err:
        raise ConfigError(f"llm: {err}") from None
    if not d.hint_replay:  # a replay opens no channel
        try:
            check_settings(settings)
        except ChannelError as err:
            raise ConfigError(f"LLM channel: {err.message}") from None


def _validate_stages(cfg: DictConfig) -> None:
    """``distill=sequence``: its stages (:mod:`agents.teachers.stages`), each stage's values as :func:`_validate_distill`
    checks the section's, and that every stage starts before the run ends."""
    d = cfg.distill
    if d.name != "sequence":
        return
    try:
        stages = teaching_stages(d)
        stage_spans(stages, cfg.train.total_timesteps)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    choices = {key: allowed for key, allowed in _choices().items() if key.startswith("distill.")}
    for i, stage in enumerate(stages):
        try:
            _check_choices(OmegaConf.create({"distill": stage.distill}), choices)
            _validate_distill(stage.distill)
            if stage.distill.teacher_std <= 0:
                raise ConfigError(f"distill.teacher_std={stage.distill.teacher_std} is invalid: the teacher's std must be > 0")
        except ConfigError as err:
            raise ConfigError(f"distill.stages[{i}] ({stage.label}): {err}") from None


def _run_readers(d: DictConfig) -> list:
    """The stages of ``d`` (:func:`teaching_stages`) whose teacher reads a run directory (``distill.teacher``)."""
    return [stage for stage in teaching_stages(d) if TEACHERS[stage.distill.name].reads_run]


def _check_teacher_is_read(d: DictConfig) -> None:
    """``distill.teacher`` names a run that only a checkpoint teacher reads: refused where none would read it (a
    typo in the teacher kind, or a sequence without a checkpoint stage, would otherwise train without it)."""
    if d.teacher is None or _run_readers(d):
        return
    where = "none of its stages is a checkpoint" if d.name == "sequence" else "it does not read a run"
    raise ConfigError(f"distill.teacher={d.teacher} is set, but distill={d.name} has no teacher to read it ({where}): "
                      "use distill=checkpoint (or a sequence stage with name: checkpoint), or leave distill.teacher out")


def _validate_teach_contexts(d: DictConfig) -> None:
    """``teach_contexts``: a list of non-empty patterns, on one checkpoint teacher, in a run without a scripted teacher
    (both would record their weights in the same buffer field)."""
    stages = masked_stages(d)
    for stage in stages:
        where, patterns = ("distill" if d.name != "sequence" else f"distill.stages ({stage.label})"), stage.distill.teach_contexts
        if not TEACHERS[stage.distill.name].reads_run:
            raise ConfigError(f"{where}: teach_contexts is set on a {stage.distill.name} teacher; only a checkpoint "
                              "teacher takes it (the episodes' contexts it was trained on): move it to that stage or leave it out")
        if not OmegaConf.is_list(patterns) or not patterns or not all(isinstance(p, str) and p for p in patterns):
            raise ConfigError(f"{where}: teach_contexts={patterns} is invalid: use a list of patterns of the env's task "
                              "contexts (env.task_context().name, fnmatch), e.g. '[*/stairs_up/*,*/obstacles/*]', or null")
        if controller_stage(d) is not None:
            raise ConfigError(f"{where}: teach_contexts cannot be combined with a scripted teacher in the same run (both "
                              "record a weight with each sample): drop the scripted stage or teach_contexts")
    if len(stages) > 1:
        labels = " and ".join(repr(stage.label) for stage in stages)
        raise ConfigError(f"distill.stages: the stages {labels} set teach_contexts; one stage at most may (its weights "
                          "travel with the samples): keep it on one checkpoint stage and set the others' to null")


def _validate_distill(d: DictConfig) -> None:
    for key in ("alpha", "final_alpha"):
        if d[key] < 0:
            raise ConfigError(f"distill.{key}={d[key]} is invalid: the distillation weight must be >= 0")
    if not 0.0 <= d.min_coverage <= 1.0:
        raise ConfigError(f"distill.min_coverage={d.min_coverage} is invalid: it is a fraction of samples in [0, 1]")
    if d.schedule_steps is not None and d.schedule_steps < 1:
        raise ConfigError(f"distill.schedule_steps={d.schedule_steps} is invalid: use a number of env steps >= 1, "
                          "or null to run the schedule over the whole run")
    if not (isinstance(d.rl_weight, (int, float)) and 0.0 <= d.rl_weight <= 1.0):
        raise ConfigError(f"distill.rl_weight={d.rl_weight} is invalid: it weighs the RL actor loss while this teacher "
                          "teaches, a number in [0, 1] (1: RL plus distillation; 0: pure distillation, the critic still learns)")
    if d.decay_rate < 0:
        raise ConfigError(f"distill.decay_rate={d.decay_rate} is invalid: the exponential schedule decays, use >= 0")
    if not 0.0 <= d.ema_decay < 1.0:
        raise ConfigError(f"distill.ema_decay={d.ema_decay} is invalid: it must be in [0, 1)")
    if d.ema_update_every < 1:
        raise ConfigError(f"distill.ema_update_every={d.ema_update_every} is invalid: it must be >= 1")
    if TEACHERS[d.name].reads_run:
        if not d.teacher:
            raise ConfigError("distill=checkpoint needs a teacher: add distill.teacher=<run directory of a trained policy>")

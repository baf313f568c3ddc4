"""Structured configs (dataclasses) behind the Hydra config groups in ``configs/``.

Hydra merges the YAML files onto these schemas, so a misspelt key or a wrong type in an override
fails before anything runs. :func:`validate` adds the checks a type cannot express (positive
counts, known env ids), each naming the offending key and the fix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional, get_args

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf

from agents import saved_config
from agents.errors import ConfigError, check_seed, env_error
from agents.teachers import LLM_PROPOSERS, PROPOSERS, TEACHERS, VERIFY_ON, renamed_teacher


@dataclass
class EnvConfig:
    """Which Gymnasium env to train on and how to wrap it."""

    name: str = MISSING  # short name used in run directories, e.g. "quadruped"
    id: str = MISSING  # Gymnasium id, e.g. "OpenClaw/Quadruped-v0"
    kwargs: dict[str, Any] = field(default_factory=dict)  # constructor arguments of the env
    eval_kwargs: dict[str, Any] = field(default_factory=dict)  # extra/overriding arguments for evaluation envs
    normalize_obs: bool = True  # running mean/std observation normalisation (saved with checkpoints)
    normalize_reward: bool = False  # return-based reward scaling (PPO only)


@dataclass
class PPOConfig:
    """Proximal Policy Optimisation hyper-parameters (Stable-Baselines3 names and meanings)."""

    name: str = "ppo"
    learning_rate: float = 3e-4
    n_steps: int = 256  # rollout length per env; one update consumes n_steps * num_envs samples
    batch_size: int = 256
    n_epochs: int = 5
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_range: float = 0.2
    ent_coef: float = 0.0
    vf_coef: float = 0.5
    max_grad_norm: float = 1.0
    target_kl: Optional[float] = None
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    activation: str = "elu"  # tanh | relu | elu
    log_std_init: float = -0.5
    ortho_init: bool = True
    # envs with privileged observations (env.privileged_obs, e.g. QuadrupedTerrain-v1's height scan, friction,
    # true velocity): the critic reads them (asymmetric actor-critic) / the actor reads the height scan
    privileged_critic: bool = False
    perceptive_actor: bool = False


@dataclass
class SACConfig:
    """Soft Actor-Critic hyper-parameters (Stable-Baselines3 names and meanings)."""

    name: str = "sac"
    learning_rate: float = 1e-3
    buffer_size: int = 1_000_000
    learning_starts: int = 1000
    batch_size: int = 256
    tau: float = 0.005
    gamma: float = 0.95
    train_freq: int = 1  # env steps (per env) between updates
    gradient_steps: int = 1
    ent_coef: str = "auto"  # "auto", "auto_0.1" or a number as a string
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    activation: str = "relu"
    her: bool = True  # use hindsight experience replay on goal-conditioned (Dict) observations
    her_n_sampled_goal: int = 4
    her_goal_selection_strategy: str = "future"  # future | final | episode
    fast_update: bool = True  # fused Adam (rounds differently from SB3); false: bit-identical to SB3's SAC


@dataclass
class DistillConfig:
    """Online policy distillation: ``loss = rl_loss + alpha * KL``. ``name=none`` disables it."""

    name: str = "none"  # none | ema | checkpoint | scripted | adaptive (configs/distill/*.yaml; llm_hint: adaptive's old name)
    alpha: float = 0.0  # distillation weight at the start of training
    schedule: str = "constant"  # constant | linear | cosine | exponential (alpha -> final_alpha)
    final_alpha: float = 0.0
    decay_rate: float = 5.0  # exponential schedule: alpha * exp(-decay_rate * progress)
    schedule_steps: Optional[int] = None  # env steps over which alpha -> final_alpha (then constant); null: the whole run
    direction: str = "forward"  # forward = KL(teacher || student) | reverse = KL(student || teacher)
    ema_decay: float = 0.995  # EMA teacher: theta_T <- d theta_T + (1 - d) theta_S
    ema_update_every: int = 1  # EMA teacher: update after every k-th optimiser step
    ema_condition: str = "always"  # always | eval_not_worse (skip updates after a worse evaluation)
    teacher: Optional[str] = None  # checkpoint teacher: a run directory made by train.py
    teacher_checkpoint: str = "best"  # best | latest
    teacher_std: float = 0.3  # scripted / adaptive: std of the Gaussian around the controller's action
    controller_params: str = "tuned"  # scripted / adaptive: tuned (the robot's tuned defaults) | untuned (class defaults) | a JSON file
    segment_steps: int = 200  # adaptive: a segment ends at an episode end or after this many env steps
    hint_max_age: int = 3  # adaptive: a proposal asked for against a context's parameters is dropped once this many adoptions replaced them
    proposer: str = "llm"  # adaptive: llm (the llm channel) | coach (the bundled coach) | random | cma | llm_cma
    max_verified: Optional[int] = None  # adaptive: proposals checked in simulation at most (null: unbounded)
    search_sigma: float = 0.2  # cma / llm_cma: CMA-ES's initial step, of each bound's width
    search_popsize: Optional[int] = None  # cma / llm_cma: candidates per generation (null: 4 + 3 ln n)
    records_dir: str = "records/opd"  # adaptive: one JSONL line per hint query, <run>-<time>.jsonl
    hint_replay: Optional[str] = None  # adaptive: answer from this records file only (no LLM calls)
    min_coverage: float = 0.5  # a run whose teacher gave actions for fewer samples than this ends with a warning
    require_coverage: bool = False  # ... or with an error (exit status 1) instead of the warning
    verify_hints: bool = True  # adaptive: check an accepted hint in simulation before it teaches
    verify_rollouts: int = 2  # adaptive: episodes per parameter set (current, proposed) in each check
    verify_steps: int = 100  # adaptive: steps per check episode at most
    verify_on: str = "context"  # adaptive: context (episodes of the proposal's task context) | segment (its episode)
    per_context: bool = True  # adaptive: one parameter set per task context (true) or one for all contexts (false)
    verify_margin: float = 0.01  # adaptive: score gain a proposal needs to be adopted (claw: success - distance m)
    verify_confirm_rollouts: int = 0  # adaptive: episodes per parameter set on other seeds that a proposal passing the check must also win (0: off)
    verify_budget_s_per_min: Optional[float] = 10.0  # adaptive: CPU s of checks per minute (null: unbounded)


@dataclass
class RunConfig:
    """How long and how a run trains, evaluates, logs and saves."""

    total_timesteps: int = 3_000_000
    num_envs: int = 16
    vec_mode: str = "batched"  # batched (one process, physics of all copies in native threads) | dummy (one process, one after another) | subproc (one process per env)
    device: str = "cpu"
    torch_threads: int = 1
    eval_freq: int = 100_000  # env steps between evaluations (0 disables)
    eval_episodes: int = 10
    eval_envs: int = 5
    checkpoint_freq: int = 100_000  # env steps between checkpoints
    keep_checkpoints: int = 2
    log_interval: int = 1  # PPO: rollouts, SAC: episodes between console/CSV logs
    progress_bar: bool = True
    tensorboard: bool = True
    video: bool = True  # at each evaluation record clips into videos/ (and TensorBoard: animated GIFs)
    video_episodes: int = 1  # evaluation episodes recorded each time
    video_width: int = 320  # pixels (even)
    video_height: int = 240
    video_shadows: bool = False  # shadows halve software rendering speed (benchmarks/RESULTS.md)
    wandb: bool = False  # also log config, scalars and clips to Weights & Biases (extra: wandb; WANDB_MODE=offline)
    wandb_project: str = "openclaw-rl"  # the W&B project of train.wandb=true runs


@dataclass
class TrainConfig:
    """Top-level config of ``train.py``."""

    env: EnvConfig = MISSING
    agent: Any = MISSING
    distill: DistillConfig = field(default_factory=DistillConfig)
    llm: Any = None  # the LLM channel (configs/llm/*.yaml, schema: distill.llm.channel.ChannelConfig)
    train: RunConfig = field(default_factory=RunConfig)
    seed: int = 0
    resume: Optional[str] = None  # a run directory to continue
    run_dir: Optional[str] = None  # set by train.py from Hydra's output directory


def register_configs() -> None:
    """Register the schemas so that YAML files can name them in their defaults lists."""
    cs = ConfigStore.instance()
    cs.store(name="train_schema", node=TrainConfig)
    # ``agent`` is typed Any at the top level (PPO and SAC differ), so each agent file names its schema
    # (``- /ppo_schema@_here_``). Stored outside the ``agent`` group, so that ``agent=`` offers only the
    # agents (configs/agent/*.yaml), not their schemas.
    cs.store(name="ppo_schema", node=PPOConfig)
    cs.store(name="sac_schema", node=SACConfig)


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


def _first_non_finite(node: Any, prefix: str = "") -> tuple[str, float] | None:
    """(key, value) of the first NaN or infinite float in a config container, or None."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        path = f"{prefix}.{key}" if prefix and isinstance(key, str) else f"{prefix}[{key}]" if prefix else str(key)
        if isinstance(value, float) and not math.isfinite(value):
            return path, value
        found = _first_non_finite(value, path)
        if found is not None:
            return found
    return None


def _validate_env(cfg: DictConfig) -> None:
    """Construct the training env once (and the evaluation env as the video recorder will): bad
    ``env.kwargs`` / ``env.eval_kwargs`` values and video sizes the renderer cannot draw fail here."""
    import gymnasium as gym

    from agents.evaluation.video import recordable
    from agents.vec_env import env_kwargs, is_goal_space

    t = cfg.train
    eval_kwargs, eval_keys = env_kwargs(cfg, evaluation=True), "env.kwargs or env.eval_kwargs"
    if t.video and t.eval_freq > 0:
        eval_kwargs = recordable(eval_kwargs, t.video_width, t.video_height)[0]
        eval_keys = "train.video_width/train.video_height, " + eval_keys
    for kwargs, where in ((env_kwargs(cfg), "env.kwargs"), (eval_kwargs, eval_keys)):
        try:
            env = gym.make(cfg.env.id, **kwargs)
        except (TypeError, ValueError, gym.error.Error) as err:
            raise ConfigError(f"{where}: {cfg.env.id} cannot be made: {env_error(err)}") from None
        space = env.observation_space
        env.close()
    if TEACHERS[cfg.distill.name].controller and cfg.agent.name == "sac" and cfg.agent.her and is_goal_space(space):
        raise ConfigError(f"distill={cfg.distill.name} records the teacher's action with each transition; HER relabels them: "
                          "add agent.her=false")


def validate(cfg: DictConfig) -> None:
    """Check values that a type cannot; raise :class:`ConfigError` naming the key and the fix."""
    import gymnasium as gym

    import envs  # noqa: F401  (registers the OpenClaw ids)
    from agents.factory import check_device

    renamed_teacher(cfg.distill)
    bad = _first_non_finite(OmegaConf.to_container(cfg, resolve=True))
    if bad is not None:
        raise ConfigError(f"{bad[0]}={bad[1]} is invalid: it must be a finite number")
    check_seed("seed", cfg.seed)
    for key, meaning in _POSITIVE.items():
        value = OmegaConf.select(cfg, key)
        if value is not None and value <= 0:
            raise ConfigError(f"{key}={value} is invalid: {meaning} must be a positive integer")
    for key, choices in _choices().items():
        value = OmegaConf.select(cfg, key)
        if value is not None and value not in choices:
            raise ConfigError(f"{key}={value!r} is invalid; choose one of: {', '.join(choices)}")
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
    _validate_distill(cfg.distill)
    if TEACHERS[cfg.distill.name].controller:
        _validate_controller_teacher(cfg)
    _validate_env(cfg)


def _validate_controller_teacher(cfg: DictConfig) -> None:
    from pathlib import Path

    from agents.teachers.controller import CONTROLLER_PARAMS, starting_params
    from envs.controllers import family_of_id

    d = cfg.distill
    if d.teacher_std <= 0:
        raise ConfigError(f"distill.teacher_std={d.teacher_std} is invalid: the teacher's std must be > 0")
    for key in ("segment_steps", "hint_max_age", "verify_rollouts", "verify_steps"):
        if d[key] < 1:
            raise ConfigError(f"distill.{key}={d[key]} is invalid: it must be >= 1")
    try:
        family = family_of_id(cfg.env.id)
    except ValueError as err:
        raise ConfigError(f"distill={d.name} needs a scripted controller: {err}; "
                          "choose another env or distill=none|ema|checkpoint") from None
    try:
        starting_params(family, d.controller_params)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"distill.controller_params={d.controller_params!r}: {err}; use {' or '.join(CONTROLLER_PARAMS)}, "
                          f"or a JSON file of the {family.family} controller's parameters") from None
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
        raise ConfigError(f"distill.hint_replay={d.hint_replay}: no such records file (records/opd/*.jsonl)")
    if not TEACHERS[d.name].adaptive or d.proposer not in LLM_PROPOSERS:
        return
    if cfg.llm is None:
        raise ConfigError(f"distill.proposer={d.proposer} needs an LLM channel: add llm=default (configs/llm/)")
    from distill.llm.channel import ChannelConfig

    try:
        ChannelConfig.from_mapping(OmegaConf.to_container(cfg.llm, resolve=True))
    except ValueError as err:
        raise ConfigError(f"llm: {err}") from None


def _validate_distill(d: DictConfig) -> None:
    for key in ("alpha", "final_alpha"):
        if d[key] < 0:
            raise ConfigError(f"distill.{key}={d[key]} is invalid: the distillation weight must be >= 0")
    if not 0.0 <= d.min_coverage <= 1.0:
        raise ConfigError(f"distill.min_coverage={d.min_coverage} is invalid: it is a fraction of samples in [0, 1]")
    if d.schedule_steps is not None and d.schedule_steps < 1:
        raise ConfigError(f"distill.schedule_steps={d.schedule_steps} is invalid: use a number of env steps >= 1, "
                          "or null to run the schedule over the whole run")
    if d.decay_rate < 0:
        raise ConfigError(f"distill.decay_rate={d.decay_rate} is invalid: the exponential schedule decays, use >= 0")
    if not 0.0 <= d.ema_decay < 1.0:
        raise ConfigError(f"distill.ema_decay={d.ema_decay} is invalid: it must be in [0, 1)")
    if d.ema_update_every < 1:
        raise ConfigError(f"distill.ema_update_every={d.ema_update_every} is invalid: it must be >= 1")
    if TEACHERS[d.name].reads_run:
        if not d.teacher:
            raise ConfigError("distill=checkpoint needs a teacher: add distill.teacher=<run directory of a trained policy>")
        saved_config.load(d.teacher, "distill.teacher")  # a missing or damaged run directory

"""Structured configs (dataclasses) behind the Hydra config groups in ``configs/`` (``train.py``'s config).

Hydra merges the YAML files onto these schemas, so a misspelt key or a wrong type in an override fails before
anything runs; :mod:`agents.saved_config` checks a run directory's ``config.yaml`` against them, and
:func:`agents.training.checks.validate` adds the checks a type cannot express.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any, Optional, get_type_hints

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

from agents.config.env_defaults import RESOLVER, env_default


@dataclass
class EnvGroupConfig:
    """The ``env:`` group (``configs/env/*.yaml``): which Gymnasium env to train on and how to wrap it.

    Not the env's own constructor config (:class:`envs.base.EnvConfig`): ``kwargs`` are passed to it.
    """

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
    # rsl_rl's adaptive learning rate (agents/students/ppo.py): from learning_rate, divided or multiplied by 1.5 per
    # minibatch to keep the KL between the rollout's policy and the updated one near this (legged_gym: 0.01; a resume
    # goes on from the adapted rate); null: learning_rate throughout (SB3)
    desired_kl: Optional[float] = None
    net_arch: list[int] = field(default_factory=lambda: [256, 256])
    activation: str = "elu"  # tanh | relu | elu
    log_std_init: float = -0.5
    ortho_init: bool = True
    # envs with privileged observations (env.privileged_obs, e.g. QuadrupedTerrain-v1's height scan, friction,
    # true velocity): the critic reads them (asymmetric actor-critic) / the actor reads the height scan
    privileged_critic: bool = False
    perceptive_actor: bool = False
    # envs with a proprioceptive history (env.kwargs.history_steps > 1): the actor reads its frames flat (mlp) or
    # through a GRU over the frames, oldest first (gru; agents/students/observation_masks.py)
    history_encoder: str = "mlp"


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
class TeacherSettings:
    """The ``distill`` keys of one teacher: its alpha schedule, the learner's RL weight and the teacher's own settings.

    A stage of ``distill=sequence`` may set each for itself (:class:`StageConfig`); the others are the whole run's
    (:class:`DistillConfig`)."""

    alpha: float = 0.0  # distillation weight at the start of training
    schedule: str = "constant"  # constant | linear | cosine | exponential (alpha -> final_alpha)
    final_alpha: float = 0.0
    decay_rate: float = 5.0  # exponential schedule: alpha * exp(-decay_rate * progress)
    schedule_steps: Optional[int] = None  # env steps over which alpha -> final_alpha (then constant); null: the whole run
    rl_weight: float = 1.0  # weight of the learner's actor terms while this teacher teaches (0: pure distillation; the critic still learns)
    ema_decay: float = 0.995  # EMA teacher: theta_T <- d theta_T + (1 - d) theta_S
    ema_update_every: int = 1  # EMA teacher: update after every k-th optimiser step
    ema_condition: str = "always"  # always | eval_not_worse (skip updates after a worse evaluation)
    teacher: Optional[str] = None  # checkpoint teacher: a run directory made by train.py
    teacher_checkpoint: str = "best"  # best | latest
    teach_contexts: Optional[list[str]] = None  # checkpoint: teach only episodes whose env.task_context() name matches one of these fnmatch patterns (e.g. '*/stairs_up/*'); null: all
    teacher_std: float = 0.3  # scripted / adaptive: std of the Gaussian around the controller's action (PPO; SAC has none)


def _stage_config() -> type:
    """:class:`StageConfig`: ``name``, ``steps``, ``label`` and each of :class:`TeacherSettings`, typed as there,
    null (the ``distill`` section's value) unless the stage sets it."""
    hints = get_type_hints(TeacherSettings)
    own = [("name", Optional[str], None), ("steps", Optional[int], None), ("label", Optional[str], None)]
    settings = [(f.name, Optional[hints[f.name]], None) for f in fields(TeacherSettings)]
    stage = make_dataclass("StageConfig", own + settings)
    stage.__module__ = __name__
    stage.__doc__ = """One teacher of ``distill=sequence`` (``distill.stages``; :mod:`agents.teachers.stages`): ``name``
    (scripted | checkpoint | ema), ``steps`` (env steps it teaches; null on the last stage: to the end of the run),
    ``label`` (its name in the logs; null: its name) and any key of :class:`TeacherSettings` (null: the section's)."""
    return stage


StageConfig = _stage_config()


@dataclass
class DistillConfig(TeacherSettings):
    """Online policy distillation: ``loss = rl_loss + alpha * KL``. ``name=none`` disables it."""

    name: str = "none"  # the teacher: none | ema | checkpoint | scripted | adaptive | sequence (agents/config/teacher_kinds.py)
    recipe: Optional[str] = None  # set by train.py: the configs/distill/<recipe>.yaml the run composed (distill=<recipe>, or the env's default)
    direction: str = "forward"  # forward = KL(teacher || student) | reverse = KL(student || teacher)
    controller_params: str = "tuned"  # scripted / adaptive: tuned (the robot's tuned defaults) | untuned (class defaults) | a JSON file
    controller_params_sha256: Optional[str] = None  # set by train.py: controller_params' file's SHA-256 (16 hex digits; a resume checks it)
    segment_steps: int = 200  # adaptive: a segment ends at an episode end or after this many env steps
    hint_max_age: int = 3  # adaptive: a proposal asked for against a context's parameters is dropped once this many adoptions replaced them
    proposer: str = "llm"  # adaptive: llm (the llm channel) | coach (the bundled coach) | random | cma | llm_cma
    max_verified: Optional[int] = None  # adaptive: proposals checked in simulation at most (null: unbounded)
    search_sigma: float = 0.2  # cma / llm_cma: CMA-ES's initial step, of each bound's width
    search_popsize: Optional[int] = None  # cma / llm_cma: candidates per generation (null: 4 + 3 ln n)
    records_dir: Optional[str] = None  # adaptive: one JSONL line per hint query, <run>-<time>.jsonl (null: <run dir>/records)
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
    stages: list[StageConfig] = field(default_factory=list)  # sequence: the teachers in order (teachers/stages.py)


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

    env: EnvGroupConfig = MISSING
    agent: Any = MISSING
    distill: DistillConfig = field(default_factory=DistillConfig)
    llm: Any = None  # the LLM channel (configs/llm/*.yaml, schema: coach.llm.settings.ChannelConfig)
    train: RunConfig = field(default_factory=RunConfig)
    seed: int = 0
    resume: Optional[str] = None  # a run directory to continue
    run_dir: Optional[str] = None  # set by train.py from Hydra's output directory


def register_configs() -> None:
    """Register the schemas so that YAML files can name them in their defaults lists, and the env configs'
    ``${env_default:<argument>}`` (:mod:`agents.config.env_defaults`)."""
    OmegaConf.register_new_resolver(RESOLVER, env_default, replace=True)
    cs = ConfigStore.instance()
    cs.store(name="train_schema", node=TrainConfig)
    # ``agent`` is typed Any at the top level (PPO and SAC differ), so each agent file names its schema
    # (``- /ppo_schema@_here_``). Stored outside the ``agent`` group, so that ``agent=`` offers only the
    # agents (configs/agent/*.yaml), not their schemas.
    cs.store(name="ppo_schema", node=PPOConfig)
    cs.store(name="sac_schema", node=SACConfig)

"""One evaluation of a trained policy or a scripted controller: rollouts, videos, metrics, plots.

``evaluate.py`` composes :class:`EvalConfig` with Hydra and calls :func:`run`; from Python::

    from agents.evaluation.run import EvalConfig, run
    metrics = run(OmegaConf.structured(EvalConfig(run="runs/quadruped-ppo/<date>", episodes=4)))

The protocol is the same for every policy: ``envs`` copies of the env, ``venv.seed(seed)`` (env ``i``'s
first episode is reset with seed ``seed + i``), ``episodes`` deterministic episodes spread over the
envs by :func:`agents.evaluation.protocol.evaluate`; the first ``videos`` of them are recorded. Written into
the output directory (default ``<run>/eval``): ``video_env<i>_ep<k>.mp4``, ``metrics.json``,
``contact_sheet.png`` (a row of frames per video) and ``episodes.png`` (per-episode return, length and
the metrics the env declares). They are written into a hidden directory beside it and moved in when all
are complete, so an evaluation stopped part-way (Ctrl-C, SIGTERM) leaves the earlier ones whole.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Optional

import gymnasium as gym
import imageio
import matplotlib
import numpy as np
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from agents import saved_config
from agents.signals import signals_deferred
from agents.errors import ConfigError, check_seed, env_error
from agents.evaluation.protocol import EvalResult, Predictor, ResetOptions, evaluate
from agents.evaluation.tiles import FAST, SLOW, TileResult, evaluate_tiles, held_out_kwargs, summary, table
from agents.factory import check_device
from agents.controller_policy import ControllerPolicy
from agents.run_checkpoints import checkpoint_run, find_checkpoint, load_intact, run_config
from agents.export.onnx_policy import OnnxPolicy
from agents.vec_env import env_kwargs, make_vec_env
from agents.evaluation.video import Clip, contact_sheet, recordable, recording
from envs.controllers import CONTROLLER_NAMES, controller_named, family_of_id, tell_env
from envs.declarations import Curriculum

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LEARNED = "learned"
DEFAULT_VIDEOS = 2  # episodes recorded when ``videos`` is not given (fewer when there are fewer episodes)


@dataclass
class EvalConfig:
    """Top-level config of ``evaluate.py`` (``configs/evaluate.yaml``)."""

    run: Optional[str] = None  # run directory made by train.py
    checkpoint: str = "best"  # best | latest | with run=: a checkpoint's name (step_000100000) | a checkpoint
    # directory | a model zip (any name; outside its run directory: with run= and its checkpoint's vecnormalize.pkl
    # beside it) | a policy.onnx (export.py)
    policy: str = LEARNED  # learned (the run's policy) | trot | grasp (scripted controllers)
    env_id: Optional[str] = None  # Gymnasium id; default: the run's env (or the controller's)
    env_kwargs: dict[str, Any] = field(default_factory=dict)  # constructor arguments over the run's (+env_kwargs.x=v)
    # options of every episode's reset(options=...), the fixed tiles' too (each tile's own type and level over them):
    # +reset_options.terrain_type=stairs_up +reset_options.terrain_level=5 (a tile), '+reset_options.command=[0.5,0,0]'
    reset_options: dict[str, Any] = field(default_factory=dict)
    episodes: int = 10
    envs: int = 2  # evaluation envs stepped together (in this process)
    seed: int = 0
    videos: Optional[int] = None  # episodes recorded to mp4 (0: none); default 2; at most ``episodes``
    width: int = 480  # video frame size (pixels, even numbers)
    height: int = 480
    camera: Optional[str] = None  # camera name; default: the env's (quadruped "tracking", claw "overview")
    fps: Optional[float] = None  # video frame rate (Hz); default: the env's control rate (real time)
    overlay: bool = True  # step, return and the env's task lines (its overlay_lines) on the frames
    shadows: bool = False  # shadows halve the rendering speed with software OpenGL (480x480 quadruped: 37 vs 74 fps)
    device: str = "cpu"
    out_dir: Optional[str] = None  # default: <run>/eval; scripted without a run: runs/<policy>/eval
    # envs with a curriculum (QuadrupedTerrain-v1): also this many seeded episodes on each tile (group x level) of the
    # grid of the held-out tile_terrain_seed, commands >= 0.3 m/s: success (left the tile, no fall in the episode),
    # falls, tracking error (agents/evaluation/tiles.py; 0: skip); tile_slow_episodes: the slow commands' own table
    tile_episodes: int = 10
    tile_levels: list[int] = field(default_factory=lambda: list(range(10)))  # at least one while tile_episodes > 0
    tile_terrain_seed: int = 1000  # never the run's env terrain_seed (refused)
    tile_slow_episodes: int = 0


def register_config() -> None:
    ConfigStore.instance().store(name="evaluate_schema", node=EvalConfig)


def validate(cfg: DictConfig) -> None:
    """Check values a type cannot; raise :class:`ConfigError` naming the key and the fix."""
    for key in ("tile_episodes", "tile_slow_episodes"):
        if cfg[key] < 0:
            raise ConfigError(f"{key}={cfg[key]} must be >= 0 (0: no such tile table)")
    for key in ("episodes", "envs", "width", "height"):
        if cfg[key] <= 0:
            raise ConfigError(f"{key}={cfg[key]} is invalid: it must be a positive integer")
    if cfg.videos is not None and cfg.videos < 0:
        raise ConfigError(f"videos={cfg.videos} is invalid: record 0 episodes (no video) or more")
    if videos_recorded(cfg) and (cfg.width % 2 or cfg.height % 2):
        raise ConfigError(f"width={cfg.width} height={cfg.height}: H.264 video needs even sizes")
    check_seed("seed", cfg.seed)
    check_device("device", cfg.device)
    if cfg.policy not in (LEARNED, *CONTROLLER_NAMES):
        raise ConfigError(f"policy={cfg.policy!r} is invalid; choose one of: {LEARNED}, {', '.join(CONTROLLER_NAMES)}")
    if cfg.policy == LEARNED and not cfg.run and cfg.checkpoint in ("best", "latest"):
        raise ConfigError(
            "nothing to evaluate: pass run=<run directory made by train.py> or checkpoint=<.../model.zip>, "
            f"or a scripted controller with policy={'|'.join(CONTROLLER_NAMES)}"
        )
    saved = run_config(Path(cfg.run)) if cfg.run else None  # a missing or damaged run directory
    if cfg.policy != LEARNED:
        _check_controller_env(cfg, saved)
    if cfg.out_dir:
        saved_config.check_output_dir("out_dir", cfg.out_dir)


def videos_recorded(cfg: DictConfig) -> int:
    """How many episodes are recorded: ``videos`` (default :data:`DEFAULT_VIDEOS`), at most ``episodes``."""
    return min(DEFAULT_VIDEOS if cfg.videos is None else cfg.videos, cfg.episodes)


def _check_controller_env(cfg: DictConfig, saved: DictConfig | None) -> None:
    """A scripted controller runs only on an env of its own family (``policy=trot`` on the quadruped)."""
    family = controller_named(cfg.policy)
    env_id = cfg.env_id or (saved.env.id if saved is not None else family.env_id)
    where = f"env_id={env_id}" if cfg.env_id or saved is None else f"run={cfg.run} (trained on {env_id})"
    if env_id not in gym.registry:
        known = sorted(k for k in gym.registry if k.startswith("OpenClaw/"))
        raise ConfigError(f"env_id={env_id!r} is not a registered Gymnasium id; OpenClaw ids: {', '.join(known)}")
    try:
        other = family_of_id(env_id)
    except ValueError as err:
        raise ConfigError(f"policy={cfg.policy} {where}: {err}") from None
    if other.family != family.family:
        raise ConfigError(
            f"policy={cfg.policy} {where}: the {cfg.policy} controller drives the {family.family} envs, "
            f"{env_id} is a {other.family} env; use policy={other.name} there, or env_id={family.env_id}"
        )


# ---------------------------------------------------------------------------------------- outputs
PLOT_COLUMNS = 5  # panels per row of episodes.png (the quadruped declares 17 metrics: gait measures per leg)


def plot_episodes(result: EvalResult, path: Path, title: str) -> None:
    """Bar charts of each episode's return, length and every metric the env declares (e.g. tracking error, falls),
    ``PLOT_COLUMNS`` to a row."""
    per = result.per_episode
    panels = [("return", "return"), ("length", "length (steps)")]
    for m in result.declared:
        if m.info_key in per:
            panels.append((m.info_key, m.label if m.unit == "fraction" else f"{m.label} ({m.unit})"))
    cols = min(len(panels), PLOT_COLUMNS)
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), dpi=110, squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (key, label) in zip(axes.flat, panels):
        ax.bar(np.arange(len(per[key])), per[key], color="tab:blue")
        ax.set_xlabel("episode")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, axis="y")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _describe(clip: Clip, out: Path) -> dict[str, Any]:
    return {"file": str(clip.path.relative_to(out)), "frames": clip.frames, "steps": clip.length, "return": clip.episode_return}


# ---------------------------------------------------------------------------------------- the run
def run(cfg: DictConfig) -> dict[str, Any]:
    """Evaluate as configured, write videos, ``metrics.json`` and PNGs.

    Returns the metrics as written to ``metrics.json`` plus ``out_dir`` and ``declared`` (the env's
    :class:`envs.declarations.Metric` declarations, which :func:`format_metrics` prints).
    """
    validate(cfg)
    learned = cfg.policy == LEARNED
    run_dir = Path(cfg.run) if cfg.run else None
    saved = run_config(run_dir) if run_dir is not None else None  # a bad run directory is the first problem
    exported = OnnxPolicy(cfg.checkpoint) if learned and cfg.checkpoint.endswith(".onnx") else None
    ckpt = find_checkpoint(cfg) if learned and exported is None else None
    if ckpt is not None and run_dir is None:
        run_dir = checkpoint_run(cfg, ckpt)
        saved = run_config(run_dir)
    trained: tuple[str, int | None] | None  # (env id, observation values when known) the policy was trained on
    if exported is not None:  # the file names its env and evaluation kwargs; output defaults to beside it
        env_id, kwargs, run_dir = cfg.env_id or exported.env_id, dict(exported.env_kwargs), run_dir or exported.path.parent
        trained = exported.env_id, exported.observation_dim
    else:
        env_id = cfg.env_id or (saved.env.id if saved is not None else controller_named(cfg.policy).env_id)
        kwargs = env_kwargs(saved, evaluation=True) if saved is not None else {}
        trained = (saved.env.id, None) if learned else None
    kwargs.update(OmegaConf.to_container(cfg.env_kwargs, resolve=True))
    out = Path(cfg.out_dir) if cfg.out_dir else (run_dir / "eval" if run_dir else Path("runs") / cfg.policy / "eval")
    saved_config.check_output_dir("out_dir", out, out if cfg.out_dir else f"{out} (the default)")

    videos = videos_recorded(cfg)
    if cfg.videos is not None and cfg.videos > videos:
        print(f"warning: videos={cfg.videos} is more than episodes={cfg.episodes}: recording {videos}", file=sys.stderr)
    options = OmegaConf.to_container(cfg.reset_options, resolve=True)
    make_kwargs, layers = kwargs, [partial(ResetOptions, options=options)] if options else []
    if videos:
        recorder = dict(fps=cfg.fps, overlay=cfg.overlay, shadows=cfg.shadows)
        make_kwargs, clip_recorder = recordable(kwargs, cfg.width, cfg.height, cfg.camera, **recorder)
        layers.append(clip_recorder)
    source = ckpt.named if ckpt is not None else exported.path if exported is not None else None
    foreign = trained if trained is not None and trained[0] != env_id else None
    venv = _make_envs(env_id, make_kwargs, cfg.envs, partial(_wrapped, layers=tuple(layers)) if layers else None,
                      foreign, source)
    if options:
        _check_reset_options(venv, options)
    if exported is not None:  # normalisation is folded into the file: it runs on the raw envs
        policy = exported
    elif learned:
        policy, venv, ckpt = load_intact(saved, cfg.checkpoint, ckpt, venv, cfg.device)
    else:
        policy = ControllerPolicy(cfg.policy, cfg.envs, venv.get_attr("controller_spec", indices=[0])[0])
        for i in range(cfg.envs):  # the envs' settings the controllers' params need (the trot's gait frequency)
            policy.sync_env(venv, i)

    curriculum = venv.get_attr("CURRICULUM", indices=[0])[0] if venv.has_attr("CURRICULUM") else None
    tile_kwargs = kwargs  # the tile tables' env: the held-out terrain
    if curriculum is not None and cfg.tile_episodes:
        _check_tile_levels(cfg, venv, env_id, curriculum)
        try:
            tile_kwargs = held_out_kwargs(kwargs, cfg.tile_terrain_seed)
        except ValueError as err:
            venv.close()
            raise ConfigError(f"tile_terrain_seed={cfg.tile_terrain_seed}: {err}") from None
    staging = _staging_dir(out)  # only now: a bad env argument or checkpoint leaves ``out`` untouched

    t0 = time.time()
    venv.seed(cfg.seed)  # after loading the policy: SB3's load re-seeds the env with the training seed
    with recording(venv, staging, "video", videos) as clips:
        result = evaluate(policy, venv, cfg.episodes)
    tiles = _tiles(cfg, policy, venv, env_id, tile_kwargs, curriculum, options)
    venv.close()

    source = ckpt.named if ckpt is not None else source
    what = f"{cfg.policy} policy" + (f" {source}" if source is not None else "")
    metrics: dict[str, Any] = {
        "policy": cfg.policy,
        "checkpoint": str(source) if source is not None else None,
        "num_timesteps": ckpt.meta.get("num_timesteps") if ckpt is not None else exported.num_timesteps if exported is not None else None,
        "env_id": env_id,
        "env_kwargs": kwargs,
        "reset_options": options,
        "envs": cfg.envs,
        "seed": cfg.seed,
        **result.as_dict(),
        "videos": [_describe(c, staging) for c in clips],
        "wall_time_s": round(time.time() - t0, 2),
    }
    if tiles is not None:
        metrics.update(tiles=[asdict(r) for r in tiles], tile_terrain_seed=cfg.tile_terrain_seed,
                       tile_summary={band: summary([r for r in tiles if r.commands == band])
                                     for band in dict.fromkeys(r.commands for r in tiles)})
    plot_episodes(result, staging / "episodes.png", f"{what} on {env_id}")
    if clips:
        imageio.imwrite(staging / "contact_sheet.png", contact_sheet(clips))
    (staging / "metrics.json").write_text(json.dumps(metrics, indent=2))
    _publish(staging, out)
    metrics.update(out_dir=str(out), declared=result.declared)
    return metrics


def _make_envs(env_id: str, kwargs: dict[str, Any], num_envs: int, wrapper: Any, foreign: tuple[str, int | None] | None,
               source: Path | None) -> VecEnv:
    """``num_envs`` evaluation envs; :class:`ConfigError` when they cannot be made or, for an env other than the
    one the policy at ``source`` was trained on (``foreign``: that env's id and its observation values, when
    known), when they do not fit the policy: the message names that env."""
    trained = ""
    if foreign is not None:
        values = f" ({foreign[1]} observation values)" if foreign[1] is not None else ""
        trained = f"env_id={env_id}: {source} was trained on {foreign[0]}{values}"
    fix = f"leave env_id out to evaluate it there, or choose a variant of {foreign[0]}" if foreign else ""
    try:
        venv = make_vec_env(env_id, kwargs, num_envs, wrapper=wrapper)
    except (TypeError, ValueError, gym.error.Error) as err:  # unknown id or constructor argument, bad value
        if foreign is not None and isinstance(err, TypeError):  # another family: the trained env's arguments
            raise ConfigError(f"{trained}, and {env_id} does not take that env's constructor arguments; {fix}") from None
        raise ConfigError(f"env {env_id}: {env_error(err)}" + (f" ({trained})" if foreign else "")) from None
    if foreign is not None and foreign[1] is not None:
        given = gym.spaces.flatdim(venv.observation_space)
        if given != foreign[1]:
            venv.close()
            raise ConfigError(f"{trained}, and {env_id} gives {given} observation values; {fix}")
    return venv


def _wrapped(env: gym.Env, layers: tuple[Any, ...]) -> gym.Env:
    """``env`` in each of ``layers`` (wrapper constructors), the first innermost."""
    for layer in layers:
        env = layer(env)
    return env


def _check_reset_options(venv: VecEnv, options: dict[str, Any]) -> None:
    """:class:`ConfigError` naming the problem when the env refuses the reset ``options`` (one reset of env 0;
    the evaluation's seeded resets follow)."""
    try:
        venv.env_method("reset", indices=[0])
    except (TypeError, ValueError) as err:
        venv.close()
        raise ConfigError(f"reset_options={options}: {env_error(err)}") from None


def _check_tile_levels(cfg: DictConfig, venv: VecEnv, env_id: str, declared: Curriculum) -> None:
    """:class:`ConfigError` (``venv`` closed) when ``tile_levels`` names no level, or one ``declared`` lacks."""
    levels, span = list(cfg.tile_levels), f"{env_id}'s levels are 0 .. {declared.levels - 1}"
    if levels and all(0 <= lv < declared.levels for lv in levels):
        return
    venv.close()
    if not levels:
        raise ConfigError(f"tile_levels=[] names no level, but tile_episodes={cfg.tile_episodes} asks for fixed tiles "
                          f"({span}); list levels (tile_levels=[0,3,6,9]) or pass tile_episodes=0 for none")
    raise ConfigError(f"tile_levels={levels}: {span}")


def _tiles(cfg: DictConfig, policy: Predictor, venv: VecEnv, env_id: str, kwargs: dict[str, Any],
           declared: Curriculum | None, options: dict[str, Any]) -> list[TileResult] | None:
    """For an env with a curriculum (``declared``), :func:`agents.evaluation.tiles.evaluate_tiles` of ``policy`` on
    every group at ``cfg.tile_levels`` (episodes reset with ``options`` under each tile's own); else (or with
    ``tile_episodes=0``) None."""
    if declared is None or not cfg.tile_episodes:
        return None
    normalize = venv.normalize_obs if isinstance(venv, VecNormalize) else (lambda obs: obs)

    def make_act(sim):
        chosen = policy
        if isinstance(policy, ControllerPolicy):  # one controller per tile episode, its env told its settings
            chosen = ControllerPolicy(cfg.policy, sim.num_envs, sim.tasks[0].controller_spec)
            for task in sim.tasks:
                tell_env(task, chosen.controllers[0])
        return lambda obs: chosen.predict(normalize(obs), deterministic=True)[0]

    levels = [int(level) for level in cfg.tile_levels]
    return [r for commands, episodes in ((FAST, cfg.tile_episodes), (SLOW, cfg.tile_slow_episodes)) if episodes
            for r in evaluate_tiles(None, env_id, kwargs, declared.groups, levels, episodes, seed=cfg.seed,
                                    make_act=make_act, options=options, commands=commands)]


def _staging_dir(out: Path) -> Path:
    """A new hidden directory beside ``out`` that an evaluation writes into before :func:`_publish`; those an
    evaluation killed mid-way left behind are removed first."""
    out.parent.mkdir(parents=True, exist_ok=True)
    for left in out.parent.glob(f".{out.name}.partial-*"):
        shutil.rmtree(left, ignore_errors=True)
    staging = out.parent / f".{out.name}.partial-{os.getpid()}"
    staging.mkdir()
    return staging


def _publish(staging: Path, out: Path) -> None:
    """Replace the outputs of an earlier evaluation in ``out`` by the complete ones in ``staging``, holding
    Ctrl-C / SIGTERM until done, ``metrics.json`` last: a killed evaluation leaves the earlier outputs whole."""
    with signals_deferred():  # what arrives meanwhile is dropped: the evaluation is done
        out.mkdir(parents=True, exist_ok=True)
        for stale in [*out.glob("video_env*_ep*.mp4"), out / "contact_sheet.png", out / "metrics.json"]:
            stale.unlink(missing_ok=True)
        for path in sorted(staging.iterdir(), key=lambda p: p.name == "metrics.json"):
            os.replace(path, out / path.name)
        staging.rmdir()


def format_metrics(m: dict[str, Any]) -> str:
    """A few human-readable lines summarising :func:`run`'s metrics."""
    lines = [
        f"{m['policy']} on {m['env_id']}: {m['episodes']} episodes, return {m['mean_return']:.2f} ± {m['std_return']:.2f}, "
        f"length {m['mean_length']:.0f}"
    ]
    if m.get("reset_options"):
        lines.append(f"every episode reset with options={m['reset_options']}")
    reported = [metric.format(m[metric.name]) for metric in m["declared"] if m[metric.name] is not None]
    if reported:
        lines.append(", ".join(reported))
    for band, figures in m.get("tile_summary", {}).items():
        lines.append(f"{band} commands on the held-out tiles of terrain seed {m['tile_terrain_seed']} (success / falls "
                     "in the whole episode): " + ", ".join(f"{k} {v:.0%}" for k, v in figures.items()))
        lines.append(table([TileResult(**r) for r in m["tiles"] if r["commands"] == band]))
    lines += [f"video: {Path(m['out_dir']) / v['file']}" for v in m["videos"]]
    lines.append(f"metrics, contact_sheet.png, episodes.png: {m['out_dir']}")
    return "\n".join(lines)

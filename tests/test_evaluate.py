"""``evaluate.py`` and training-time clips: videos decode with the right frames, metrics match a direct rollout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import imageio.v3 as iio
import numpy as np
import pytest
from omegaconf import OmegaConf
from stable_baselines3.common.vec_env import VecNormalize

from agents import checkpoint
from agents.errors import ConfigError
from agents.evaluation.run import EvalConfig, run
from agents.evaluation.protocol import ResetOptions, evaluate
from agents.factory import load_agent
from agents.vec_env import make_vec_env
from test_train import run_loading

ROOT = Path(__file__).resolve().parent.parent
STEPS = 40  # episode length cap for these tests (gym.make's max_episode_steps)


def _script(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / name), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HYDRA_FULL_ERROR": "0"},
    )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A smoke-trained PPO quadruped run (one evaluation, one checkpoint)."""
    path = tmp_path_factory.mktemp("evaluate") / "run"
    result = _script("train.py", "train=smoke", "train.total_timesteps=2048", f"hydra.run.dir={path}")
    assert result.returncode == 0, result.stderr[-3000:]
    return path


def _config(**values) -> OmegaConf:
    return OmegaConf.merge(OmegaConf.structured(EvalConfig), values)


def test_evaluate_writes_videos_and_metrics_that_match_a_direct_rollout(run_dir):
    args = ["episodes=3", "envs=2", "videos=2", "width=128", "height=96", "seed=7", f"+env_kwargs.max_episode_steps={STEPS}"]
    result = _script("evaluate.py", f"run={run_dir}", *args)
    assert result.returncode == 0, result.stderr[-3000:]
    out = run_dir / "eval"
    metrics = json.loads((out / "metrics.json").read_text())
    assert str(out / "video_env0_ep0.mp4") in result.stdout

    # two decodable clips (split over the envs like the episodes), frames = steps + 1, the requested size
    assert [v["file"] for v in metrics["videos"]] == ["video_env0_ep0.mp4", "video_env1_ep0.mp4"]
    for video in metrics["videos"]:
        frames = iio.imread(out / video["file"])
        assert frames.shape == (video["steps"] + 1, 96, 128, 3)
        assert video["frames"] == video["steps"] + 1
        scene = frames[:, 56:].astype(float)  # below the text overlay
        assert scene.std() > 5, "blank frames"
        assert np.abs(scene[-1] - scene[0]).mean() > 0.5, "the scene never changes"
    assert (out / "contact_sheet.png").is_file() and (out / "episodes.png").is_file()

    # a direct rollout of the same checkpoint, normalisation and seeds gives the same numbers
    ckpt = checkpoint.best(run_dir)
    venv = VecNormalize.load(str(ckpt.normalization), make_vec_env("OpenClaw/Quadruped-v1", {"max_episode_steps": STEPS}, 2))
    venv.training, venv.norm_reward = False, False
    model = load_agent("ppo", str(ckpt.model), venv, "cpu")
    venv.seed(7)  # after loading: SB3's load re-seeds the env with the training seed
    direct = evaluate(model, venv, 3)
    assert metrics["episodes"] == direct.episodes == 3
    for key in ("mean_return", "std_return", "mean_length", "tracking_error", "fall_rate"):
        assert metrics[key] == pytest.approx(getattr(direct, key), rel=1e-9, abs=1e-12), key
    assert metrics["reward_terms"] == pytest.approx(direct.reward_terms, rel=1e-9, abs=1e-12)
    for video in metrics["videos"]:  # the recorded episodes are among the evaluated ones
        assert min(abs(video["return"] - r) for r in direct.returns) < 1e-6


def test_scripted_controller_runs_on_the_same_protocol(tmp_path):
    cfg = _config(policy="trot", episodes=2, envs=2, videos=0, out_dir=str(tmp_path), env_kwargs={"max_episode_steps": 100})
    metrics = run(cfg)
    assert metrics["env_id"] == "OpenClaw/Quadruped-v1" and metrics["episodes"] == 2
    assert metrics["fall_rate"] == 0.0 and metrics["mean_length"] == 100
    assert json.loads((tmp_path / "metrics.json").read_text())["mean_return"] == metrics["mean_return"]


def test_missing_run_directory_fails_with_one_clear_line(tmp_path):
    result = _script("evaluate.py", f"run={tmp_path / 'nope'}")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "no such directory" in result.stderr and str(tmp_path / "nope") in result.stderr


def test_run_without_checkpoints_or_with_a_corrupt_model_is_reported(run_dir, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(run_dir / "config.yaml", empty / "config.yaml")
    with pytest.raises(ConfigError, match="no complete checkpoint"):
        run(_config(run=str(empty), videos=0))

    broken = tmp_path / "broken"
    shutil.copytree(run_dir, broken)
    (broken / "checkpoints" / "best" / "model.zip").write_bytes(b"not a zip file")
    fallback = run(_config(run=str(broken), videos=0, episodes=1))  # the newest intact checkpoint instead
    assert fallback["checkpoint"] == str(checkpoint.latest(broken).path)
    for model in (broken / "checkpoints").glob("step_*/model.zip"):  # nothing intact is left
        model.write_bytes(b"not a zip file")
    with pytest.raises(ConfigError, match=r"best/model\.zip cannot be loaded .*damaged") as failed:
        run(_config(run=str(broken), videos=0, episodes=1))
    assert "no intact checkpoint is left" in str(failed.value) and "checkpoint=latest" not in str(failed.value)


def test_a_checkpoint_on_another_env_version_is_refused_with_the_reason(run_dir):
    # The default job trains on Quadruped-v1 (57 values with the gait clock); -v0 observes 48.
    with pytest.raises(ConfigError, match=r"Box\(.*\(57,\).*\(48,\).*only runs on the env version it was trained on"):
        run(_config(run=str(run_dir), env_id="OpenClaw/Quadruped-v0", videos=0, episodes=1))


def test_training_records_clips_and_tensorboard_plays_them(tmp_path):
    """Each training-time clip is an animated GIF image summary: every frame of the mp4, at real time."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    run_path = tmp_path / "run"
    args = ["env=claw", "train=smoke", "train.total_timesteps=2048", "train.video=true", "train.video_width=64", "train.video_height=48"]
    result = _script("train.py", *args, f"hydra.run.dir={run_path}")
    assert result.returncode == 0, result.stderr[-3000:]
    clips = sorted((run_path / "videos").glob("step_*.mp4"))
    assert [c.name for c in clips] == ["step_000000002048_env1_ep0.mp4"]
    video = iio.imread(clips[0])
    assert video.shape == (101, 48, 64, 3)  # claw episodes: 100 steps
    events = EventAccumulator(str(next(run_path.glob("events.out.tfevents.*"))))
    events.Reload()
    assert events.Tags()["images"] == ["eval/video/env1_ep0"]
    (image,) = events.Images("eval/video/env1_ep0")
    assert image.step == 2048 and (image.height, image.width) == (48, 64)
    gif = image.encoded_image_string
    frames = iio.imread(gif, index=None, extension=".gif")
    assert frames.shape == video.shape  # every frame, animated
    assert iio.immeta(gif, index=None, extension=".gif")["duration"] == 40  # ms: the claw's 25 Hz, real time
    assert np.abs(frames.astype(float) - video).mean() < 8  # the same pictures (GIF: 256 colours)
    assert np.abs(frames[-1].astype(float) - frames[0]).mean() > 0.5  # and they move


# what evaluating never loads: the training stack, the teachers and any LLM code
NOT_FOR_EVALUATION = ("agents.training", "agents.teachers", "coach.llm", "openai")


def test_scripted_evaluation_loads_neither_training_nor_llm_code(tmp_path):
    """``evaluate.py policy=trot`` runs without importing the training runner, the teachers or any LLM code."""
    argv = ["policy=trot", "episodes=1", "envs=1", "videos=0", f"out_dir={tmp_path / 'eval'}",
            f"hydra.run.dir={tmp_path / 'hydra'}", "+env_kwargs.max_episode_steps=50"]
    out, loaded = run_loading("evaluate.py", argv, NOT_FOR_EVALUATION)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "eval" / "metrics.json").is_file()
    assert loaded == "LOADED []", out.stdout


def test_evaluating_a_run_directory_loads_neither_training_nor_teachers(run_dir, tmp_path):
    """``evaluate.py run=<dir>`` reads the run's config.yaml through the config schema (agents.config), not
    through the training stack, and loads no teacher (the run was taught by the scripted trot)."""
    assert OmegaConf.load(run_dir / "config.yaml").distill.name == "scripted"
    argv = [f"run={run_dir}", "episodes=1", "envs=1", "videos=0", f"out_dir={tmp_path / 'eval'}",
            f"hydra.run.dir={tmp_path / 'hydra'}", f"+env_kwargs.max_episode_steps={STEPS}"]
    out, loaded = run_loading("evaluate.py", argv, NOT_FOR_EVALUATION)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (tmp_path / "eval" / "metrics.json").is_file()
    assert loaded == "LOADED []", out.stdout


def test_an_evaluation_stopped_part_way_leaves_the_earlier_outputs_whole(tmp_path):
    import signal
    import time

    out = tmp_path / "eval"
    argv = [sys.executable, str(ROOT / "evaluate.py"), "policy=trot", "envs=1", f"out_dir={out}",
            f"hydra.run.dir={tmp_path / 'hydra'}"]
    first = subprocess.run([*argv, "episodes=1", "videos=1", "+env_kwargs.max_episode_steps=40"], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert "metrics.json" in before and any(name.endswith(".mp4") for name in before)
    proc = subprocess.Popen([*argv, "episodes=4", "videos=2"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    start = time.time()  # stop it while it records: its partial video exists
    while time.time() - start < 240 and not list(tmp_path.glob(".eval.partial-*/video_env0_ep0.mp4")):
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before, "a stopped evaluation changed the outputs"
    again = subprocess.run([*argv, "episodes=1", "videos=0", "+env_kwargs.max_episode_steps=40"], cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-2000:]
    assert not list(tmp_path.glob(".eval.partial-*")), "the stopped evaluation's partial outputs were not removed"
    assert json.loads((out / "metrics.json").read_text())["videos"] == [] and not list(out.glob("*.mp4"))


def test_reset_options_hold_for_every_episode_and_one_the_env_refuses_stops_before_anything_is_written(tmp_path):
    """``reset_options`` reach the vector env's automatic resets too (SB3's ``set_options`` reaches only the next
    ``reset()``): every episode of a curriculum env stays on the tile they name, where the curriculum alone moves it."""
    tile = {"terrain_type": "stairs_up", "terrain_level": 5}
    for options in (tile, {}):
        wrapper = partial(ResetOptions, options=options) if options else None
        venv = make_vec_env("OpenClaw/QuadrupedTerrain-v1", {"max_episode_steps": 5}, 1, wrapper=wrapper)
        venv.seed(3)
        venv.reset()
        tiles = [venv.env_method("task_context")[0].name]
        for _ in range(3):  # three episodes, each ended by the time limit and reset by the vector env
            for _ in range(5):
                venv.step(np.zeros((1, 12)))
            tiles.append(venv.env_method("task_context")[0].name)
        venv.close()
        if options:
            assert tiles == ["openclaw_go1/stairs_up/level5"] * 4, tiles
        else:
            assert len(set(tiles)) > 1 and "openclaw_go1/stairs_up/level5" not in tiles, tiles

    common = dict(policy="trot", env_id="OpenClaw/QuadrupedTerrain-v1", episodes=2, envs=1, videos=0, tile_episodes=1,
                  tile_levels=[0], env_kwargs={"max_episode_steps": 10})
    metrics = run(_config(**common, reset_options=tile, out_dir=str(tmp_path / "ok")))
    assert metrics["reset_options"] == tile and metrics["episodes"] == 2
    assert {r["level"] for r in metrics["tiles"]} == {0} and len({r["group"] for r in metrics["tiles"]}) == 6
    with pytest.raises(ConfigError) as err:
        run(_config(**common, reset_options={"terrain_typ": "stairs_up"}, out_dir=str(tmp_path / "typo")))
    assert "reset_options={'terrain_typ': 'stairs_up'}" in str(err.value) and "terrain_type" in str(err.value)
    assert not (tmp_path / "typo").exists()

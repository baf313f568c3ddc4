"""The one error type that training, evaluation and the CLIs share, and the few checks and messages they all use."""

import re


class ConfigError(ValueError):
    """A configuration value that cannot work; the message names the key and the fix."""


def env_error(err: BaseException) -> str:
    """The message of an env constructor's error without Gymnasium's tail (``... was raised from the environment
    creator for <id> with kwargs (<every argument>)``): one line that names the argument."""
    text = " ".join(str(err).split())
    return re.sub(r" was raised from the environment creator for \S+ with kwargs \(.*\)$", "", text)


MAX_SEED = 2**32 - 1  # numpy's (and so Stable-Baselines3's) seeds are 32-bit


def check_seed(key: str, seed: int) -> None:
    """:class:`ConfigError` unless ``seed`` is one numpy, torch and Stable-Baselines3 accept, [0, 2**32 - 1]."""
    if not 0 <= seed <= MAX_SEED:
        raise ConfigError(f"{key}={seed} is invalid: a seed must be in [0, 2**32 - 1 = {MAX_SEED}]; use e.g. {key}=0")

"""The one error type that training, evaluation and the CLIs share."""


class ConfigError(ValueError):
    """A configuration value that cannot work; the message names the key and the fix."""

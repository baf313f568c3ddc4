"""Import ``envs`` first: it picks a headless GL backend before anything imports mujoco."""

import envs  # noqa: F401

"""The training config's schema, read alike by training, saved run directories and evaluation.

* :mod:`agents.config.schema`: the dataclasses behind the Hydra groups in ``configs/`` (``env``, ``agent``,
  ``distill``, ``train``) and their registration;
* :mod:`agents.config.teacher_kinds`: what each ``distill.name`` teacher needs, and the proposer and verifier
  choices;
* :mod:`agents.config.env_defaults`: ``${env_default:<argument>}``, an env argument's default read from the env;
* :mod:`agents.config.tree`: the one walk over a config's values (``config_leaves``).

Imports nothing of :mod:`agents.training` or :mod:`agents.teachers` (and this file imports nothing), so
reading a run directory's ``config.yaml`` does not load the training stack. The checks a type cannot
express live with training: :mod:`agents.training.checks`.
"""

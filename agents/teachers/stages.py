"""Teachers in sequence (``distill=sequence``): each stage's teacher config, from ``distill.stages``.

A stage is a :class:`~agents.config.schema.StageConfig` in ``distill.stages`` (typed: Hydra refuses a value of the
wrong type or an unknown key as it composes the config): ``name`` (the teacher: one of :data:`STAGE_TEACHERS`),
``steps`` (env steps it teaches; the last stage may leave it out: to the end of the run), optionally ``label`` (its
name in the logs, ``distill/<label>/<statistic>``; default its teacher's name) and any of :data:`STAGE_KEYS`, which
override the ``distill`` section's values for that stage (its alpha schedule: ``alpha``, ``schedule``,
``final_alpha``, ``decay_rate``, ``schedule_steps`` counted from the stage's start; its teacher's settings); a key it
leaves out or sets to null is the section's. Every other key of the ``distill`` section (``direction``,
``controller_params`` ...) is the whole sequence's.
:func:`teaching_stages` gives every distillation its stages (any other ``distill.name``: one stage, the section).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from omegaconf import DictConfig, OmegaConf

from agents.config.schema import TeacherSettings
from agents.config.teacher_kinds import STAGE_TEACHERS, TEACHERS

STAGE_KEYS = tuple(f.name for f in fields(TeacherSettings))


@dataclass(frozen=True)
class Stage:
    """One teacher of a run: ``label`` (its name in the logs), ``steps`` (env steps it teaches; None: to the end of
    the run) and ``distill`` (the ``distill`` section as that teacher alone would have it)."""

    label: str
    steps: int | None
    distill: DictConfig


def teaching_stages(distill: DictConfig) -> list[Stage]:
    """The teachers of ``distill`` in order: for ``distill=sequence`` its stages, else one :class:`Stage` (labelled
    ``teacher``, to the end of the run) of the section itself. ``ValueError`` naming the stage, the key and the fix."""
    if distill.name != "sequence":
        return [Stage("teacher", None, distill)]
    stages = distill.get("stages") or []
    if not stages:
        raise ValueError(f"distill=sequence needs distill.stages: a list of {{name: {'|'.join(STAGE_TEACHERS)}, steps: N, ...}}")
    shared = OmegaConf.masked_copy(distill, [key for key in distill if key != "stages"])
    result = []
    for i, stage in enumerate(stages):
        where = f"distill.stages[{i}]"
        if not isinstance(stage, DictConfig) or stage.get("name") not in STAGE_TEACHERS:
            raise ValueError(f"{where}: name={stage.get('name') if isinstance(stage, DictConfig) else stage!r} is not a "
                             f"teacher a sequence takes; use one of: {', '.join(STAGE_TEACHERS)}")
        unknown = sorted(set(stage) - {"name", "label", "steps", *STAGE_KEYS})
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}; a stage takes name, label, steps and: {', '.join(STAGE_KEYS)}")
        steps = stage.get("steps")
        if steps is None and i < len(stages) - 1 or steps is not None and steps < 1:
            raise ValueError(f"{where}: steps={steps} is invalid: the env steps it teaches, a whole number >= 1 (only the "
                             "last stage may leave it out: to the end of the run)")
        own = OmegaConf.masked_copy(stage, [k for k in stage if k not in ("label", "steps") and stage[k] is not None])
        result.append(Stage(str(stage.get("label") or stage.name), steps, OmegaConf.merge(shared, own)))
    labels = [stage.label for stage in result]
    if len(set(labels)) != len(labels):
        raise ValueError(f"distill.stages: the stages' labels {labels} repeat; give each a label of its own (label: ...)")
    if sum(TEACHERS[stage.distill.name].controller for stage in result) > 1:
        raise ValueError("distill.stages: one controller teacher (scripted) per sequence: it acts beside the student "
                         "while the samples are collected")
    return result


def controller_stage(distill: DictConfig) -> Stage | None:
    """The stage whose teacher is a controller acting beside the student (``distill=scripted|adaptive``, or a
    sequence's ``scripted`` stage), or None."""
    if distill.name != "sequence":
        return Stage("teacher", None, distill) if TEACHERS[distill.name].controller else None
    return next((stage for stage in teaching_stages(distill) if TEACHERS[stage.distill.name].controller), None)


def masked_stages(distill: DictConfig) -> list[Stage]:
    """The stages whose teacher teaches only in some task contexts (``teach_contexts``: their samples' weights are
    recorded while they are collected, :class:`~agents.teachers.context_mask.ContextMask`; one at most may run)."""
    return [stage for stage in teaching_stages(distill) if stage.distill.get("teach_contexts") is not None]


def stage_spans(stages: list[Stage], total_timesteps: int) -> list[tuple[int, int]]:
    """Each stage's span of env steps ``(start, end)`` in a run of ``total_timesteps``: one after another from 0, a
    stage without steps to the end, none past it. ``ValueError`` when a stage would start at or past the end."""
    spans, start = [], 0
    for index, stage in enumerate(stages):
        if start >= total_timesteps:
            shorten = " or ".join(f"distill.stages.{k}.steps=<N>" for k in range(index))  # each has steps: not last
            raise ValueError(f"distill.stages: stage {stage.label!r} starts at env step {start}, at or past the run's end "
                             f"(train.total_timesteps={total_timesteps}); shorten the stages before it ({shorten}) or "
                             "lengthen the run")
        end = total_timesteps if stage.steps is None else min(start + stage.steps, total_timesteps)
        spans.append((start, end))
        start = end if stage.steps is None else start + stage.steps
    return spans

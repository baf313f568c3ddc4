"""Teachers for online distillation: how each is built (which teacher needs what:
:data:`agents.config.teacher_kinds.TEACHERS`).

* model teachers (``ema``, ``checkpoint``): a policy network that gives a target for any observation;
* controller teachers (``scripted``, ``adaptive``): a scripted controller that acts beside the student on
  the raw observations; the student's buffer stores its actions with every sample
  (:mod:`agents.teachers.controller`); ``adaptive`` has a proposer adapt the controller's parameters per task
  context (:mod:`agents.teachers.adaptive`, the only module that opens :mod:`coach.llm` and ``openai``);
  ``distill.proposer`` says whether an LLM is involved.

:mod:`agents.teachers.builders` builds every teacher and the distillation.
"""

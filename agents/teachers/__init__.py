"""Teachers for online distillation: how each is built (which teacher needs what:
:data:`agents.config.teacher_kinds.TEACHERS`).

* model teachers (``ema``, ``checkpoint``): a policy network that gives a target for any observation;
  :mod:`agents.teachers.distillation` builds them with the distillation;
* controller teachers (``scripted``, ``llm_hint``): a scripted controller that acts beside the student on
  the raw observations; the student's buffer stores its actions with every sample
  (:mod:`agents.teachers.controller`); ``llm_hint`` sets the controller's parameters from LLM hints
  (:mod:`agents.teachers.hinted`, the only module that opens :mod:`distill.llm` and ``openai``).
"""

"""Online policy distillation (OPD): teachers, KL losses and alpha schedules."""

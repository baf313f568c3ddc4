"""Teachers for online distillation: which teacher needs what, and how each is built."""

"""Training: the config schema, the run loop, its callbacks and the end-of-run report (``train.py``)."""

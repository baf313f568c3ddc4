"""Training: the config checks, the run loop, its callbacks and the end-of-run report (``train.py``)."""

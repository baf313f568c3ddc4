"""Scripted controllers that solve the OpenClaw tasks without learning.

They read only observations (plus their own clock), so they run as "policies" anywhere a learned
policy runs, and their parameters are what the LLM-hint teacher later proposes.
"""

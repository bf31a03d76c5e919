"""Scoring files of rows with any engine (in-process, a process pool, Ray): the room between ``integrations`` and ``cli``."""

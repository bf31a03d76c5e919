"""``python -m trace_tasks.cli``: the same as the ``trace-tasks`` console script."""

from trace_tasks.cli import main

if __name__ == "__main__":  # not when a spawned worker process imports this module
    raise SystemExit(main())

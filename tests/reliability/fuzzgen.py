"""Hypothesis strategies for task.json, re-exported: they live in
:mod:`endstate_author.testing.fuzzgen`, shared with ``bench/fuzz.py``."""

from endstate_author.testing.fuzzgen import (
    MUTATIONS,
    documents,
    from_schema,
    mutate,
    schema,
    task_json_bytes,
)

__all__ = ["MUTATIONS", "documents", "from_schema", "mutate", "schema", "task_json_bytes"]

"""Hypothesis strategies for task.json, re-exported: they live in
:mod:`tests.support.fuzzgen`, shared with ``bench/fuzz.py``."""

from tests.support.fuzzgen import (
    MUTATIONS,
    documents,
    from_schema,
    mutate,
    schema,
    task_json_bytes,
)

__all__ = ["MUTATIONS", "documents", "from_schema", "mutate", "schema", "task_json_bytes"]

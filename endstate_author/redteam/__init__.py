"""redteam: a model told to pass a task's graders without doing the work (ES913)."""

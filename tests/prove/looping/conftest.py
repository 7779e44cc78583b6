"""The tasks here are prove's input, not this suite's tests: their test files import the
task's own package, which only their task's tree provides."""

collect_ignore = ["count-business-days"]

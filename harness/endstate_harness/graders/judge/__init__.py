"""The judge: a test grader that never shares a process with the code it judges."""

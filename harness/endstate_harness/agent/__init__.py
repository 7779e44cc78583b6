"""The agent: messages, providers, tools, policy, context budget, sessions and the loop."""

"""The end-to-end check: questions through the agent, metrics without a judge model, a report and a gate."""

"""The end-to-end check: questions through the agent, metrics without a judge model, a report and a gate.

`run(settings, options, openers)` is the one entry point (`smoldocs eval` calls it). The modules, one job each:
`main` the run end to end, `runner` the question set and each question run (with the model, or the probe without
it), `records` what is kept of one question, `metrics` the metrics and the gate, `report` the report's forms."""

from agent.eval.main import Openers, Options, run

__all__ = ["Openers", "Options", "run"]

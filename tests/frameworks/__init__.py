"""The opt-in framework layer: inspect-ai and verifiers themselves calling the trace adapters (tests/frameworks/run.sh)."""

"""Kubernetes-style orchestration, the pure half: objects, the scheduling
framework and its plugins, the scheduling queue, preemption, and the API
store's replicated state machine (see NOTES.md)."""

"""Clustered web servers, the pure half (in progress: servers, balancer
policies, workload, metrics; see NOTES.md)."""

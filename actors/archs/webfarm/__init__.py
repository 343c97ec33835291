"""The web farm, live: load balancers (active/standby on the coordinator lease) and httpds."""

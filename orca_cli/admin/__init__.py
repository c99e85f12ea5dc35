"""The operator side (SPEC §1.1, §1.1a): service functions over a `Store`, and the admin API
that serves them under `/orca/v1/`. The CLI calls the API of a running sidecar, or the service
functions directly on a Redis store when no sidecar runs."""

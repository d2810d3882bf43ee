"""The test kit: what the tests share, one module per job.

- `project`: a workflow, its agents and other files written into a folder (`write_project`).
- `wire_server`: the scripted model server, both wire formats (`WireServer`, `Script`, `Reply`).
- `env`: the environment a command gets (no real keys) and the one pointing a wire at the server.
- `cli`: `flowrun ARGS` as a process (`run_cli`, `popen_cli`), through `fork_server` when it can.
- `runs`: reading a run folder back (`events`, `meta`, `check_log`).
- `procs`: waiting for a state (`wait_for`) and finding processes.
- `served`: a `flowrun serve` process and the project it serves.
- `providers`: a provider object on a model's manifest defaults, for the provider tests.
- `paths`: where the repository and the tests are.
"""

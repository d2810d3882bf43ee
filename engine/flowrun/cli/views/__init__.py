"""What the CLI shows of runs: live progress, a run's tree, its conversations, the runs table."""

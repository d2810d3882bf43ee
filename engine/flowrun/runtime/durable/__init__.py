"""What lets a run survive a crash: the event log, the ledger, the run folder and its lock, the run log."""

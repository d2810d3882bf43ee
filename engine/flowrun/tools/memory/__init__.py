"""Memory across runs, as files: a memory's folder (confined paths, whole-file atomic writes, caps,
serialised writers), the memory tool's commands, its search index and its git history."""

"""Cross-reference checks that `flowrun validate` runs over a loaded project, and the cached result."""

"""The installed flowrun version (read by the build and by `flowrun --version`)."""

__version__ = "0.1.0"

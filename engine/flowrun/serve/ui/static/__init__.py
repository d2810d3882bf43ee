"""The pages' assets, served as they are under /ui/static/: ES modules, the stylesheet (no build step)."""

from flowrun.cli import entry

entry()

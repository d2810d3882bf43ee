from flowrun.cli import main

main()

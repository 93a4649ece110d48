from vglobal.cli.main import main

main()

from oper8d.cli.main import main

main()

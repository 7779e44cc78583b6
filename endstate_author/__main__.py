from endstate_author.cli import main

main()

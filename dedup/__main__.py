from dedup.cli import main

main(prog_name="dedup")

from gtop.cli import run

run()

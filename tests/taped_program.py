"""An agent program for tests, run by ``evaltape record --command``: a taped tool reads the
file the case's input names; the model's answer and the file's text are printed.

Usage: ``python taped_program.py INPUT_FILE``.
"""
import sys

import evaltape

from model_request import ask_model


@evaltape.tape_tool
def read_file(path: str) -> str:
    """The file's text."""
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def main() -> None:
    path = open(sys.argv[1], encoding="utf-8").read().strip()
    text = read_file(path)
    answer = ask_model(f"Summarise: {text}")
    print(f"{answer} {text.strip()}")


if __name__ == "__main__":
    main()

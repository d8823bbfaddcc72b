"""The package README's example runs, and every ``expression  # result`` line of it
gives the result it shows."""

import pathlib
import re

import numpy as np

import lpmkit

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_gives_what_it_shows():
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "no python block in python/README.md"
    env = {"np": np, "lpmkit": lpmkit}
    checked = 0
    for line in blocks[0].splitlines():
        code, _, shown = line.partition("#")
        code = code.strip()
        if not code or code.startswith("import "):
            continue
        if "=" in code.split("(")[0]:
            exec(code, env)
            continue
        got = eval(code, env)
        shown = shown.strip().split(":")[0]
        assert repr(got).replace(" ", "") == shown.replace(" ", ""), (code, got, shown)
        checked += 1
    assert checked >= 3

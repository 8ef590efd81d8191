"""The commands users type, each run as `python -m photo_datasets COMMAND`
(`photo_datasets/__main__.py`), and the example models they train.

`demo` (README command 1), `train` (an example model), `show` (a grid of
pictures), `report` (a config's report page again), `verify` (a copy against
its fingerprint), `doctor` (what limits training); `models`: the example
Keras models of `train` and `doctor`. They sit on top of both sides: the
build (`building/`, `catalog/`) and the read side (`reading/`).
"""

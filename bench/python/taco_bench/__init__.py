"""taco_bench: libtaco's benchmark and analysis harness, a package of its own so that the
library's wheel ships only `taco`.

    python -m taco_bench codec [...]     codec speed vs memcpy and accuracy (taco_bench.codec)
    python -m taco_bench coll [...]      collectives vs plain NCCL and a DIY FP8 baseline (taco_bench.coll)
    python -m taco_bench accuracy [...]  codec error on real tensor-parallel partial sums (taco_bench.accuracy)
    python -m taco_bench train [...]     tensor-parallel training benchmark of the codecs (taco_bench.train)

`python -m taco bench codec|coll`, `python -m taco accuracy` and `python -m taco train` run
the same commands. Install from the repository root, after the library:

    pip install .                 # libtaco: the `taco` package
    pip install ./bench/python    # this harness
"""

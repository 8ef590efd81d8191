"""TFDS builders for the TensorFlow flower photos and the AIHub Korean food corpus."""

import setuptools

_DATA = ["README.md", "CITATIONS.bib", "TAGS.txt", "*.tsv", "dummy_data/**/*", "sample/**/*"]

setuptools.setup(
    name="photo-datasets-tfds",
    version="1.0.0",
    description=__doc__,
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=setuptools.find_packages(
        include=["photo_datasets*", "flowers_dataset", "korean_food", "checksums"]),
    package_data={
        "checksums": ["*.tsv"],
        "flowers_dataset": _DATA,
        "korean_food": _DATA,
    },
    install_requires=[
        "tensorflow>=2.16",
        # Pinned: the records are written through private hooks read in this version
        # (photo_datasets/building/writing.py; tests/test_writing.py checks their shape).
        "tensorflow-datasets==4.9.10",
        "keras>=3",
        "pillow>=10",
        # libjpeg-turbo with its warnings as errors: PIL keeps JPEGs with damaged data
        # (benchmarks/damage_detection.py).
        "simplejpeg>=1.8",
        "numpy>=2,<2.5",  # 2 for np.bitwise_count (near-copy hashes).
        # ORB keypoints and a RANSAC fit: series that colour alone cannot decide (docs/splits.md).
        "opencv-python-headless>=4.8",
        # The keypoints' nearest descriptors, exact, in compiled code (docs/splits.md#cost).
        "faiss-cpu>=1.9",
        # TFRecord shards written by worker processes that never import TensorFlow.
        "google-crc32c>=1.5",
        # tensorflow-datasets 4.9.10 needs these but does not declare them:
        "importlib_resources",  # every builder fails without it
        "apache-beam>=2.60",  # the `tfds` CLI does not start without it
        "mlcroissant",  # idem; also writes each build's croissant.json
        "array_record>=0.8",  # random access: the ArrayRecord copy read by tfds.data_source
        # tfds.show_examples, tfds.as_dataframe, the `show` command and the training curves.
        "matplotlib>=3.8",
        "pandas>=2",
        # What apache-beam 2.77 is known to work with.
        "protobuf<7",
        "pyarrow<26",
    ],
    # The dataset packages of this distribution, each with its bundled sample in `sample/`
    # (`python -m photo_datasets demo` builds them); other distributions may add theirs.
    entry_points={"photo_datasets.datasets": ["flowers_dataset = flowers_dataset",
                                              "korean_food = korean_food"],
                  # `photo_datasets COMMAND`, as `python -m photo_datasets COMMAND`.
                  "console_scripts": ["photo_datasets = photo_datasets.__main__:main"]},
    extras_require={
        # README command 2: lint, type check, tests. Checkers pinned: their rules change between
        # versions.
        "test": ["pytest>=8,<10", "dill", "ruff==0.17.6", "mypy==2.4.1", "import-linter==2.17",
                 "hypothesis>=6.100"],
        # Keras 3 backends, CPU builds. PyTorch's CPU build is the "+cpu" wheel from PyTorch's index
        # (--extra-index-url https://download.pytorch.org/whl/cpu); plain `torch` pulls in CUDA.
        "jax": ["jax[cpu]>=0.4.30"],
        "torch": ["torch==2.13.0+cpu"],
        # The Grain example over tfds.data_source (photo_datasets.reading.random_access).
        "grain": ["grain>=0.2.18,<0.3"],
    },
)

"""Fabricated photos, zips and builds for the tests and the data scripts.

As `tfds.testing` is for TFDS: the tests, `scripts/make_dummy_data.py` and
`scripts/make_korean_food_data.py` draw every image they need here, from fixed
seeds, so their corpora are reproducible byte for byte and hold no real photo
(AIHub's terms forbid shipping one). One module per kind of thing made, every
name re-exported here:

* `images`: photo-like images the builders meet in the real corpora, the
  corpus's formats and damaged copies of them, flat-colour images a test can
  follow pixel by pixel through a conversion.
* `trees`: zips and folder trees with names in every encoding and nesting, and
  the junk archivers leave beside photos.
* `pieces`: a file in pieces named by offset, a tar of them, a join in name
  order, a sparse ZIP64 archive past 4 GiB.
* `duplicates`: the near copies of a photo the near-duplicate rule must group.
* `builds`: photos drawn into a wanted split, a whole `tfds build` in-process,
  its examples read back, and the prerequisites a test may lack (`missing`).
* `loopback`: a tf.data service on loopback (imported on its own).
"""

from __future__ import annotations

from photo_datasets.testing.builds import (
    REQUIRE_ENV as REQUIRE_ENV,
)
from photo_datasets.testing.builds import (
    build as build,
)
from photo_datasets.testing.builds import (
    missing as missing,
)
from photo_datasets.testing.builds import (
    photos_in_splits as photos_in_splits,
)
from photo_datasets.testing.builds import (
    read_examples as read_examples,
)
from photo_datasets.testing.builds import (
    split_counts as split_counts,
)
from photo_datasets.testing.builds import (
    split_of_bytes as split_of_bytes,
)
from photo_datasets.testing.duplicates import (
    near_copies as near_copies,
)
from photo_datasets.testing.images import (
    BLUE as BLUE,
)
from photo_datasets.testing.images import (
    CORPUS_FORMATS as CORPUS_FORMATS,
)
from photo_datasets.testing.images import (
    GREEN as GREEN,
)
from photo_datasets.testing.images import (
    PADDING_PLACES as PADDING_PLACES,
)
from photo_datasets.testing.images import (
    PADDINGS as PADDINGS,
)
from photo_datasets.testing.images import (
    RED as RED,
)
from photo_datasets.testing.images import (
    WHITE as WHITE,
)
from photo_datasets.testing.images import (
    Colour as Colour,
)
from photo_datasets.testing.images import (
    PathLike as PathLike,
)
from photo_datasets.testing.images import (
    Size as Size,
)
from photo_datasets.testing.images import (
    animated_gif as animated_gif,
)
from photo_datasets.testing.images import (
    broken_files as broken_files,
)
from photo_datasets.testing.images import (
    deep_png as deep_png,
)
from photo_datasets.testing.images import (
    encode as encode,
)
from photo_datasets.testing.images import (
    encoded as encoded,
)
from photo_datasets.testing.images import (
    exif_rotated_jpeg as exif_rotated_jpeg,
)
from photo_datasets.testing.images import (
    half_transparent_png as half_transparent_png,
)
from photo_datasets.testing.images import (
    halves as halves,
)
from photo_datasets.testing.images import (
    jpeg as jpeg,
)
from photo_datasets.testing.images import (
    jpeg_forms as jpeg_forms,
)
from photo_datasets.testing.images import (
    marked as marked,
)
from photo_datasets.testing.images import (
    odd_images as odd_images,
)
from photo_datasets.testing.images import (
    padded as padded,
)
from photo_datasets.testing.images import (
    photo as photo,
)
from photo_datasets.testing.images import (
    rgba_png as rgba_png,
)
from photo_datasets.testing.images import (
    two_frame_gif as two_frame_gif,
)
from photo_datasets.testing.images import (
    unusual_photos as unusual_photos,
)
from photo_datasets.testing.images import (
    with_garbage as with_garbage,
)
from photo_datasets.testing.pieces import (
    join_in_name_order as join_in_name_order,
)
from photo_datasets.testing.pieces import (
    sparse_zip64 as sparse_zip64,
)
from photo_datasets.testing.pieces import (
    write_pieces as write_pieces,
)
from photo_datasets.testing.pieces import (
    write_tar as write_tar,
)
from photo_datasets.testing.trees import (
    DATE_TIME as DATE_TIME,
)
from photo_datasets.testing.trees import (
    GROUP_ENCODINGS as GROUP_ENCODINGS,
)
from photo_datasets.testing.trees import (
    JUNK as JUNK,
)
from photo_datasets.testing.trees import (
    layouts as layouts,
)
from photo_datasets.testing.trees import (
    nfd as nfd,
)
from photo_datasets.testing.trees import (
    properties as properties,
)
from photo_datasets.testing.trees import (
    write_layouts as write_layouts,
)
from photo_datasets.testing.trees import (
    write_tree as write_tree,
)
from photo_datasets.testing.trees import (
    zip_bytes as zip_bytes,
)

"""The read side: a built config to `model.fit`, and what that shares.

`pipeline` (`training_dataset`, `evaluation_dataset`), `data_service` (the
same input on tf.data service workers), `random_access` (an ArrayRecord copy,
`tfds.data_source`, PyTorch and Grain loaders); the pipeline's parts beneath
them: training's `batches`, the image maps (`decoding`), a split's records
(`records`), the crops, flips and their seeds (`augmentation`); beneath those,
what they share: opening a built config (`built`), argument checks
(`arguments`), the cache policy (`cache`), the uint8 layer (`layers`).
"""

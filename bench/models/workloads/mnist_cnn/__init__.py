"""The mnist_cnn workload: its published facts and registration (``spec``) and its models (``models``)."""

"""The mnist_mlp workload: its published facts and registration (``spec``) and its models (``models``)."""

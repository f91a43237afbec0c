"""The mnist_cnn_tuning workload: its published facts and registration (``spec``) and its models (``models``)."""

"""The mnist_hierarchical_rnn workload: its published facts and registration (``spec``) and its models (``models``)."""

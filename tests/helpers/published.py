"""Published figures the workloads' declarations and builds are held to."""

#: Parameter counts: the Keras 2.0.8 examples' (model.summary() of examples/<name>.py@2.0.8; babi_rnn with qa2's
#: 35-word vocabulary plus padding, vocab_size 36) and our reconstruction of the tuning study's CNN.
PUBLISHED = {"mnist_mlp": 669_706, "mnist_cnn": 1_199_882, "mnist_hierarchical_rnn": 199_434,
             "cifar10_cnn": 1_250_858, "babi_rnn": 45_836, "mnist_cnn_tuning": 563_018}

"""The babi_rnn model, keras/examples/babi_rnn.py@2.0.8 (2017): LSTMs over a bAbI story and question (qa2), three
times: ``build_keras`` (Keras 2 or 3, any backend; softmax probabilities), ``build_torch`` (plain PyTorch; logits)
and ``build_flax`` (Flax NNX for the plain-JAX stack; logits, ``bench.models.workloads.flax_common``). Frameworks are
imported inside the builders."""

from __future__ import annotations

from typing import Any

from bench.models.workloads.common import lstm_2017
from bench.models.workloads.flax_common import dense, keras208_lstm, keras208_uniform, lstm_last_state

EMBED = 50


def build_keras(keras, meta):
    """Keras bAbI model: story (B, ``story_maxlen``) and question (B, ``query_maxlen``) int32 token ids -> embeddings
    (50), question LSTM repeated over the story, added, LSTM -> softmax over ``vocab_size``."""
    L = keras.layers
    story = keras.Input((meta["story_maxlen"],), dtype="int32")
    question = keras.Input((meta["query_maxlen"],), dtype="int32")
    s = L.Dropout(0.3)(L.Embedding(meta["vocab_size"], EMBED)(story))
    q = L.Dropout(0.3)(L.Embedding(meta["vocab_size"], EMBED)(question))
    q = L.RepeatVector(meta["story_maxlen"])(lstm_2017(keras, EMBED)(q))
    merged = L.Dropout(0.3)(lstm_2017(keras, EMBED)(L.add([s, q])))
    out = L.Dense(meta["vocab_size"], activation="softmax")(merged)
    return keras.Model([story, question], out)


def build_torch(meta):
    """The same bAbI model in PyTorch: (story, question) int64 token ids -> logits (B, ``vocab_size``)."""
    from torch import nn

    class BabiRNN(nn.Module):
        """Story and question embeddings, the question's last LSTM state added to every story step, an LSTM, a head."""

        def __init__(self):
            super().__init__()
            self.story_emb = nn.Embedding(meta["vocab_size"], EMBED)
            self.query_emb = nn.Embedding(meta["vocab_size"], EMBED)
            self.query_lstm = nn.LSTM(EMBED, EMBED, batch_first=True)
            self.story_lstm = nn.LSTM(EMBED, EMBED, batch_first=True)
            self.drop = nn.Dropout(0.3)
            self.head = nn.Linear(EMBED, meta["vocab_size"])

        def forward(self, story, question):
            s = self.drop(self.story_emb(story))
            _, (q, _) = self.query_lstm(self.drop(self.query_emb(question)))
            merged = s + q[-1].unsqueeze(1)  # RepeatVector + add
            _, (h, _) = self.story_lstm(merged)
            return self.head(self.drop(h[-1]))

    return BabiRNN()


def build_flax(meta: dict[str, Any], rngs: Any) -> Any:
    """Flax NNX bAbI model of examples/babi_rnn.py@2.0.8: story (B, ``story_maxlen``) and question
    (B, ``query_maxlen``) int token ids -> embeddings (``EMBED``: the script's 50, dropout 0.3), the
    question's LSTM(``EMBED``) state repeated over the story and added, LSTM(``EMBED``), dropout 0.3 ->
    logits (B, ``vocab_size``); 45,836 params with qa2's vocabulary."""
    from flax import nnx

    vocab = meta["vocab_size"]

    def embed() -> Any:
        return nnx.Embed(vocab, EMBED, embedding_init=keras208_uniform(), rngs=rngs)

    class BabiRNN(nnx.Module):
        """Story and question embeddings, the question's last LSTM state added to every story step, an LSTM, a head."""

        def __init__(self, rngs: nnx.Rngs):
            self.story_emb, self.query_emb = embed(), embed()
            self.story_drop, self.query_drop, self.merged_drop = (nnx.Dropout(0.3, rngs=rngs) for _ in range(3))
            self.query_lstm = keras208_lstm(EMBED, EMBED, rngs)
            self.story_lstm = keras208_lstm(EMBED, EMBED, rngs)
            self.head = dense(nnx, EMBED, vocab, rngs)

        def __call__(self, story, question):
            s = self.story_drop(self.story_emb(story))
            q = lstm_last_state(self.query_lstm, self.query_drop(self.query_emb(question)))
            merged = lstm_last_state(self.story_lstm, s + q[:, None, :])  # RepeatVector + add
            return self.head(self.merged_drop(merged))

    return BabiRNN(rngs)

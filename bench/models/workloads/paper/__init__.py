"""The Keras 3 benchmark suite (keras.io "Keras 3 benchmarks", Table 2; code keras-benchmarks v0.0.5):
SegmentAnything, StableDiffusion, BERT, Gemma 7B, Mistral 7B, each with random weights built from the
published architecture config (``docs/suites/paper.md``, "The models").

Each model is one small class with the same four methods, so that one harness times every model on the Keras and
PyTorch stacks: ``config(size)``, ``keras_job`` (keras-hub on Keras 3; keras-nlp / keras-cv 0.8.2 on Keras 2;
keras-cv for SD 1.4 as in the original), ``torch_job`` (transformers / diffusers / peft, idiomatic out-of-the-box
PyTorch) and ``torch_model`` (the Hugging Face model, also used on the meta device for parameter and FLOP counts).

Method kept from the source: random inputs of the published shapes, losses (sparse categorical
cross-entropy from logits for BERT and the LLMs, MSE for the SAM and SD encoders), AdamW for BERT and
the LLMs and Adam for the encoders (Keras' default hyper-parameters), ``jit_compile`` requested cell by cell
as the source requested it (``source.SOURCE_JIT``), bfloat16 and LoRA rank 4 for the LLMs, greedy
generation of BOS + 5-token prompts to ``max_length`` 50 (44 new tokens; tokenization outside the timed
call, which the record notes), and for SD predict the time of one denoising step (two UNet passes,
conditional and unconditional, plus the scheduler update). ``docs/suites/paper.md`` ("Method vs the sources")
lists every setting beside the source's.

The models live one kind per module, so that a model's code is in one place and a new kind is one new module:
``bert``, ``causal_lm`` (Gemma, Mistral), ``segment_anything``, ``stable_diffusion``; ``common`` holds what they
share, ``source`` what the source requested cell by cell (``jit_compile``), ``spec`` the suite's registration.
"""

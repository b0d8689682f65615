"""spade_trainer: the GRPO trainer of SPADE (docs/architecture.md, "Contracts", "Formulas").

Modules: ``loss`` (the formulas, ``grpo_loss``), ``logprobs`` (log-softmax + gather: reference, chunked,
and the Triton kernel in ``triton_logprobs``), ``batch`` (the batch file), ``model`` (policy models),
``config`` (the settings the Go side passes), ``distributed`` (ranks, FSDP), ``microbatch`` (packing and
padding), ``checkpoints`` (versions on disk), ``publish`` (weights to the generation server), ``train``
(the entry point, ``python -m spade_trainer.train``). Needs PyTorch (1.13 or 2.x) and NumPy; transformers,
peft and Triton where installed. ``config`` and ``publish`` need only the standard library.
"""

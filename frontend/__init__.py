"""Frontends: programs from other frameworks imported into affine IR (stage S1).

- :mod:`frontend.torch_import`: a PyTorch FX graph of ATen ops -> one ``func.func`` of loop nests
  (:func:`~frontend.torch_import.import_fx`), or the list of what it cannot import and why;
- :mod:`frontend.torch_backend`: the ``torch.compile`` backend ``"affine_ir"`` on top of it
  (registered through the ``torch_dynamo_backends`` entry point).

The frontend sits above ``runtime`` (the backend compiles what it imports); nothing below imports
it, and ``import affine_ir`` never imports torch.
"""

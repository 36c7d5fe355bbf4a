"""Frontends: programs from other frameworks imported into affine IR (stage S1).

- :mod:`frontend.torch_import`: a PyTorch FX graph of ATen ops -> one ``func.func`` of loop nests
  (:func:`~frontend.torch_import.import_fx`), or the list of what it cannot import and why;
- :mod:`frontend.torch_backend`: the ``torch.compile`` backend ``"affine_ir"`` on top of it
  (registered through the ``torch_dynamo_backends`` entry point);
- :mod:`frontend.torch_export`: ``torch.export`` programs compiled ahead of time
  (:func:`~frontend.torch_export.compile_exported`);
- :mod:`frontend.torch_views`, :mod:`frontend.torch_nn`, :mod:`frontend.torch_mixed`: the lowerings
  (views as index maps; layers; bool/integer ops and dtype conversions);
  :mod:`frontend.torch_decompose`: ATen ops taken as the ops they are made of;
  :mod:`frontend.graph_cache`: compiled graphs on disk.

The frontend sits above ``runtime`` (the backend compiles what it imports); nothing below imports
it, and ``import affine_ir`` never imports torch.
"""

"""The one span-tree builder: index a trace's spans (`index`) and compare trees (`normalize`).

The dashboard's reconstruction and the contract tests both read trees through `build_index`, so the
writer's tests and the reader cannot disagree about which span hangs below which.
"""

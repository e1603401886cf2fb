# SPDX-License-Identifier: Apache-2.0
"""The figures of `make bench`, one module per question (docs/performance.md explains each).
Each module's functions take the `Bench` (bench.py): its stacks, `record`, `interleaved` and
`memory`; bench.py's `Bench.run` calls them in the order that keeps the figures apart (cold
start last: it stops the daemons)."""

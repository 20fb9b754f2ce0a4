"""agentlog benchmarks: ratios to a baseline measured side by side in one run.

Not tests: nothing here asserts a time. Each part prints how agentlog
compares with the cheapest thing that does the same job (a raw
``write``+``fdatasync``, a parse-everything reader), measured interleaved
in the same run so a noisy shared machine moves both sides together.

    python -m bench                 every part, full size
    python -m bench --quick         every part, scaled down
    python -m bench append listing  some parts

See docs/performance.md for what each part measures and the figures.
"""

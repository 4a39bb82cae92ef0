"""Shared test helpers: real git repositories in temp folders (``gitrepo``),
histories with capsule records (``history``) and the catalogue of hostile
records every record surface must agree on (``hostile``). The benchmarks in
``bench/`` import them too."""

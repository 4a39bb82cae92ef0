"""The command line's outer layer: one module per ``capsule`` subcommand
(``register`` adds its options, ``run`` parses nothing more, calls the library
and prints), the argparse helpers they share (``_args``), and the one guarded
runner of the CLI and the hooks (``_boundary``, ``_hooks``).

The only layer that prints or picks exit codes, always through
``governance.output``. May import every other part of ``governance``; nothing
imports it back but ``governance.cli`` and the hook entry points.
"""

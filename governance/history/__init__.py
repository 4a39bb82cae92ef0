"""Capsules over time: where records live and the record rules (``records``,
``record_rules``), replay at a declared commit (``replay``), and audit as a
library call (``audit``, over ``ranges``, ``walk``, ``pool`` and ``waivers``);
the records hook's failure lines (``record_check``); record signatures
(``signatures``, ``signers``, ``signed_audit``).

May import: ``governance.core``, ``governance.errors`` and, for the plain
text helpers, ``governance.output``; ``record_check`` alone also imports
``governance.guards.check`` (the failure line it words a verdict as).
Nothing here prints or exits.
"""

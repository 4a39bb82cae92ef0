"""Capsules over time: where records live and the record rules (``records``,
``record_rules``), replay at a declared commit (``replay``), and audit as a
library call (``audit``, over ``ranges``, ``walk``, ``pool``, ``workers``,
``cpus`` and ``waivers``);
record signatures (``signatures``, ``signers``, ``signed_audit``). The records
hook words the rules' verdict as failure lines in ``guards.record_check``.

May import: ``governance.core``, ``governance.errors`` and
``governance.output`` (atomic writes). Nothing here prints or exits.
"""

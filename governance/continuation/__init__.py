"""The continuation proof: two fresh agents, one capsule, one decision.

``prompt`` holds the fixed instruction text, ``verdict`` the seven checks over
two results, and ``runner`` the way ``capsule continuation run`` starts agents
and records what it saw.
"""

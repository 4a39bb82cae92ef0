from __future__ import annotations

from governance.cli import main

raise SystemExit(main())

"""``python -m envkit``: the command line."""

from envkit._entry import main

raise SystemExit(main())

from envkit._entry import main

raise SystemExit(main())

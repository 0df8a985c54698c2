from gtop.cli import main

raise SystemExit(main())
